// The real binary over HTTPS: `serve --tls-cert --tls-key`, reached
// with Debian's curl and with the tests' client against certificates the test makes;
// SIGHUP reads the files again (a renewed certificate reaches new connections, a broken
// one is refused and the previous one stays); the flags refused when half given or
// unreadable, naming what is wrong; clients that never finish a handshake closed at
// --header-timeout.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>

#include "tests/support/raw_http.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_certificates.h"

namespace sheetlog::testing {
namespace {

constexpr char kToken[] = "tls-test-token";

class TlsHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(MakeTestCertificate(dir_.path(), "first", &first_, &error)) << error;
    ASSERT_TRUE(MakeTestCertificate(dir_.path(), "second", &second_, &error)) << error;
    // The server reads these two paths; tests copy a certificate over them.
    cert_file_ = dir_.File("live-cert.pem");
    key_file_ = dir_.File("live-key.pem");
    Install(first_);
  }

  void Install(const TestCertificate& certificate) {
    namespace fs = std::filesystem;
    fs::copy_file(certificate.cert_file, cert_file_,
                  fs::copy_options::overwrite_existing);
    fs::copy_file(certificate.key_file, key_file_, fs::copy_options::overwrite_existing);
  }

  ServerOptions TlsOptions(const TestCertificate& trusted) {
    // Info: the reloads are logged at that level.
    ServerOptions options(
        dir_.File("data"),
        {"--tls-cert", cert_file_, "--tls-key", key_file_, "--log-level", "info"},
        kToken);
    options.tls_ca_file = trusted.ca_file;
    return options;
  }

  // curl's exit status (0: an answer over a verified TLS connection); the body or -w's
  // output in *out.
  int Curl(const std::string& arguments, std::string* out) {
    return RunCommand("curl -sS --max-time 30 " + arguments, out);
  }
  std::string Url(const ServerProcess& server, const std::string& path) {
    return "https://127.0.0.1:" + std::to_string(server.port()) + path;
  }

  // Waits for the server's log to hold `text` (SIGHUP is handled by its own thread).
  ::testing::AssertionResult LogEventuallyHas(ServerProcess& server,
                                              const std::string& text) {
    return Eventually([&] { return server.Log().find(text) != std::string::npos; });
  }

  TempDir dir_;
  TestCertificate first_;
  TestCertificate second_;
  std::string cert_file_;
  std::string key_file_;
};

TEST_F(TlsHttpTest, ServesTheApiOverHttpsToCurlAndTheClient) {
  ServerProcess server(TlsOptions(first_));
  ASSERT_TRUE(server.Start()) << server.error();
  std::string out;
  EXPECT_EQ(Curl("--cacert " + first_.ca_file + " -H 'Authorization: Bearer " +
                     std::string(kToken) +
                     "' -X POST -H 'Content-Type: application/json' "
                     "-d '{}' -o /dev/null -w '%{http_code} %{ssl_verify_result}' " +
                     Url(server, "/v1/sheets"),
                 &out),
            0)
      << out;
  EXPECT_EQ(out, "201 0");
  // The tests' client over TLS: a sheet, an append, a read of the cell.
  httplib::Client client = server.Client();
  JsonResponse created = Post(client, "/v1/sheets", nlohmann::json::object());
  ASSERT_EQ(created.status, 201) << created.raw;
  const std::string sheet = created.body["id"];
  JsonResponse appended =
      Post(client, "/v1/sheets/" + sheet + "/entries",
           {{"type", "SetCell"}, {"body", {{"ref", "B2"}, {"value", 42}}}});
  EXPECT_EQ(appended.status, 201) << appended.raw;
  JsonResponse cells = Get(client, "/v1/sheets/" + sheet + "/cells?range=B2");
  EXPECT_EQ(cells.status, 200) << cells.raw;
  EXPECT_NE(cells.raw.find("42"), std::string::npos) << cells.raw;
  // The token is still required over TLS.
  EXPECT_EQ(Curl("--cacert " + first_.ca_file + " -o /dev/null -w '%{http_code}' " +
                     Url(server, "/v1/sheets"),
                 &out),
            0);
  EXPECT_EQ(out, "401");
  // TLS 1.1 gets no handshake; plain HTTP on the TLS port gets no HTTP answer; neither
  // harms the server.
  EXPECT_NE(Curl("--cacert " + first_.ca_file + " --tlsv1.1 --tls-max 1.1 " +
                     Url(server, "/healthz"),
                 &out),
            0);
  const int plain = Curl("-o /dev/null -w '%{http_code}' http://127.0.0.1:" +
                             std::to_string(server.port()) + "/healthz",
                         &out);
  EXPECT_FALSE(plain == 0 && out == "200") << out;
  EXPECT_EQ(Get(client, "/healthz").status, 200);
  EXPECT_EQ(server.Stop(), 0);
}

TEST_F(TlsHttpTest, SighupServesARenewedCertificateAndKeepsTheOldOneWhenTheNewIsBroken) {
  ServerProcess server(TlsOptions(first_));
  ASSERT_TRUE(server.Start()) << server.error();
  std::string out;
  const std::string healthz =
      " -o /dev/null -w '%{http_code}' " + Url(server, "/healthz");
  ASSERT_EQ(Curl("--cacert " + first_.ca_file + healthz, &out), 0) << out;

  // Renewed: new connections get the second certificate, which the first authority
  // did not sign.
  Install(second_);
  ASSERT_EQ(kill(server.pid(), SIGHUP), 0);
  ASSERT_TRUE(LogEventuallyHas(server, "TLS certificate and key reloaded"))
      << server.Log();
  EXPECT_EQ(Curl("--cacert " + second_.ca_file + healthz, &out), 0) << out;
  EXPECT_EQ(out, "200");
  EXPECT_NE(Curl("--cacert " + first_.ca_file + healthz, &out), 0) << out;

  // Broken: a key that is not a key. The reload is refused, logged, and the second
  // certificate is still served.
  {
    std::FILE* key = std::fopen(key_file_.c_str(), "w");
    ASSERT_NE(key, nullptr);
    std::fputs("not a key\n", key);
    std::fclose(key);
  }
  ASSERT_EQ(kill(server.pid(), SIGHUP), 0);
  ASSERT_TRUE(LogEventuallyHas(server, "TLS reload refused")) << server.Log();
  EXPECT_NE(server.Log().find(key_file_), std::string::npos) << server.Log();
  EXPECT_EQ(Curl("--cacert " + second_.ca_file + healthz, &out), 0) << out;
  EXPECT_EQ(out, "200");
  EXPECT_FALSE(server.Exited());
  EXPECT_EQ(server.Stop(), 0);
}

TEST_F(TlsHttpTest, SighupWithoutTlsChangesNothing) {
  ServerProcess server(ServerOptions(dir_.File("data"), {"--log-level", "info"}));
  ASSERT_TRUE(server.Start()) << server.error();
  ASSERT_EQ(kill(server.pid(), SIGHUP), 0);
  ASSERT_TRUE(LogEventuallyHas(server, "nothing to reload")) << server.Log();
  httplib::Client client = server.Client();
  EXPECT_EQ(Get(client, "/healthz").status, 200);
  EXPECT_EQ(server.Stop(), 0);
}

// A client that connects and never finishes its handshake (sends nothing, or the
// start of a ClientHello) is closed at --header-timeout without a byte sent: no 408
// can cross an unfinished handshake, and the server used to wait --body-timeout more
// for one. Here that would be 600 s, ten times the clients' bounded reads.
TEST_F(TlsHttpTest, UnfinishedHandshakesAreClosedAtTheHeaderTimeout) {
  ServerOptions options = TlsOptions(first_);
  for (const char* flag : {"--header-timeout", "1", "--body-timeout", "600"}) {
    options.extra.push_back(flag);
  }
  ServerProcess server(options);
  ASSERT_TRUE(server.Start()) << server.error();
  RawConnection silent(server.port(), /*read_timeout_s=*/60);
  RawConnection partial(server.port(), /*read_timeout_s=*/60);
  ASSERT_TRUE(silent.ok() && partial.ok());
  // A handshake record of 248 bytes announced, then only the ClientHello's header,
  // its version and the start of its random bytes.
  static constexpr unsigned char kClientHelloStart[] = {
      0x16, 0x03, 0x01, 0x00, 0xf8, 0x01, 0x00, 0x00, 0xf4,
      0x03, 0x03, 0x5a, 0x11, 0x42, 0x07, 0x9c, 0x3e, 0x80};
  ASSERT_TRUE(partial.Send(std::string(reinterpret_cast<const char*>(kClientHelloStart),
                                       sizeof(kClientHelloStart))));
  EXPECT_TRUE(silent.ClosedByServer());
  EXPECT_TRUE(partial.ClosedByServer());
  // The server goes on serving.
  std::string out;
  EXPECT_EQ(Curl("--cacert " + first_.ca_file + " -o /dev/null -w '%{http_code}' " +
                     Url(server, "/healthz"),
                 &out),
            0)
      << out;
  EXPECT_EQ(out, "200");
  EXPECT_EQ(server.Stop(), 0);
}

TEST_F(TlsHttpTest, RefusesHalfGivenOrUnreadableTlsFiles) {
  {
    ServerProcess server(ServerOptions(dir_.File("data"), {"--tls-cert", cert_file_}));
    EXPECT_FALSE(server.Start());
    EXPECT_NE(server.error().find("give both --tls-cert and --tls-key"),
              std::string::npos)
        << server.error();
  }
  {
    const std::string missing = dir_.File("no-such-cert.pem");
    ServerProcess server(ServerOptions(dir_.File("data"),
                                       {"--tls-cert", missing, "--tls-key", key_file_}));
    EXPECT_FALSE(server.Start());
    EXPECT_NE(server.error().find(missing), std::string::npos) << server.error();
  }
  {
    // A key that does not belong to the certificate.
    ServerProcess server(ServerOptions(
        dir_.File("data"), {"--tls-cert", cert_file_, "--tls-key", second_.key_file}));
    EXPECT_FALSE(server.Start());
    EXPECT_NE(server.error().find(second_.key_file), std::string::npos) << server.error();
  }
}

}  // namespace
}  // namespace sheetlog::testing
