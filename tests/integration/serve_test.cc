// The real binary: start, readiness, auth refusal off loopback, clean shutdown.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

std::string IntegrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  std::string result = "open failed";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return result;
}

TEST(ServeTest, StartsAnswersReadyzAndStopsCleanlyOnSigterm) {
  TempDir dir;
  ServerProcess server(ServerOptions(dir.path()));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  JsonResponse health = Get(client, "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body["status"], "ok");
  JsonResponse ready = Get(client, "/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_GE(ready.body["schema_version"].get<int>(), 1);
  // Some writes so the database has content to check.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Post(client, "/v1/sheets", {{"name", "s" + std::to_string(i)}}).status,
              201);
  }
  int status = server.Stop();
  ASSERT_TRUE(WIFEXITED(status)) << server.Log();
  EXPECT_EQ(WEXITSTATUS(status), 0) << server.Log();
  EXPECT_EQ(IntegrityCheck(dir.File("sheetlog.db")), "ok");
}

TEST(ServeTest, InMemoryStartsAndLeavesNothingBehind) {
  ServerProcess server(ServerOptions::InMemory());
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  EXPECT_EQ(Post(client, "/v1/sheets", nlohmann::json::object()).status, 201);
  int status = server.Stop();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// `sheetlog serve --help` prints every flag (the README says so) and exits 0.
TEST(ServeTest, ServeHelpPrintsTheFlags) {
  FILE* out = ::popen((std::string(SHEETLOG_BINARY) + " serve --help").c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), out)) > 0;) text.append(buf, n);
  const int status = ::pclose(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_NE(text.find("--data-dir"), std::string::npos) << text;
  EXPECT_NE(text.find("--listen"), std::string::npos) << text;
}

TEST(ServeTest, RefusesNonLoopbackWithoutToken) {
  TempDir dir;
  ServerProcess server(ServerOptions(dir.path(), {"--listen", "0.0.0.0:0"}));
  EXPECT_FALSE(server.Start());
  EXPECT_NE(server.error().find("without a token"), std::string::npos) << server.error();
}

TEST(ServeTest, TokenIsRequiredOnV1ButNotOnHealth) {
  TempDir dir;
  ServerProcess server(ServerOptions(dir.path(), {}, "s3cret"));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client anonymous("127.0.0.1", server.port());
  EXPECT_EQ(Get(anonymous, "/healthz").status, 200);
  JsonResponse denied = Get(anonymous, "/v1/sheets");
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.body["error"]["code"], "Unauthorized");
  httplib::Client wrong("127.0.0.1", server.port());
  wrong.set_bearer_token_auth("s3creT");
  EXPECT_EQ(Get(wrong, "/v1/sheets").status, 401);
  httplib::Client client = server.Client();
  EXPECT_EQ(Get(client, "/v1/sheets").status, 200);
}

}  // namespace
}  // namespace sheetlog::testing
