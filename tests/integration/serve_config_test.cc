// `sheetlog serve --config FILE`: every flag may be set in the file,
// the environment (SHEETLOG_<NAME>) overrides it and the command line overrides both;
// an unknown key is refused naming it and its line; --token-file takes the token from
// a file only its owner can read.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

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

}  // namespace
}  // namespace sheetlog::testing
