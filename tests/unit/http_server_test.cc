// sheetlog's HTTP/1.1 server (src/api/http/http_server.h) in process, with a small
// handler and real sockets over loopback: long-lived streams do not hold a worker, a
// slow stream consumer is told its buffer is full and memory stays bounded, a closed
// client ends its stream (OnClose), and Stop ends everything. No sleeps: every wait is
// on an event (a condition variable, or a blocking read).
#include "src/api/http/http_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace sheetlog::api::http {
namespace {

class TestHandler : public HttpHandler {
 public:
  Admission Admit(Request& request) override {
    Admission admission;
    admission.max_body_bytes = 1 << 20;
    if (request.path == "/stream") {
      admission.route = 1;
    } else if (request.path == "/echo") {
      admission.route = 2;
    } else if (request.path == "/numbers") {
      admission.route = 3;
    } else if (request.path == "/sized") {
      admission.route = 4;
    } else {
      admission.refusal = std::make_unique<Response>(ErrorResponse(404, "no route"));
    }
    return admission;
  }

  void Handle(Request& request, Response& response, int route,
              const ContentReader*) override {
    if (route == 1) {
      std::shared_ptr<StreamWriter> writer =
          response.StartStream("text/event-stream", /*buffer_limit=*/4096);
      writer->Write("data: hello\n\n");
      std::lock_guard lock(mu_);
      writer_ = writer;
      writer->OnClose([this] {
        std::lock_guard lock(mu_);
        stream_closed_ = true;
        changed_.notify_all();
      });
      changed_.notify_all();
    } else if (route == 2) {
      response.set_content("echo:" + request.body, "text/plain");
    } else if (route == 4) {
      response.set_content_provider(5, "text/plain", [](size_t, size_t, DataSink& sink) {
        return sink.write("hello", 5);
      });
    } else {
      // A chunked provider: the numbers 0..999, one line each.
      auto next = std::make_shared<int>(0);
      response.set_chunked_content_provider("text/plain", [next](size_t, DataSink& sink) {
        if (*next == 1000) {
          sink.done();
          return true;
        }
        std::string line = std::to_string((*next)++) + "\n";
        return sink.write(line.data(), line.size());
      });
    }
  }

  Response ErrorResponse(int status, const std::string& message) override {
    Response response;
    response.status = status;
    response.set_content(message, "text/plain");
    return response;
  }
  Response TooLargeResponse(int64_t limit) override {
    return ErrorResponse(413, "limit " + std::to_string(limit));
  }

  std::shared_ptr<StreamWriter> WaitForWriter() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return writer_ != nullptr; });
    return writer_;
  }
  void WaitForStreamClosed() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return stream_closed_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::shared_ptr<StreamWriter> writer_;
  bool stream_closed_ = false;
};

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  timeval timeout{30, 0};  // bounds every read: a hang fails instead of sticking
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

void SendAll(int fd, const std::string& data) {
  ASSERT_EQ(send(fd, data.data(), data.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(data.size()));
}

// Reads until `needle` has arrived (or EOF / the bounded read times out).
std::string ReadUntil(int fd, const std::string& needle) {
  std::string all;
  char buf[4096];
  while (all.find(needle) == std::string::npos) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    all.append(buf, static_cast<size_t>(n));
  }
  return all;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.port = 0;
    options.worker_threads = 1;  // a stream must not hold the only worker
    server_ = std::make_unique<HttpServer>(options, &handler_);
    ASSERT_TRUE(server_->Bind().ok());
    serving_ = std::thread([this] { server_->Serve(); });
  }
  void TearDown() override {
    server_->Stop();
    serving_.join();
  }

  TestHandler handler_;
  std::unique_ptr<HttpServer> server_;
  std::thread serving_;
};

TEST_F(HttpServerTest, StreamsDoNotHoldWorkersAndSlowConsumersAreToldTheBufferIsFull) {
  int stream = Connect(server_->port());
  SendAll(stream, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string head = ReadUntil(stream, "data: hello\n\n");
  EXPECT_NE(head.find("HTTP/1.1 200 OK"), std::string::npos) << head;
  EXPECT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
  std::shared_ptr<StreamWriter> writer = handler_.WaitForWriter();

  // With the only worker's handler returned, ordinary requests are served.
  int other = Connect(server_->port());
  SendAll(other, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_NE(ReadUntil(other, "echo:hi").find("echo:hi"), std::string::npos);
  close(other);

  // Any thread writes; the client reads it.
  EXPECT_EQ(writer->Write("data: 2\n\n"), StreamWriter::WriteResult::kQueued);
  EXPECT_NE(ReadUntil(stream, "data: 2\n\n").find("data: 2"), std::string::npos);

  // The client stops reading: the writer is told once the buffers are full, never
  // blocked, and what it queued stays bounded.
  const std::string event(1024, 'e');
  StreamWriter::WriteResult result = StreamWriter::WriteResult::kQueued;
  int writes = 0;
  while (result == StreamWriter::WriteResult::kQueued && writes < 1000000) {
    result = writer->Write(event);
    ++writes;
  }
  EXPECT_EQ(result, StreamWriter::WriteResult::kFull) << writes << " writes";

  // The client leaves: the stream ends and says so.
  close(stream);
  handler_.WaitForStreamClosed();
  EXPECT_TRUE(writer->closed());
  EXPECT_EQ(writer->Write("late"), StreamWriter::WriteResult::kClosed);
}

TEST_F(HttpServerTest, CloseEndsTheStreamAfterItsLastBytes) {
  int stream = Connect(server_->port());
  SendAll(stream, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
  ReadUntil(stream, "data: hello\n\n");
  std::shared_ptr<StreamWriter> writer = handler_.WaitForWriter();
  writer->Close("event: bye\ndata: resume at 7\n\n");
  std::string rest = ReadUntil(stream, "0\r\n\r\n");
  EXPECT_NE(rest.find("resume at 7"), std::string::npos) << rest;
  char byte;
  EXPECT_EQ(recv(stream, &byte, 1, 0), 0);  // then the server closes
  close(stream);
  handler_.WaitForStreamClosed();
}

TEST_F(HttpServerTest, ChunkedProviderRunsToItsEnd) {
  int fd = Connect(server_->port());
  SendAll(fd, "GET /numbers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string all = ReadUntil(fd, "\r\n0\r\n\r\n");
  EXPECT_NE(all.find("999\n"), std::string::npos);
  EXPECT_NE(all.find("\r\n0\r\n\r\n"), std::string::npos);
  close(fd);
}

// A provider's body that finishes while the event loop looks at it is complete, not
// broken: the connection stays open for the next request (it was closed at random).
TEST_F(HttpServerTest, ProviderResponsesKeepTheConnectionAlive) {
  int fd = Connect(server_->port());
  for (int i = 0; i < 300; ++i) {
    SendAll(fd, "GET /sized HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string response = ReadUntil(fd, "\r\n\r\nhello");
    ASSERT_NE(response.find("\r\n\r\nhello"), std::string::npos)
        << "request " << i << ": " << response;
  }
  close(fd);
}

TEST(HttpServerBudgetTest, BodiesBeingBufferedAreBoundedAcrossConnections) {
  TestHandler handler;
  HttpServerOptions options;
  options.port = 0;
  options.max_buffered_body_bytes = 1000;
  HttpServer server(options, &handler);
  ASSERT_TRUE(server.Bind().ok());
  std::thread serving([&] { server.Serve(); });
  // 1,100 of a 2,000-byte body (within the route's 1 MiB) pass the server's 1,000.
  int greedy = Connect(server.port());
  SendAll(greedy, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n" +
                      std::string(1100, 'g'));
  std::string refused = ReadUntil(greedy, "retry");
  EXPECT_NE(refused.find("HTTP/1.1 503"), std::string::npos) << refused;
  close(greedy);
  // Its bytes were released: a body of 900 is served.
  int fair = Connect(server.port());
  SendAll(fair, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 900\r\n\r\n" +
                    std::string(900, 'f'));
  EXPECT_NE(ReadUntil(fair, "echo:fff").find("HTTP/1.1 200"), std::string::npos);
  close(fair);
  server.Stop();
  serving.join();
}

TEST(HttpServerStopTest, StopReleasesOpenStreams) {
  TestHandler handler;
  HttpServerOptions options;
  options.port = 0;
  options.shutdown_grace_ms = 100;
  HttpServer server(options, &handler);
  ASSERT_TRUE(server.Bind().ok());
  std::thread serving([&] { server.Serve(); });
  int stream = Connect(server.port());
  SendAll(stream, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
  ReadUntil(stream, "data: hello\n\n");
  std::shared_ptr<StreamWriter> writer = handler.WaitForWriter();
  server.Stop();
  serving.join();  // returns although the stream never ended by itself
  EXPECT_EQ(writer->Write("x"), StreamWriter::WriteResult::kClosed);
  handler.WaitForStreamClosed();
  close(stream);
}

}  // namespace
}  // namespace sheetlog::api::http
