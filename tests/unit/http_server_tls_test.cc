// The HTTP server over TLS (src/api/http/tls.h, transport.h), in process, driven by
// Debian's curl against a certificate the test makes: requests and keep-alive, a body
// larger than every buffer (partial TLS writes, the content pump), a streamed upload
// (the worker reads through TLS), TLS 1.1 refused, plain HTTP on the TLS port refused
// without harm, and a replaced certificate served to new connections. Then, on a manual
// clock, connections that never finish their handshake: closed at the head timeout
// without an answer, and closed to make room only when no connection is idle.
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <poll.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "src/api/http/http_server.h"
#include "tests/support/counting_clock.h"
#include "tests/support/raw_http.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certificates.h"

namespace sheetlog::api::http {
namespace {

using testing::RawConnection;
using testing::RunCommand;
using testing::TempDir;
using testing::TestCertificate;

constexpr size_t kLargeBody = 6 << 20;

class TlsHandler : public HttpHandler {
 public:
  Admission Admit(Request& request) override {
    Admission admission;
    admission.max_body_bytes = 64 << 20;
    if (request.path == "/ok") {
      admission.route = 1;
    } else if (request.path == "/large") {
      admission.route = 2;
    } else if (request.path == "/upload") {
      admission.route = 3;
      admission.streamed_body = true;
    } else {
      admission.refusal = std::make_unique<Response>(ErrorResponse(404, "no route"));
    }
    return admission;
  }
  void Handle(Request&, Response& response, int route,
              const ContentReader* body) override {
    if (route == 1) {
      response.set_content("ok", "text/plain");
    } else if (route == 2) {
      response.set_content_provider(kLargeBody, "application/octet-stream",
                                    [](size_t, size_t length, DataSink& sink) {
                                      std::string piece(std::min<size_t>(length, 65536),
                                                        'L');
                                      return sink.write(piece.data(), piece.size());
                                    });
    } else {
      size_t received = 0;
      const bool complete = (*body)([&](const char*, size_t size) {
        received += size;
        return true;
      });
      response.set_content(
          (complete ? "uploaded " : "cut off after ") + std::to_string(received),
          "text/plain");
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
};

// A TLS server on a free loopback port, serving TlsHandler from a thread of the
// fixture's until TearDown.
class ServingTlsTest : public ::testing::Test {
 protected:
  // Serves with `options` (port 0, two workers, a short grace at Stop), or fails the
  // test.
  void Serve(HttpServerOptions options) {
    options.port = 0;
    options.worker_threads = 2;
    options.shutdown_grace_ms = 100;
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

  TlsHandler handler_;
  std::unique_ptr<HttpServer> server_;
  std::thread serving_;
};

class HttpServerTlsTest : public ServingTlsTest {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(testing::MakeTestCertificate(dir_.path(), "first", &first_, &error))
        << error;
    Result<std::shared_ptr<TlsContext>> tls =
        TlsContext::Load(first_.cert_file, first_.key_file);
    ASSERT_TRUE(tls.ok()) << tls.status().ToString();
    HttpServerOptions options;
    options.response_buffer_bytes = 128 << 10;
    options.tls = *tls;
    Serve(options);
  }

  std::string Url(const std::string& path) const {
    return "https://127.0.0.1:" + std::to_string(server_->port()) + path;
  }
  // curl's exit status; its output (body, or -w's) in *out.
  int Curl(const std::string& arguments, std::string* out) const {
    return RunCommand("curl -sS --max-time 60 " + arguments, out);
  }

  TempDir dir_;
  TestCertificate first_;
};

TEST_F(HttpServerTlsTest, ServesRequestsAndKeepsTheConnection) {
  std::string out;
  ASSERT_EQ(Curl("--cacert " + first_.ca_file + " " + Url("/ok") + " " + Url("/ok") +
                     " -w ' %{num_connects}'",
                 &out),
            0)
      << out;
  // Two answers, and the second request reused the first connection.
  EXPECT_EQ(out, "ok 1ok 0");
}

TEST_F(HttpServerTlsTest, LargeBodiesAndStreamedUploadsCrossIntact) {
  std::string out;
  ASSERT_EQ(Curl("--cacert " + first_.ca_file + " -o /dev/null -w '%{size_download}' " +
                     Url("/large"),
                 &out),
            0)
      << out;
  EXPECT_EQ(out, std::to_string(kLargeBody));
  const std::string upload = dir_.File("upload.bin");
  ASSERT_EQ(RunCommand("head -c 5000000 /dev/zero > '" + upload + "'", &out), 0) << out;
  ASSERT_EQ(
      Curl("--cacert " + first_.ca_file + " -T '" + upload + "' " + Url("/upload"), &out),
      0)
      << out;
  EXPECT_EQ(out, "uploaded 5000000");
}

TEST_F(HttpServerTlsTest, OldProtocolsAndPlainHttpAreRefused) {
  std::string out;
  // TLS 1.1 and below: no handshake (curl 35: SSL connect error).
  EXPECT_NE(
      Curl("--cacert " + first_.ca_file + " --tlsv1.0 --tls-max 1.1 " + Url("/ok"), &out),
      0)
      << out;
  // Plain HTTP on the TLS port: the handshake fails and the connection closes.
  EXPECT_NE(Curl("http://127.0.0.1:" + std::to_string(server_->port()) + "/ok", &out), 0)
      << out;
  // Neither hurt the server.
  ASSERT_EQ(Curl("--cacert " + first_.ca_file + " " + Url("/ok"), &out), 0) << out;
  EXPECT_EQ(out, "ok");
}

TEST_F(HttpServerTlsTest, AReplacedCertificateIsServedToNewConnections) {
  TestCertificate second;
  std::string error;
  ASSERT_TRUE(testing::MakeTestCertificate(dir_.path(), "second", &second, &error))
      << error;
  Result<std::shared_ptr<TlsContext>> tls =
      TlsContext::Load(second.cert_file, second.key_file);
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  ASSERT_TRUE(server_->ReplaceTls(*tls).ok());
  std::string out;
  ASSERT_EQ(Curl("--cacert " + second.ca_file + " " + Url("/ok"), &out), 0) << out;
  EXPECT_EQ(out, "ok");
  EXPECT_NE(Curl("--cacert " + first_.ca_file + " " + Url("/ok"), &out), 0)
      << "the old certificate is still served";
}

TEST(TlsContextTest, UnreadableOrMismatchedFilesAreRefusedByName) {
  TempDir dir;
  TestCertificate one;
  TestCertificate two;
  std::string error;
  ASSERT_TRUE(testing::MakeTestCertificate(dir.path(), "one", &one, &error)) << error;
  ASSERT_TRUE(testing::MakeTestCertificate(dir.path(), "two", &two, &error)) << error;
  Result<std::shared_ptr<TlsContext>> missing =
      TlsContext::Load(dir.File("nope.pem"), one.key_file);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().ToString().find("nope.pem"), std::string::npos);
  Result<std::shared_ptr<TlsContext>> mismatched =
      TlsContext::Load(one.cert_file, two.key_file);
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().ToString().find("two-key.pem"), std::string::npos)
      << mismatched.status().ToString();
  EXPECT_NE(mismatched.status().ToString().find("mismatch"), std::string::npos)
      << mismatched.status().ToString();
}

// A blocking TLS client (OpenSSL) on a RawConnection, whose reads are bounded (30 s) so
// a connection the server never closes fails a test instead of hanging it. It accepts
// any certificate: these tests are about connections, not verification.
class BlockingTlsClient {
 public:
  explicit BlockingTlsClient(int port)
      : tcp_(port, /*read_timeout_s=*/30), context_(SSL_CTX_new(TLS_client_method())) {
    SSL_CTX_set_verify(context_, SSL_VERIFY_NONE, nullptr);
    ssl_ = SSL_new(context_);
    SSL_set_fd(ssl_, tcp_.fd());
  }
  ~BlockingTlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(context_);
  }
  BlockingTlsClient(const BlockingTlsClient&) = delete;
  BlockingTlsClient& operator=(const BlockingTlsClient&) = delete;

  bool Handshake() { return tcp_.ok() && SSL_connect(ssl_) == 1; }
  bool Send(const std::string& data) {
    return SSL_write(ssl_, data.data(), static_cast<int>(data.size())) ==
           static_cast<int>(data.size());
  }
  // What arrives until `needle` has (or the connection ends, or the read times out).
  std::string ReadUntil(const std::string& needle) {
    std::string all;
    char buffer[4096];
    while (all.find(needle) == std::string::npos) {
      const int n = SSL_read(ssl_, buffer, static_cast<int>(sizeof(buffer)));
      if (n <= 0) break;
      all.append(buffer, static_cast<size_t>(n));
    }
    return all;
  }
  // True if the server ended the connection (with or without close_notify) and sent
  // nothing more; false for data, or the bounded read timing out.
  bool ClosedByServer() {
    char byte;
    const int n = SSL_read(ssl_, &byte, 1);
    if (n > 0) return false;
    const int error = SSL_get_error(ssl_, n);
    return error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE;
  }
  int fd() const { return tcp_.fd(); }

 private:
  RawConnection tcp_;
  SSL_CTX* context_;
  SSL* ssl_ = nullptr;
};

// True if the server sent bytes or ended the connection: a poll that does not wait.
bool ServerSentOrClosed(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

// The first bytes of a TLS ClientHello: a handshake record of 248 bytes announced,
// then the ClientHello's own header, its version (TLS 1.2) and 8 of its 32 random
// bytes. The server waits for the rest.
std::string PartialClientHello() {
  static constexpr unsigned char kBytes[] = {
      0x16, 0x03, 0x01, 0x00, 0xf8,                    // record: handshake, 248 bytes
      0x01, 0x00, 0x00, 0xf4,                          // ClientHello, 244 bytes
      0x03, 0x03,                                      // TLS 1.2
      0x5a, 0x11, 0x42, 0x07, 0x9c, 0x3e, 0x80, 0x21,  // random, cut short
  };
  return std::string(reinterpret_cast<const char*>(kBytes), sizeof(kBytes));
}

// Connections that do not finish their TLS handshake. The server's clock is manual and
// the body and write timeouts are far beyond anything the tests move it by: a
// connection closed here was closed by the head timeout (or to make room), never by
// waiting out the write timeout after a 408 that could not be sent.
class HttpServerTlsHandshakeTest : public ServingTlsTest {
 protected:
  static constexpr int64_t kHeadTimeoutMs = 1000;

  void StartServer(size_t max_connections = 64) {
    std::string error;
    ASSERT_TRUE(
        testing::MakeTestCertificate(dir_.path(), "server", &certificate_, &error))
        << error;
    Result<std::shared_ptr<TlsContext>> tls =
        TlsContext::Load(certificate_.cert_file, certificate_.key_file);
    ASSERT_TRUE(tls.ok()) << tls.status().ToString();
    HttpServerOptions options;
    options.max_connections = max_connections;
    options.header_timeout_ms = kHeadTimeoutMs;
    options.body_timeout_ms = 600000;
    options.write_timeout_ms = 600000;
    options.idle_timeout_ms = 600000;
    options.clock_ms = [this] { return clock_.Read(); };
    options.tls = *tls;
    Serve(options);
  }

  // A TLS client that finished its handshake and had a request answered: idle now.
  std::unique_ptr<BlockingTlsClient> ServedClient() {
    auto client = std::make_unique<BlockingTlsClient>(server_->port());
    EXPECT_TRUE(client->Handshake());
    EXPECT_TRUE(client->Send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n"));
    const std::string answer = client->ReadUntil("\r\n\r\nok");
    EXPECT_NE(answer.find("\r\n\r\nok"), std::string::npos) << answer;
    return client;
  }

  TempDir dir_;
  TestCertificate certificate_;
  testing::CountingManualClock clock_;
};

TEST_F(HttpServerTlsHandshakeTest, AClientThatSendsNothingIsClosedAtTheHeadTimeout) {
  StartServer();
  RawConnection silent(server_->port(), /*read_timeout_s=*/30);
  ASSERT_TRUE(silent.ok());
  clock_.WaitForReads(3);  // accepted: the head timeout counts from here
  ASSERT_EQ(server_->connection_count(), 1u);
  clock_.Advance(kHeadTimeoutMs - 100);
  clock_.WaitForReads(3);  // the loop looked at the timeouts at the new time
  EXPECT_FALSE(ServerSentOrClosed(silent.fd())) << "closed before the head timeout";
  clock_.Advance(200);
  // Closed, without a byte: no 408 can cross a handshake that never began.
  EXPECT_TRUE(silent.ClosedByServer());
  EXPECT_EQ(server_->connection_count(), 0u);
}

TEST_F(HttpServerTlsHandshakeTest, APartialClientHelloIsClosedAtTheHeadTimeout) {
  StartServer();
  RawConnection partial(server_->port(), /*read_timeout_s=*/30);
  ASSERT_TRUE(partial.ok());
  ASSERT_TRUE(partial.Send(PartialClientHello()));
  clock_.WaitForReads(3);  // accepted, and the bytes read into the handshake
  clock_.Advance(kHeadTimeoutMs - 100);
  clock_.WaitForReads(3);
  EXPECT_FALSE(ServerSentOrClosed(partial.fd())) << "closed before the head timeout";
  clock_.Advance(200);
  EXPECT_TRUE(partial.ClosedByServer());
  EXPECT_EQ(server_->connection_count(), 0u);
}

// The head timeout still answers a client whose handshake is done: a 408, through TLS.
TEST_F(HttpServerTlsHandshakeTest, AClientPastItsHandshakeStillGetsA408) {
  StartServer();
  BlockingTlsClient client(server_->port());
  ASSERT_TRUE(client.Handshake());
  ASSERT_TRUE(client.Send("GET /ok HTTP/1.1\r\nHost: x\r\nX-Half: a"));
  clock_.WaitForReads(3);  // the server finished the handshake and read the bytes
  clock_.Advance(kHeadTimeoutMs + 100);
  const std::string answer = client.ReadUntil("\r\n\r\n");
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 408") << answer;
}

// Full: the new connection takes the place of an idle one (a served request, waiting
// for its next), not of an older one still in its handshake.
TEST_F(HttpServerTlsHandshakeTest, MakingRoomClosesAnIdleConnectionBeforeAHandshake) {
  StartServer(/*max_connections=*/2);
  RawConnection handshaking(server_->port(), /*read_timeout_s=*/30);
  ASSERT_TRUE(handshaking.ok());
  clock_.WaitForReads(3);  // accepted first: the oldest connection
  std::unique_ptr<BlockingTlsClient> idle = ServedClient();
  ASSERT_EQ(server_->connection_count(), 2u);

  std::unique_ptr<BlockingTlsClient> newcomer = ServedClient();
  EXPECT_TRUE(idle->ClosedByServer());
  EXPECT_FALSE(ServerSentOrClosed(handshaking.fd()));
  EXPECT_EQ(server_->connection_count(), 2u);
}

// Full with nothing idle: a connection still in its handshake makes room (the oldest),
// so clients that never finish one cannot lock others out until the head timeout.
TEST_F(HttpServerTlsHandshakeTest, MakingRoomClosesTheOldestHandshakeWhenNoneIsIdle) {
  StartServer(/*max_connections=*/2);
  RawConnection oldest(server_->port(), /*read_timeout_s=*/30);
  ASSERT_TRUE(oldest.ok());
  clock_.WaitForReads(3);
  RawConnection younger(server_->port(), /*read_timeout_s=*/30);
  ASSERT_TRUE(younger.ok());
  ASSERT_TRUE(younger.Send(PartialClientHello()));
  clock_.WaitForReads(3);
  ASSERT_EQ(server_->connection_count(), 2u);

  std::unique_ptr<BlockingTlsClient> newcomer = ServedClient();
  EXPECT_TRUE(oldest.ClosedByServer());
  EXPECT_FALSE(ServerSentOrClosed(younger.fd()));
}

}  // namespace
}  // namespace sheetlog::api::http
