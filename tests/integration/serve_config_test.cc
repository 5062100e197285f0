// `sheetlog serve --config FILE`: every flag may be set in the file,
// the environment (SHEETLOG_<NAME>) overrides it and the command line overrides both;
// an unknown key is refused naming it and its line; --token-file takes the token from
// a file only its owner can read; --log-format json makes every log line one JSON
// object.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include "emulator/json_text.h"
#include "tests/support/raw_http.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class ServeConfigTest : public ::testing::Test {
 protected:
  std::string WriteConfig(const std::string& text) {
    const std::string path = dir_.File("sheetlog.conf");
    std::ofstream(path) << text;
    return path;
  }
  TempDir dir_;
};

TEST_F(ServeConfigTest, FileThenEnvironmentThenCommandLine) {
  const std::string config = WriteConfig(
      "# the service's settings\n"
      "allow-reset = true\n"
      "\n"
      "max-request = 2048\n"
      "inline-limit=100\n");
  ServerOptions options(dir_.File("data"),
                        {"--config", config, "--inline-limit", "100000"});
  options.env.push_back({"SHEETLOG_MAX_REQUEST", "4096"});
  ServerProcess server(options);
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();

  // From the file alone.
  EXPECT_EQ(Post(client, "/v1/admin/reset", json::object()).status, 200);
  // The environment's 4096 beats the file's 2048; the command line's inline limit
  // beats the file's, so a 3000-byte body is accepted and kept inline.
  JsonResponse sheet = Post(client, "/v1/sheets", json::object());
  ASSERT_EQ(sheet.status, 201);
  JsonResponse appended =
      Post(client, "/v1/sheets/" + sheet.body["id"].get<std::string>() + "/entries",
           {{"type", "Note"}, {"body", std::string(3000, 'n')}});
  ASSERT_EQ(appended.status, 201) << appended.raw;
  EXPECT_TRUE(appended.body["external"].is_null()) << appended.raw;
}

TEST_F(ServeConfigTest, UnknownKeyAndMalformedLineNameTheLine) {
  std::string config = WriteConfig("sync = full\n# fine\nthreads-per-core = 4\n");
  ServerProcess unknown(ServerOptions(dir_.File("data"), {"--config", config}));
  EXPECT_FALSE(unknown.Start());
  EXPECT_NE(unknown.Log().find(config + " line 3: unknown setting 'threads-per-core'"),
            std::string::npos)
      << unknown.Log();

  config = WriteConfig("sync = full\nlisten\n");
  ServerProcess malformed(ServerOptions(dir_.File("data"), {"--config", config}));
  EXPECT_FALSE(malformed.Start());
  EXPECT_NE(malformed.Log().find(config + " line 2: expected `name = value`"),
            std::string::npos)
      << malformed.Log();

  config = WriteConfig("sync = sometimes\n");
  ServerProcess bad_value(ServerOptions(dir_.File("data"), {"--config", config}));
  EXPECT_FALSE(bad_value.Start());
  EXPECT_NE(bad_value.Log().find(config +
                                 " line 1: sync must be normal or full, got 'sometimes'"),
            std::string::npos)
      << bad_value.Log();
}

TEST_F(ServeConfigTest, TokenFileMustBeReadableByItsOwnerOnly) {
  const std::string token = dir_.File("token");
  std::ofstream(token) << "s3cret-from-a-file\n";
  ::chmod(token.c_str(), 0644);
  const std::string config = WriteConfig("token-file = " + token + "\n");
  ServerProcess readable(ServerOptions(dir_.File("data"), {"--config", config}));
  EXPECT_FALSE(readable.Start());
  EXPECT_NE(readable.Log().find("can be read by other users (mode 0644)"),
            std::string::npos)
      << readable.Log();

  ::chmod(token.c_str(), 0600);
  ServerProcess server(ServerOptions(dir_.File("data"), {"--config", config}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client with_token("127.0.0.1", server.port());
  with_token.set_bearer_token_auth("s3cret-from-a-file");
  EXPECT_EQ(Get(with_token, "/v1/sheets").status, 200);
  httplib::Client without("127.0.0.1", server.port());
  EXPECT_EQ(Get(without, "/v1/sheets").status, 401);
}

// "2026-01-02T03:04:05.123456Z": RFC 3339, UTC, with microseconds.
bool IsUtcTimeWithMicroseconds(const std::string& text) {
  const std::string shape = "dddd-dd-ddTdd:dd:dd.ddddddZ";
  if (text.size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const bool ok = shape[i] == 'd' ? std::isdigit(static_cast<unsigned char>(text[i]))
                                    : text[i] == shape[i];
    if (!ok) return false;
  }
  return true;
}

// The real binary with --log-format json: every line it writes, from start to stop, is
// one JSON object with time, level, pid and message. A request path holding a quote, a
// newline, a control character and a byte that is not UTF-8 (logged at debug level as
// the server decoded it) stays one line that says it.
TEST_F(ServeConfigTest, LogFormatJsonWritesEveryLineAsOneJsonObject) {
  ServerProcess server(
      ServerOptions(dir_.File("data"), {"--log-format", "json", "--log-level", "debug"}));
  ASSERT_TRUE(server.Start()) << server.error();
  const pid_t pid = server.pid();
  {
    RawConnection raw(server.port());
    ASSERT_TRUE(
        raw.Send("GET /v1/sheets/%22quoted%22%0Aline%01%FF HTTP/1.1\r\nHost: "
                 "127.0.0.1:" +
                 std::to_string(server.port()) + "\r\nConnection: close\r\n\r\n"));
    const std::string answer = raw.ReadResponseText();
    EXPECT_NE(StatusOf(answer), 0) << answer;
  }
  ASSERT_EQ(server.Stop(), 0) << server.Log();

  const std::string log = server.Log();
  std::istringstream lines(log);
  int objects = 0;
  bool saw_the_request = false;
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json object = ParseJsonOrDiscarded(line);
    ASSERT_TRUE(object.is_object()) << "not a JSON object: " << line << "\nin:\n" << log;
    ++objects;
    ASSERT_TRUE(object["time"].is_string()) << line;
    EXPECT_TRUE(IsUtcTimeWithMicroseconds(object["time"].get<std::string>())) << line;
    ASSERT_TRUE(object["level"].is_string()) << line;
    EXPECT_EQ(object["pid"], pid) << line;
    ASSERT_TRUE(object["message"].is_string()) << line;
    const std::string message = object["message"].get<std::string>();
    // The path as decoded, the byte that is not UTF-8 as U+FFFD.
    if (message.rfind("GET /v1/sheets/\"quoted\"\nline\x01\xef\xbf\xbd -> ", 0) == 0) {
      saw_the_request = true;
      EXPECT_EQ(object["level"], "debug") << line;
    }
  }
  // At least the start-up lines, the request and the shutdown.
  EXPECT_GE(objects, 4) << log;
  EXPECT_TRUE(saw_the_request) << log;
  EXPECT_NE(log.find("\"message\":\"sheetlog stopped\""), std::string::npos) << log;
}

}  // namespace
}  // namespace sheetlog::testing
