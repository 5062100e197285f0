// sheetlog's HTTP/1.1 server core (src/api/http/) against its known failure cases, in
// process over loopback with a small handler: a connection closed deep inside a call
// chain (a refused body, then a half-close or a reset) is never used after it is freed;
// HEAD never carries content and never desynchronises a kept-alive connection; HTTP/1.0
// gets no chunked coding and no 100 Continue; repeated and missing header fields;
// absolute-form targets, later 1.x versions, long targets, bare LFs, malformed chunk
// lines; handler headers that would split a response; and a client that does not read
// never holds a worker. Responses are read by their own framing (tests/support/
// raw_http.h), so a byte the server should not have sent shows up as a broken next
// response. No sleeps: every wait is a blocking read or a condition.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/api/http/http_server.h"
#include "tests/support/raw_http.h"

namespace sheetlog::api::http {
namespace {

using testing::RawConnection;
using testing::RawResponse;

constexpr size_t kBigBody = 16 << 20;  // /big: more than every buffer on the way
constexpr size_t kBigPiece = 64 << 10;

// The byte at `offset` of /big's body.
char BigByte(size_t offset) { return static_cast<char>('a' + (offset / 4096) % 26); }

class ConformanceHandler : public HttpHandler {
 public:
  Admission Admit(Request& request) override {
    Admission admission;
    admission.max_body_bytes = 1 << 20;
    const std::string& path = request.path;
    if (path == "/ok") {
      admission.route = 1;
    } else if (path == "/echo") {
      admission.route = 2;
    } else if (path == "/numbers") {
      admission.route = 3;  // a chunked provider
    } else if (path == "/sized") {
      admission.route = 4;  // a provider of known length
    } else if (path == "/stream") {
      admission.route = 5;
    } else if (path == "/big") {
      admission.route = 6;
    } else if (path == "/header") {
      admission.route = 7;  // echoes ?value= into a response header
    } else if (path == "/host") {
      admission.route = 8;  // says which Host it was asked for
    } else {
      admission.refusal = std::make_unique<Response>(ErrorResponse(404, "no route"));
    }
    return admission;
  }

  void Handle(Request& request, Response& response, int route,
              const ContentReader*) override {
    switch (route) {
      case 1:
        response.set_content("ok", "text/plain");
        return;
      case 2:
        response.set_content("echo:" + request.body, "text/plain");
        return;
      case 3: {
        auto next = std::make_shared<int>(0);
        response.set_chunked_content_provider(
            "text/plain", [this, next](size_t, DataSink& sink) {
              provider_calls_.fetch_add(1);
              if (*next == 100) {
                sink.done();
                return true;
              }
              std::string line = std::to_string((*next)++) + "\n";
              return sink.write(line.data(), line.size());
            });
        return;
      }
      case 4:
        response.set_content_provider(5, "text/plain",
                                      [this](size_t, size_t, DataSink& s) {
                                        provider_calls_.fetch_add(1);
                                        return s.write("hello", 5);
                                      });
        return;
      case 5: {
        std::shared_ptr<StreamWriter> writer = response.StartStream("text/event-stream");
        writer->Write("data: hello\n\n");
        writer->OnClose([this] {
          std::lock_guard lock(mu_);
          ++streams_closed_;
          changed_.notify_all();
        });
        return;
      }
      case 6:
        response.set_content_provider(
            kBigBody, "application/octet-stream",
            [this](size_t offset, size_t length, DataSink& sink) {
              big_calls_.fetch_add(1);
              std::string piece(std::min(length, kBigPiece), '\0');
              for (size_t i = 0; i < piece.size(); ++i) piece[i] = BigByte(offset + i);
              return sink.write(piece.data(), piece.size());
            });
        return;
      case 7:
        response.set_header("X-Echo", request.get_param_value("value"));
        response.set_content("set", "text/plain");
        return;
      case 8:
        response.set_content(
            "host:" + request.get_header_value("Host") + " target:" + request.target,
            "text/plain");
        return;
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

  void WaitForStreamsClosed(int n) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return streams_closed_ >= n; });
  }
  int provider_calls() const { return provider_calls_.load(); }
  int big_calls() const { return big_calls_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int streams_closed_ = 0;
  std::atomic<int> provider_calls_{0};
  std::atomic<int> big_calls_{0};
};

class HttpConformanceTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options = {}) {
    options.port = 0;
    // Few workers, so a test sees it when one is held.
    options.worker_threads = std::min(options.worker_threads, 2);
    options.shutdown_grace_ms = 100;  // open streams end at TearDown
    server_ = std::make_unique<HttpServer>(options, &handler_);
    ASSERT_TRUE(server_->Bind().ok());
    serving_ = std::thread([this] { server_->Serve(); });
  }
  void TearDown() override {
    if (server_) {
      server_->Stop();
      serving_.join();
    }
  }
  int port() const { return server_->port(); }

  // The server still serves: a fresh connection gets /ok.
  void ExpectStillServing() {
    RawConnection fresh(port());
    ASSERT_TRUE(fresh.Send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"));
    RawResponse ok = fresh.ReadResponse();
    EXPECT_EQ(ok.status, 200) << ok.head;
    EXPECT_EQ(ok.body, "ok");
  }

  ConformanceHandler handler_;
  std::unique_ptr<HttpServer> server_;
  std::thread serving_;
};

// The refusal of the second request closes the connection from inside the
// call chain that parsed it; the client's half-close (or reset) is already known. The
// server used to free the connection there and read it again (ASan: heap use after
// free, pre-auth). Run many times, in both orders of arrival.
constexpr char kPipelinedRefusal[] =
    "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"
    "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";

TEST_F(HttpConformanceTest, RefusedPipelinedBodyThenHalfCloseIsAnsweredAndClosed) {
  Start();
  for (int i = 0; i < 50; ++i) {
    RawConnection conn(port());
    ASSERT_TRUE(conn.Send(kPipelinedRefusal));
    conn.ShutdownWrite();
    RawResponse first = conn.ReadResponse();
    EXPECT_EQ(first.status, 200) << first.head;
    RawResponse second = conn.ReadResponse();
    EXPECT_EQ(second.status, 400) << second.head;
    EXPECT_NE(second.body.find("malformed chunk"), std::string::npos) << second.body;
    EXPECT_TRUE(conn.ClosedByServer());
  }
  ExpectStillServing();
}

TEST_F(HttpConformanceTest, RefusedPipelinedBodyThenResetLeavesTheServerServing) {
  Start();
  for (int i = 0; i < 50; ++i) {
    RawConnection conn(port());
    ASSERT_TRUE(conn.Send(kPipelinedRefusal));
    conn.Reset();
  }
  ExpectStillServing();
}

// HEAD gets the head a GET would get and never content; the next request on
// the connection is answered in step, whatever kind of body the route has.
TEST_F(HttpConformanceTest, HeadNeverCarriesContentAndKeepsTheConnectionInStep) {
  Start();
  RawConnection conn(port());
  ASSERT_TRUE(
      conn.Send("HEAD /numbers HTTP/1.1\r\nHost: x\r\n\r\n"
                "HEAD /sized HTTP/1.1\r\nHost: x\r\n\r\n"
                "HEAD /ok HTTP/1.1\r\nHost: x\r\n\r\n"
                "HEAD /stream HTTP/1.1\r\nHost: x\r\n\r\n"
                "HEAD /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
                "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"));
  RawResponse numbers = conn.ReadResponse(/*head_request=*/true);
  EXPECT_EQ(numbers.status, 200) << numbers.head;
  RawResponse sized = conn.ReadResponse(true);
  EXPECT_EQ(sized.status, 200) << sized.head;
  EXPECT_EQ(sized.header("content-length"), "5") << sized.head;
  RawResponse ok = conn.ReadResponse(true);
  EXPECT_EQ(ok.header("content-length"), "2") << ok.head;
  RawResponse stream = conn.ReadResponse(true);
  EXPECT_EQ(stream.status, 200) << stream.head;
  EXPECT_EQ(stream.header("content-type"), "text/event-stream");
  RawResponse missing = conn.ReadResponse(true);
  EXPECT_EQ(missing.status, 404) << missing.head;
  // Anything sent after those heads would be read here as the start of this response.
  RawResponse get = conn.ReadResponse();
  EXPECT_EQ(get.status, 200) << get.head;
  EXPECT_EQ(get.body, "ok");
  // The providers were never run, and the stream was ended at once.
  EXPECT_EQ(handler_.provider_calls(), 0);
  handler_.WaitForStreamsClosed(1);
}

// The server's own overload answer to HEAD has no content, and the overload
// sheds the connection.
TEST_F(HttpConformanceTest, OverloadAnswerToHeadHasNoContentAndCloses) {
  HttpServerOptions options;
  options.max_queued_requests = 0;  // every request finds the queue full
  Start(options);
  RawConnection conn(port());
  ASSERT_TRUE(conn.Send("HEAD /ok HTTP/1.1\r\nHost: x\r\n\r\n"));
  RawResponse refused = conn.ReadResponse(/*head_request=*/true);
  EXPECT_EQ(refused.status, 503) << refused.head;
  EXPECT_EQ(refused.header("retry-after"), "1");
  EXPECT_EQ(refused.header("connection"), "close");
  EXPECT_EQ(conn.buffered(), "");
  EXPECT_TRUE(conn.ClosedByServer());
}

// HTTP/1.0 has no chunked coding: a body of unknown length is sent as it is
// and ended by closing; known lengths keep a 1.0 keep-alive connection.
TEST_F(HttpConformanceTest, Http10GetsCloseDelimitedBodiesNeverChunked) {
  Start();
  RawConnection conn(port());
  ASSERT_TRUE(conn.Send("GET /numbers HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  RawResponse numbers = conn.ReadResponse();
  EXPECT_EQ(numbers.status, 200) << numbers.head;
  EXPECT_FALSE(numbers.has("transfer-encoding")) << numbers.head;
  EXPECT_FALSE(numbers.has("content-length")) << numbers.head;
  EXPECT_EQ(numbers.header("connection"), "close");
  EXPECT_EQ(numbers.body.substr(0, 4), "0\n1\n");
  EXPECT_NE(numbers.body.find("\n99\n"), std::string::npos) << numbers.body.size();

  // An event stream to a 1.0 client: the events as they are, no chunk framing.
  RawConnection stream(port());
  ASSERT_TRUE(stream.Send("GET /stream HTTP/1.0\r\n\r\n"));
  RawResponse head = stream.ReadResponse(/*head_request=*/true);  // the head only
  EXPECT_EQ(head.status, 200) << head.head;
  EXPECT_FALSE(head.has("transfer-encoding")) << head.head;
  while (stream.buffered().size() < 13 && stream.ReadMore()) {
  }
  EXPECT_EQ(stream.buffered().substr(0, 13), "data: hello\n\n");
}

TEST_F(HttpConformanceTest, Http10KeepAliveWithKnownLengthsKeepsTheConnection) {
  Start();
  RawConnection conn(port());
  ASSERT_TRUE(conn.Send("GET /ok HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  RawResponse first = conn.ReadResponse();
  EXPECT_EQ(first.status, 200) << first.head;
  EXPECT_EQ(first.header("connection"), "keep-alive") << first.head;
  ASSERT_TRUE(conn.Send("GET /ok HTTP/1.0\r\n\r\n"));  // no keep-alive: the last one
  RawResponse second = conn.ReadResponse();
  EXPECT_EQ(second.body, "ok");
  EXPECT_EQ(second.header("connection"), "close");
  EXPECT_TRUE(conn.ClosedByServer());
}

TEST_F(HttpConformanceTest, Http10GetsNo100ContinueAndAChunkedBodyCloses) {
  Start();
  RawConnection conn(port());
  ASSERT_TRUE(
      conn.Send("POST /echo HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n"
                "Connection: keep-alive\r\n\r\nhi"));
  RawResponse echo = conn.ReadResponse();
  EXPECT_EQ(echo.status, 200) << echo.head;  // not "100 Continue" first
  EXPECT_EQ(echo.body, "echo:hi");

  // RFC 9112 6.1: a 1.0 message with Transfer-Encoding is served, then the
  // connection closes, keep-alive or not.
  RawConnection chunked(port());
  ASSERT_TRUE(chunked.Send(
      "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n"
      "\r\n2\r\nhi\r\n0\r\n\r\n"));
  RawResponse served = chunked.ReadResponse();
  EXPECT_EQ(served.body, "echo:hi") << served.head;
  EXPECT_EQ(served.header("connection"), "close");
  EXPECT_TRUE(chunked.ClosedByServer());

  // HTTP/1.1 still gets its 100 Continue.
  RawConnection eleven(port());
  ASSERT_TRUE(
      eleven.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: "
                  "100-continue\r\n\r\n"));
  EXPECT_EQ(eleven.ReadResponse().status, 100);
  ASSERT_TRUE(eleven.Send("hi"));
  EXPECT_EQ(eleven.ReadResponse().body, "echo:hi");
}

// List fields are read over all their lines; Host must be there, once.
TEST_F(HttpConformanceTest, RepeatedAndMissingHeaderFields) {
  Start();
  {
    RawConnection conn(port());
    ASSERT_TRUE(
        conn.Send("GET /ok HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\nConnection: "
                  "close\r\n\r\n"));
    RawResponse ok = conn.ReadResponse();
    EXPECT_EQ(ok.status, 200);
    EXPECT_EQ(ok.header("connection"), "close");
    EXPECT_TRUE(conn.ClosedByServer());
  }
  for (const char* request :
       {"GET /ok HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "GET /ok HTTP/1.1\r\n\r\n",
        "GET /ok HTTP/1.1\r\nHost: x\r\nOrigin: http://a\r\nOrigin: http://b\r\n\r\n",
        "GET /ok HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: "
        "Bearer b\r\n\r\n"}) {
    RawConnection conn(port());
    ASSERT_TRUE(conn.Send(request));
    RawResponse refused = conn.ReadResponse();
    EXPECT_EQ(refused.status, 400) << request;
    EXPECT_TRUE(conn.ClosedByServer()) << request;
  }
  RawConnection old(port());
  ASSERT_TRUE(old.Send("GET /ok HTTP/1.0\r\n\r\n"));  // 1.0 needs no Host
  EXPECT_EQ(old.ReadResponse().status, 200);
}

// Absolute-form targets (their authority is the Host), a later 1.x version,
// OPTIONS *, a target too long for the head, a bare LF refused at once.
TEST_F(HttpConformanceTest, InteroperableRequestLines) {
  Start();
  RawConnection conn(port());
  ASSERT_TRUE(
      conn.Send("GET http://example.test:8787/host?x=1 HTTP/1.1\r\nHost: other\r\n\r\n"
                "GET /ok HTTP/1.2\r\nHost: x\r\n\r\n"
                "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"));
  RawResponse absolute = conn.ReadResponse();
  EXPECT_EQ(absolute.status, 200) << absolute.head;
  EXPECT_EQ(absolute.body, "host:example.test:8787 target:/host?x=1");
  RawResponse later = conn.ReadResponse();
  EXPECT_EQ(later.status, 200) << later.head;
  EXPECT_EQ(later.body, "ok");
  RawResponse options = conn.ReadResponse();
  EXPECT_EQ(options.status, 404) << options.head;  // reached the handler (its Admit)
  EXPECT_EQ(options.body, "no route");

  RawConnection two(port());
  ASSERT_TRUE(two.Send("GET /ok HTTP/2.0\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(two.ReadResponse().status, 505);

  RawConnection long_target(port());
  ASSERT_TRUE(long_target.Send("GET /" + std::string(100 << 10, 'a') +
                               " HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(long_target.ReadResponse().status, 414);

  // Answered now, not after the 10 s head timeout (the read would time out first).
  RawConnection bare_lf(port(), /*read_timeout_s=*/5);
  ASSERT_TRUE(bare_lf.Send("GET /ok HTTP/1.1\nHost: x\n\n"));
  RawResponse refused = bare_lf.ReadResponse();
  EXPECT_EQ(refused.status, 400) << refused.head;
  EXPECT_NE(refused.body.find("bare LF"), std::string::npos) << refused.body;
}

TEST_F(HttpConformanceTest, MalformedChunkLinesAreRefused) {
  Start();
  const std::vector<std::string> bodies = {
      " 2\r\nhi\r\n0\r\n\r\n",                       // a space before the size
      "2 \r\nhi\r\n0\r\n\r\n",                       // a space, then no extension
      "2;a=\rb\r\nhi\r\n0\r\n\r\n",                  // a bare CR in an extension
      std::string("2;a\0b\r\nhi\r\n0\r\n\r\n", 17),  // a NUL in an extension
      "2\r\nhi\r\n0\r\nno colon here\r\n\r\n",       // a trailer line without colon
  };
  for (const std::string& body : bodies) {
    RawConnection conn(port());
    ASSERT_TRUE(conn.Send(
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body));
    RawResponse refused = conn.ReadResponse();
    EXPECT_EQ(refused.status, 400) << refused.head << refused.body;
  }
  // The forms that stay valid: whitespace before an extension, a trailer field.
  RawConnection conn(port());
  ASSERT_TRUE(
      conn.Send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                "2 ;ext=1\r\nhi\r\n0\r\nX-Trailer: t\r\n\r\n"));
  EXPECT_EQ(conn.ReadResponse().body, "echo:hi");
}

// A handler that echoes client bytes into a header cannot split the response.
TEST_F(HttpConformanceTest, HeaderValuesWithLineBreaksAreNeverWritten) {
  Start();
  RawConnection conn(port());
  ASSERT_TRUE(conn.Send(
      "GET /header?value=a%0D%0ASet-Cookie:%20evil=1 HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /header?value=fine HTTP/1.1\r\nHost: x\r\n\r\n"));
  RawResponse split = conn.ReadResponse();
  EXPECT_EQ(split.status, 500) << split.head;
  EXPECT_FALSE(split.has("set-cookie")) << split.head;
  EXPECT_FALSE(split.has("x-echo")) << split.head;
  RawResponse fine = conn.ReadResponse();
  EXPECT_EQ(fine.header("x-echo"), "fine");
}

// Clients that ask for a large body and never read hold their connections,
// not the workers: with one worker and a small buffer, the next client is answered
// while they wait; and a reader who comes back gets every byte, in order.
TEST_F(HttpConformanceTest, ClientsThatDoNotReadHoldNoWorker) {
  HttpServerOptions options;
  options.worker_threads = 1;
  options.response_buffer_bytes = 256 << 10;
  Start(options);
  std::vector<std::unique_ptr<RawConnection>> stalled;
  for (int i = 0; i < 4; ++i) {
    stalled.push_back(std::make_unique<RawConnection>(port()));
    ASSERT_TRUE(stalled.back()->Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  // The old server's only worker waited for the first of them to read (until the
  // 30 s write timeout): this read, bounded at 20 s, failed.
  RawConnection other(port(), /*read_timeout_s=*/20);
  ASSERT_TRUE(other.Send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"));
  RawResponse ok = other.ReadResponse();
  EXPECT_EQ(ok.status, 200) << ok.head;
  // The pumps parked: far fewer provider calls than a whole body each.
  EXPECT_LT(handler_.big_calls(), static_cast<int>(4 * kBigBody / kBigPiece));

  RawResponse big = stalled[0]->ReadResponse();
  ASSERT_EQ(big.status, 200) << big.head;
  ASSERT_EQ(big.body.size(), kBigBody);
  for (size_t i = 0; i < kBigBody; i += 997) {
    ASSERT_EQ(big.body[i], BigByte(i)) << "at " << i;
  }
}

}  // namespace
}  // namespace sheetlog::api::http
