// Upgrades keep the data. Each fixtures/<name>.tar.gz is a small data
// directory an earlier sheetlog wrote (fixtures/README.md: which commit, and how), with
// fixtures/<name>.json, what that server answered before it stopped. Today's binary
// opens each, migrates it, and must answer the same: every entry (and its external key),
// the cells at the head and at a middle seq, every object with its size and ETag (and
// a body that matches it); verify finds only the dead letter the fixture was written
// with, and none once it is redriven; the upgraded server appends and snapshots.
// Also: a migration killed midway (kill -9 at migration.before_commit) is rolled back
// and resumes on the next start; a data directory newer than the binary is refused,
// naming both versions. And on the system clock, where the fixture's dead letter is
// months past the queues' retention: snapshots complete by themselves.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>

#include "tests/support/api_client.h"
#include "tests/support/command.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const std::string kFixtures = std::string(SHEETLOG_SOURCE_DIR) + "/fixtures";

std::vector<std::string> FixtureNames() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kFixtures)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > 7 && file.ends_with(".tar.gz")) {
      names.push_back(file.substr(0, file.size() - 7));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string Md5Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), digest, &n, EVP_md5(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    static constexpr char kHex[] = "0123456789abcdef";
    hex += {kHex[digest[i] >> 4], kHex[digest[i] & 15]};
  }
  return hex;
}

// `sqlite3 DB SQL`'s output, trimmed.
std::string Sqlite(const std::string& db, const std::string& sql) {
  CommandResult r = RunCommand("sqlite3 " + ShellQuote(db) + " " + ShellQuote(sql));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
  return r.out;
}

class UpgradeFixturesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::ifstream in(kFixtures + "/" + GetParam() + ".json");
    expected_ = json::parse(in, nullptr, false);
    ASSERT_TRUE(expected_.is_object()) << "fixtures/" << GetParam() << ".json";
    CommandResult untar =
        RunCommand("tar -xzf " + ShellQuote(kFixtures + "/" + GetParam() + ".tar.gz") +
                   " -C " + ShellQuote(dir_.path()));
    ASSERT_EQ(untar.exit_code, 0) << untar.err;
    data_ = dir_.File("data");
    ASSERT_TRUE(fs::exists(data_ + "/sheetlog.db"));
  }

  bool Start(std::vector<std::pair<std::string, std::string>> env = {}) {
    ServerOptions options(
        data_, manual_clock_
                   ? std::vector<std::string>{"--clock", "manual", "--enable-faults"}
                   : std::vector<std::string>{"--enable-faults"});
    options.env = std::move(env);
    server_ = std::make_unique<ServerProcess>(options);
    if (!server_->Start()) return false;
    client_ = std::make_unique<httplib::Client>(server_->Client());
    return true;
  }

  // Everything the fixture's server answered, answered again by today's.
  void ExpectSameData() {
    for (const auto& [sheet, want] : expected_["sheets"].items()) {
      SCOPED_TRACE("sheet " + want["name"].get<std::string>());
      JsonResponse info = Get(*client_, "/v1/sheets/" + sheet);
      ASSERT_EQ(info.status, 200) << info.raw;
      EXPECT_EQ(info.body["first_seq"], want["first_seq"]);
      EXPECT_EQ(info.body["next_seq"], want["next_seq"]);
      const std::vector<json> entries = ReadAllEntries(*client_, sheet);
      ASSERT_EQ(entries.size(), want["entries"].size());
      for (size_t i = 0; i < entries.size(); ++i) {
        const json& got = entries[i];
        const json& old = want["entries"][i];
        for (const char* field :
             {"seq", "segment", "num", "created", "type", "version", "body"}) {
          EXPECT_EQ(got.value(field, json()), old.value(field, json()))
              << field << " of entry " << old["seq"];
        }
        if (old["external"].is_object()) {
          ASSERT_TRUE(got["external"].is_object()) << got.dump();
          EXPECT_EQ(got["external"]["key"], old["external"]["key"]);
          EXPECT_EQ(got["external"]["size"], old["external"]["size"]);
        }
      }
      for (const auto& [at, rows] : want["cells"].items()) {
        JsonResponse cells = Get(*client_, "/v1/sheets/" + sheet + "/cells?range=A1:H40" +
                                               (at == "head" ? "" : "&at=" + at));
        ASSERT_EQ(cells.status, 200) << cells.raw;
        EXPECT_EQ(cells.body["rows"], rows) << "cells at " << at;
      }
    }
    for (const json& blob : expected_["blobs"]) {
      const std::string key = blob["key"];
      auto res = client_->Get("/v1/blobs/" + key);
      ASSERT_TRUE(res && res->status == 200) << key;
      EXPECT_EQ(static_cast<int64_t>(res->body.size()), blob["size"].get<int64_t>())
          << key;
      EXPECT_EQ(Md5Hex(res->body), blob["etag"]) << key;
    }
  }

  json Verify() {
    JsonResponse r = Get(*client_, "/v1/admin/verify");
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body;
  }

  bool EverySheetsSnapshotsComplete() {
    for (const auto& [sheet, want] : expected_["sheets"].items()) {
      if (!AllSnapshotsComplete(*client_, sheet)) return false;
    }
    return true;
  }

  // False: the server runs on the system clock, as a user's does.
  bool manual_clock_ = true;
  TempDir dir_;
  std::string data_;
  json expected_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_P(UpgradeFixturesTest, TodaysBinaryMigratesItAndServesTheSameData) {
  ASSERT_TRUE(Start()) << server_->error();
  JsonResponse version = Get(*client_, "/version");
  ASSERT_EQ(version.status, 200);
  EXPECT_GE(version.body["schema_version"].get<int>(),
            expected_["schema_version"].get<int>());
  ASSERT_NO_FATAL_FAILURE(ExpectSameData());

  // The fixture's one dead letter survived the upgrade, and verify names only it.
  JsonResponse letters = Get(*client_, "/v1/admin/queues/snapshots/dead-letters");
  ASSERT_EQ(letters.status, 200);
  ASSERT_EQ(letters.body["messages"].size(), expected_["dead_letters"].size());
  json report = Verify();
  ASSERT_EQ(report["violations"].size(), 1u) << report.dump();
  EXPECT_EQ(report["violations"][0]["invariant"], "dead-letter");

  // Redriven, it completes (the failed attempts left a claim that goes stale after
  // 60 s of clock), and then verify passes.
  ASSERT_EQ(Post(*client_, "/v1/admin/queues/snapshots/redrive", json::object()).status,
            200);
  EXPECT_TRUE(PipelineWatch(*server_).Until([&] {
    if (EverySheetsSnapshotsComplete()) return true;
    AdvanceClockWhenIdle(*client_, 61);
    return false;
  }));
  report = Verify();
  EXPECT_EQ(report["ok"], true) << report.dump();

  // The upgraded data takes new entries and snapshots.
  const std::string sheet = expected_["sheets"].begin().key();
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "H40", "upgraded"));
  ASSERT_NO_FATAL_FAILURE(TakeSnapshot(*client_, sheet));
  EXPECT_TRUE(
      PipelineWatch(*server_).Until([&] { return EverySheetsSnapshotsComplete(); }));
  JsonResponse cell = Get(*client_, "/v1/sheets/" + sheet + "/cells?range=H40:H40");
  EXPECT_EQ(cell.body["rows"], json::array({json::array({"upgraded"})})) << cell.raw;
  EXPECT_EQ(Verify()["ok"], true);
  EXPECT_EQ(server_->Stop(), 0);

  // And it opens again as it is now.
  ASSERT_TRUE(Start()) << server_->error();
  EXPECT_EQ(Verify()["ok"], true);
}

// The user finding: today's binary on a fixture's data, started as a user starts it,
// on the system clock. The fixture's snapshot job was dead-lettered months ago, far
// past the queues' 14-day retention (so was schema 7's queued copy), and the fixture
// test above never saw it: its manual clock starts where the fixture's did. Once
// retention has removed the job, nothing but the pipeline itself makes the snapshot:
// with no operator action (the redrive finds nothing to move: it never reports the
// expired dead letter it would then drop), every snapshot completes and verify is
// clean.
TEST_P(UpgradeFixturesTest, OnTheSystemClockSnapshotsCompleteByThemselves) {
  manual_clock_ = false;
  ASSERT_TRUE(Start()) << server_->error();
  ASSERT_NO_FATAL_FAILURE(ExpectSameData());
  JsonResponse redrive =
      Post(*client_, "/v1/admin/queues/snapshots/redrive", json::object());
  ASSERT_EQ(redrive.status, 200) << redrive.raw;
  EXPECT_EQ(redrive.body["moved"], 0)
      << "an expired dead letter reported as redriven: " << redrive.raw;
  JsonResponse letters = Get(*client_, "/v1/admin/queues/snapshots/dead-letters");
  EXPECT_TRUE(letters.body["messages"].empty()) << letters.raw;

  EXPECT_TRUE(PipelineWatch(*server_).Until(
      [&] { return EverySheetsSnapshotsComplete(); },
      [&] {
        std::string seen;
        for (const auto& [sheet, want] : expected_["sheets"].items()) {
          seen += Get(*client_, "/v1/sheets/" + sheet + "/snapshots").raw + "\n";
        }
        return seen + Get(*client_, "/v1/admin/queues").raw + "\n" +
               Get(*client_, "/v1/admin/pending-snapshots").raw + "\nserver log:\n" +
               server_->Log();
      }));
  json report;
  EXPECT_TRUE(Eventually(
      [&] {
        report = Verify();
        return report["ok"] == true && report["violations"].empty() &&
               report["pending"].empty();
      },
      [&] { return report.dump(2); }));
  // The self-healing gave the job back (the server log names each one).
  httplib::Result metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  const std::string series = "\nsheetlog_snapshot_jobs_healed ";
  const size_t at = metrics->body.find(series);
  ASSERT_NE(at, std::string::npos) << metrics->body.substr(0, 4000);
  EXPECT_GE(std::stoll(metrics->body.substr(at + series.size())), 1)
      << metrics->body.substr(at, 80);
  EXPECT_NE(server_->Log().find("self-healing: sheet "), std::string::npos)
      << server_->Log();

  // The upgraded data takes new entries and snapshots on this clock too.
  const std::string sheet = expected_["sheets"].begin().key();
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "H40", "upgraded"));
  ASSERT_NO_FATAL_FAILURE(TakeSnapshot(*client_, sheet));
  EXPECT_TRUE(
      PipelineWatch(*server_).Until([&] { return EverySheetsSnapshotsComplete(); }));
  EXPECT_EQ(Verify()["ok"], true);
}

TEST_P(UpgradeFixturesTest, MigrationKilledMidwayResumesOnTheNextStart) {
  const std::string db = data_ + "/sheetlog.db";
  const int before = std::stoi(Sqlite(db, "SELECT MAX(version) FROM schema_version"));
  EXPECT_EQ(before, expected_["schema_version"].get<int>());
  // kill -9 after the first pending migration's statements, before its commit. A
  // fixture already at today's version has no migration to interrupt: the start
  // succeeds and the data must still be whole.
  const bool started = Start({{"SHEETLOG_ARM_FAULTS", "migration.before_commit:crash"}});
  if (started) {
    JsonResponse version = Get(*client_, "/version");
    EXPECT_EQ(version.body["schema_version"], before) << "no migration was pending";
    server_->Stop();
  } else {
    EXPECT_NE(server_->error().find("exited"), std::string::npos) << server_->error();
    EXPECT_EQ(std::stoi(Sqlite(db, "SELECT MAX(version) FROM schema_version")), before)
        << "the interrupted migration is rolled back whole";
  }
  ASSERT_TRUE(Start()) << server_->error();
  EXPECT_GT(std::stoi(Sqlite(db, "SELECT MAX(version) FROM schema_version")),
            started ? before - 1 : before);
  ASSERT_NO_FATAL_FAILURE(ExpectSameData());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, UpgradeFixturesTest,
                         ::testing::ValuesIn(FixtureNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(NewerDataDirectoryTest, IsRefusedNamingBothVersions) {
  TempDir dir;
  {
    ServerProcess server(ServerOptions(dir.File("data")));
    ASSERT_TRUE(server.Start()) << server.error();
    ASSERT_EQ(server.Stop(), 0);
  }
  const std::string db = dir.File("data/sheetlog.db");
  Sqlite(db,
         "INSERT INTO schema_version(version, name, release)"
         " VALUES (9999, '9999_from_the_future.sql', '99.0.0')");
  CommandResult version = RunCommand(std::string(SHEETLOG_BINARY) + " version");
  ASSERT_EQ(version.exit_code, 0);
  while (!version.out.empty() && version.out.back() == '\n') version.out.pop_back();

  ServerProcess refused(ServerOptions(dir.File("data")));
  EXPECT_FALSE(refused.Start());
  EXPECT_NE(refused.error().find("written by sheetlog 99.0.0"), std::string::npos)
      << refused.error();
  EXPECT_NE(refused.error().find("this is " + version.out), std::string::npos)
      << refused.error();
  EXPECT_NE(refused.error().find("schema version 9999"), std::string::npos);
  // Nothing was changed: without the future row it opens as before.
  Sqlite(db, "DELETE FROM schema_version WHERE version = 9999");
  ServerProcess again(ServerOptions(dir.File("data")));
  EXPECT_TRUE(again.Start()) << again.error();
}

}  // namespace
}  // namespace sheetlog::testing
