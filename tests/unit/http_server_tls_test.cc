// The HTTP server over TLS (src/api/http/tls.h, transport.h), in process, driven by
// Debian's curl against a certificate the test makes: requests and keep-alive, a body
// larger than every buffer (partial TLS writes, the content pump), a streamed upload
// (the worker reads through TLS), TLS 1.1 refused, plain HTTP on the TLS port refused
// without harm, and a replaced certificate served to new connections.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "src/api/http/http_server.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certificates.h"

namespace sheetlog::api::http {
namespace {

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

class HttpServerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(testing::MakeTestCertificate(dir_.path(), "first", &first_, &error))
        << error;
    Result<std::shared_ptr<TlsContext>> tls =
        TlsContext::Load(first_.cert_file, first_.key_file);
    ASSERT_TRUE(tls.ok()) << tls.status().ToString();
    HttpServerOptions options;
    options.port = 0;
    options.worker_threads = 2;
    options.response_buffer_bytes = 128 << 10;
    options.shutdown_grace_ms = 100;
    options.tls = *tls;
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

  std::string Url(const std::string& path) const {
    return "https://127.0.0.1:" + std::to_string(server_->port()) + path;
  }
  // curl's exit status; its output (body, or -w's) in *out.
  int Curl(const std::string& arguments, std::string* out) const {
    return RunCommand("curl -sS --max-time 60 " + arguments, out);
  }

  TempDir dir_;
  TestCertificate first_;
  TlsHandler handler_;
  std::unique_ptr<HttpServer> server_;
  std::thread serving_;
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

}  // namespace
}  // namespace sheetlog::api::http
