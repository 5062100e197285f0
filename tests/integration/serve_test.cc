// The real binary: start, readiness, auth refusal off loopback, clean shutdown.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/command.h"
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
  EXPECT_NE(text.find("--log-format FORMAT"), std::string::npos) << text;
}

// User finding 16: `sheetlog verify --help` said "flag --help needs a value". Every
// command `sheetlog help` lists answers --help and -h with its own usage: on stdout,
// exit 0, naming its flags, whatever else is on the line and with no server to ask.
TEST(ServeTest, EveryCommandAnswersHelpWithItsOwnUsage) {
  const std::string binary = SHEETLOG_BINARY;
  CommandResult general = RunCommand(binary + " help");
  ASSERT_EQ(general.exit_code, 0) << general.err;
  // The commands: the lines of "Commands:" that start with a name ("  verify [...").
  std::vector<std::string> commands;
  {
    std::istringstream lines(general.out);
    bool in_commands = false;
    for (std::string line; std::getline(lines, line);) {
      if (line == "Commands:") {
        in_commands = true;
        continue;
      }
      if (!in_commands) continue;
      if (line.empty()) break;
      if (line.size() > 2 && line.compare(0, 2, "  ") == 0 && line[2] != ' ') {
        commands.push_back(line.substr(2, line.find(' ', 2) - 2));
      }
    }
  }
  // What each usage must name (every command listed must be here).
  const std::map<std::string, std::vector<std::string>> flags = {
      {"serve", {"--data-dir", "--listen", "--config", "--token"}},
      {"restore", {"--from", "--data-dir", "--json"}},
      {"version", {"--json"}},
      {"help", {"Commands:", "Usage: sheetlog <command>"}},
      {"verify", {"--sheet", "--json", "--server", "--token"}},
      {"rebuild-snapshots", {"SHEET", "--json", "--server", "--token"}},
      {"reprocess", {"--since", "--sheet", "--json", "--server", "--token"}},
      {"backup", {"--to", "--json", "--server", "--token"}},
      {"fork", {"SOURCE", "--at", "--name", "--json", "--server", "--token"}},
      {"import",
       {"FILE", "--sheet", "--at", "--mode", "--format", "--worksheet", "--server",
        "--token"}},
      {"export", {"SHEET", "--format", "-o", "--output", "--at", "--server", "--token"}},
  };
  std::set<std::string> seen;
  for (const std::string& command : commands) seen.insert(command);
  for (const auto& [command, names] : flags) {
    EXPECT_TRUE(seen.count(command)) << "`sheetlog help` does not list " << command;
  }
  ASSERT_GE(commands.size(), flags.size()) << general.out;
  for (const std::string& command : commands) {
    ASSERT_TRUE(flags.count(command))
        << "a new command, " << command << ": say here what its --help must name";
    // Alone, after other flags (one that takes a value included), and as -h.
    for (const std::string& args :
         {std::string(" --help"), std::string(" -h"),
          std::string(" --server http://127.0.0.1:9 --sheet x --help")}) {
      SCOPED_TRACE("sheetlog " + command + args);
      CommandResult r = RunCommand(binary + " " + command + args);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.err, "");
      if (command != "help") {
        EXPECT_EQ(r.out.rfind("Usage: sheetlog " + command + " ", 0), 0u) << r.out;
        EXPECT_EQ(r.out.find("Usage: sheetlog <command>"), std::string::npos)
            << "the general usage, not the command's own";
      }
      for (const std::string& name : flags.at(command)) {
        EXPECT_NE(r.out.find(name), std::string::npos) << name << " in:\n" << r.out;
      }
    }
  }
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
