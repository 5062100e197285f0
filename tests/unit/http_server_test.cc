// sheetlog's HTTP/1.1 server (src/api/http/http_server.h) in process, with a small
// handler and real sockets over loopback: long-lived streams do not hold a worker, a
// slow stream consumer is told its buffer is full and memory stays bounded, a closed
// client ends its stream (OnClose), and Stop ends everything. No sleeps: every wait is
// on an event (a condition variable, or a blocking read).
#include "src/api/http/http_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/support/counting_clock.h"

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
    } else if (request.path == "/later") {
      admission.route = 6;  // answered after the handler returns, by the test
    } else if (request.path == "/later-now") {
      admission.route = 7;  // answered before the handler returns
    } else if (request.path == "/later-never") {
      admission.route = 8;  // the sender is dropped unsent
    } else if (request.path == "/upload") {
      admission.route = 5;  // read by the handler, on its worker
      admission.streamed_body = true;
    } else {
      admission.refusal = std::make_unique<Response>(ErrorResponse(404, "no route"));
    }
    return admission;
  }

  void Handle(Request& request, Response& response, int route,
              const ContentReader* body) override {
    if (route == 6) {
      std::shared_ptr<ResponseSender> sender = response.Defer();
      std::lock_guard lock(mu_);
      senders_.push_back(sender);
      changed_.notify_all();
      return;
    }
    if (route == 7) {
      Response now;
      now.status = 201;
      now.set_content("answered early:" + request.body, "text/plain");
      response.Defer()->Send(std::move(now));
      return;
    }
    if (route == 8) {
      response.Defer();
      return;
    }
    if (route == 5) {
      // Says how much of the body arrived, and whether all of it did.
      size_t received = 0;
      bool complete = (*body)([&](const char*, size_t size) {
        received += size;
        return true;
      });
      response.set_content(
          (complete ? "uploaded " : "cut off after ") + std::to_string(received),
          "text/plain");
    } else if (route == 1) {
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
  // The sender of the n-th request to /later (0-based), once its handler has run.
  std::shared_ptr<ResponseSender> WaitForSender(size_t n) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return senders_.size() > n; });
    return senders_[n];
  }
  void WaitForStreamClosed() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return stream_closed_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::shared_ptr<StreamWriter> writer_;
  std::vector<std::shared_ptr<ResponseSender>> senders_;
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

Response TextResponse(int status, const std::string& text) {
  Response response;
  response.status = status;
  response.set_content(text, "text/plain");
  return response;
}

// A deferred response does not hold the worker: with one worker, two requests wait for
// their answers at once, the answers are sent from this thread in either order, each
// to its own connection, and the connections stay open.
TEST_F(HttpServerTest, DeferredResponsesAreSentLaterFromAnyThreadWithoutAWorker) {
  int first = Connect(server_->port());
  int second = Connect(server_->port());
  SendAll(first, "GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
  std::shared_ptr<ResponseSender> first_sender = handler_.WaitForSender(0);
  SendAll(second, "GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
  std::shared_ptr<ResponseSender> second_sender = handler_.WaitForSender(1);

  second_sender->Send(TextResponse(201, "second"));
  std::string answer = ReadUntil(second, "second");
  EXPECT_NE(answer.find("HTTP/1.1 201 Created"), std::string::npos) << answer;
  first_sender->Send(TextResponse(200, "first"));
  first_sender->Send(TextResponse(500, "ignored"));  // only the first Send counts
  EXPECT_NE(ReadUntil(first, "first").find("first"), std::string::npos);

  // Keep-alive: the next request on the same connection is served.
  SendAll(first, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
  std::string echo = ReadUntil(first, "echo:hi");
  EXPECT_NE(echo.find("echo:hi"), std::string::npos) << echo;
  EXPECT_EQ(echo.find("ignored"), std::string::npos) << echo;
  close(first);
  close(second);
}

TEST_F(HttpServerTest, DeferredResponseSentBeforeTheHandlerReturnsIsDelivered) {
  int fd = Connect(server_->port());
  SendAll(fd, "POST /later-now HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok");
  std::string answer = ReadUntil(fd, "answered early:ok");
  EXPECT_NE(answer.find("HTTP/1.1 201 Created"), std::string::npos) << answer;
  EXPECT_NE(answer.find("answered early:ok"), std::string::npos) << answer;
  close(fd);
}

TEST_F(HttpServerTest, DeferredResponseDroppedUnsentIsA500) {
  int fd = Connect(server_->port());
  SendAll(fd, "GET /later-never HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string answer = ReadUntil(fd, "no response\n");
  EXPECT_NE(answer.find("HTTP/1.1 500"), std::string::npos) << answer;
  close(fd);
}

// A response sent after the server stopped is dropped, and the client, whose
// connection the stop closed, sees the connection end.
TEST(HttpServerStopTest, DeferredResponseAfterStopIsDropped) {
  TestHandler handler;
  HttpServerOptions options;
  options.port = 0;
  options.shutdown_grace_ms = 0;
  auto server = std::make_unique<HttpServer>(options, &handler);
  ASSERT_TRUE(server->Bind().ok());
  std::thread serving([&] { server->Serve(); });
  int fd = Connect(server->port());
  SendAll(fd, "GET /later HTTP/1.1\r\nHost: x\r\n\r\n");
  std::shared_ptr<ResponseSender> sender = handler.WaitForSender(0);
  server->Stop();
  serving.join();
  server.reset();
  sender->Send(TextResponse(200, "too late"));
  char byte;
  EXPECT_LE(recv(fd, &byte, 1, 0), 0);
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

// The stall timeout alone restarts with every byte: a client sending one byte just
// inside it held its connection (and, for a streamed body, a worker) for ever. With
// the rate rule a body must be complete within body_timeout plus 1 s per
// body_min_rate bytes received. Here a byte every half timeout (2 bytes/s of clock,
// the rate asks 100) is cut off, buffered by the loop (408) or streamed to a handler
// (its read fails); a body that keeps to the rate is served however long it takes.
class HttpServerBodyRateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.port = 0;
    options.worker_threads = 2;
    options.body_timeout_ms = 1000;
    options.body_min_rate = 100;
    options.clock_ms = [this] { return clock_.Read(); };
    server_ = std::make_unique<HttpServer>(options, &handler_);
    ASSERT_TRUE(server_->Bind().ok());
    serving_ = std::thread([this] { server_->Serve(); });
  }
  void TearDown() override {
    server_->Stop();
    serving_.join();
  }

  // Sends `head`, then `piece` every 500 ms of clock (waiting for the server to see
  // each), until the server answers or `steps` pieces went; returns the answer ("" if
  // none came).
  std::string Trickle(const std::string& head, const std::string& piece, int steps) {
    int fd = Connect(server_->port());
    SendAll(fd, head);
    std::string answer;
    for (int step = 0; step < steps && answer.empty(); ++step) {
      // The server may have answered and closed since the last look: ignore errors.
      ssize_t sent = send(fd, piece.data(), piece.size(), MSG_NOSIGNAL);
      (void)sent;
      clock_.WaitForReads(3);  // the loop (or the worker) has taken the piece
      clock_.Advance(500);
      clock_.WaitForReads(3);  // and looked at the timeouts at the new time
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 0) > 0) answer = ReadUntil(fd, "\r\n\r\n");
    }
    if (!answer.empty() && answer.find("Content-Length: ") != std::string::npos) {
      size_t length = std::stoul(answer.substr(answer.find("Content-Length: ") + 16));
      size_t body_at = answer.find("\r\n\r\n") + 4;
      while (answer.size() < body_at + length) {
        char buf[4096];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        answer.append(buf, static_cast<size_t>(n));
      }
    }
    close(fd);
    return answer;
  }

  testing::CountingManualClock clock_;
  TestHandler handler_;
  std::unique_ptr<HttpServer> server_;
  std::thread serving_;
};

TEST_F(HttpServerBodyRateTest, BufferedBodyTrickledJustInsideTheStallTimeoutIs408) {
  // 1,000 bytes at this pace would take 500 s of clock; 40 steps are 20 s.
  std::string answer =
      Trickle("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", "x", 40);
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 408") << answer;
  EXPECT_NE(answer.find("too slowly"), std::string::npos) << answer;
}

TEST_F(HttpServerBodyRateTest, StreamedBodyTrickledJustInsideTheStallTimeoutIsCutOff) {
  std::string answer = Trickle(
      "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", "x", 40);
  EXPECT_NE(answer.find("cut off after"), std::string::npos) << answer;
}

TEST_F(HttpServerBodyRateTest, BodiesKeepingToTheRateAreServedHoweverLong) {
  // 50 bytes per 500 ms is the 100 bytes/s asked: 5 s of clock (five body timeouts)
  // for 500 bytes.
  const std::string piece(50, 'r');
  std::string buffered =
      Trickle("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n", piece, 10);
  EXPECT_EQ(buffered.substr(0, 12), "HTTP/1.1 200") << buffered;
  EXPECT_NE(buffered.find("echo:" + std::string(500, 'r')), std::string::npos);
  std::string streamed = Trickle(
      "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n", piece, 10);
  EXPECT_NE(streamed.find("uploaded 500"), std::string::npos) << streamed;
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
