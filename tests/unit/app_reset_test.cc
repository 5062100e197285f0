// App::Reset (POST /v1/admin/reset) empties every table of the schema but the ones it
// keeps on purpose (app.h), each through the table's owner. The tables are read from the
// database itself (SQLite's sqlite_master), not from a list kept here: a table added
// later fails this test (not filled before the reset) until the test fills it and its
// owner's reset empties it, or app.h and kResetSurvivors say why a reset keeps it.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "emulator/blob/blob_store.h"
#include "emulator/queue/queue.h"
#include "emulator/runtime/execution_history.h"
#include "emulator/runtime/function_runtime.h"
#include "emulator/stream/change_feed.h"
#include "src/app/app.h"
#include "src/log/event_log.h"
#include "src/log/pending_snapshots.h"
#include "src/log/uploads.h"
#include "tests/support/blob_fixture.h"
#include "tests/support/s3_test_server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

// What a reset keeps, and app.h (App::Reset) says why: the queue and stream
// definitions with the feed's counters and checkpoints, the nodes' leases and claims,
// the schema's version.
const std::set<std::string> kResetSurvivors = {
    "queue",           "stream_config", "stream_shard",  "stream_checkpoint",
    "execution_owner", "owner_claim",   "schema_version"};

// Rows per table of the SQLite database at `path`: every table sqlite_master lists but
// SQLite's own (sqlite_*), read on a connection of this test's (WAL: beside the App's).
std::map<std::string, int64_t> RowsPerTable(const std::string& path) {
  std::map<std::string, int64_t> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "opening " << path << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return rows;
  }
  auto each_row = [&](const std::string& sql, auto&& row) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
      return;
    }
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) row(stmt);
    if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    sqlite3_finalize(stmt);
  };
  std::vector<std::string> tables;
  each_row(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
      "'sqlite\\_%' ESCAPE '\\' ORDER BY name",
      [&](sqlite3_stmt* stmt) {
        tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
      });
  for (const std::string& table : tables) {
    each_row("SELECT COUNT(*) FROM \"" + table + "\"",
             [&](sqlite3_stmt* stmt) { rows[table] = sqlite3_column_int64(stmt, 0); });
  }
  sqlite3_close(db);
  return rows;
}

class AppResetTest : public ::testing::TestWithParam<BlobStoreKind> {
 protected:
  bool IsS3() const { return GetParam() == BlobStoreKind::kS3; }

  std::unique_ptr<App> OpenApp() {
    AppOptions options;
    options.data_dir = dir_.File("data");
    options.sync = SyncMode::kOff;
    options.manual_clock = true;
    options.workers = false;  // nothing runs but what the test calls
    options.allow_reset = true;
    if (IsS3()) options.s3_blobs = NewS3TestBucket("app-reset");
    Result<std::unique_ptr<App>> app = App::Open(options);
    EXPECT_OK(app);
    return app.ok() ? std::move(app).value() : nullptr;
  }
  std::string DatabasePath() const { return dir_.File("data") + "/sheetlog.db"; }

  TempDir dir_;
};

TEST_P(AppResetTest, EmptiesEveryTableButTheDocumentedSurvivors) {
  std::unique_ptr<App> app = OpenApp();
  ASSERT_NE(app, nullptr);
  // One row or more in every table a reset empties, each written by its owner.
  SheetInfo kept = app->log()->CreateLog("kept", 0, 100, nullptr).value();  // sheet,
  AppendRequest append;  // segment, entry, stream_record (the feed's triggers)
  append.sheet_id = kept.id;
  append.type = "SetCell";
  append.body = R"({"ref":"A1","value":1})";
  ASSERT_OK(app->log()->AddEntry(append, nullptr));
  PendingSnapshot pending;
  pending.sheet_id = kept.id;
  ASSERT_OK(app->log()->pending_snapshots()->Create(pending, nullptr));
  SheetInfo deleted = app->log()->CreateLog("deleted", 0, 100, nullptr).value();
  ASSERT_OK(app->log()->DeleteSheet(deleted.id, nullptr));  // sheet_deletion
  UploadInfo upload =
      app->uploads()
          ->Create(kept.id, "custom.payload", 1, std::nullopt, std::nullopt, 5, nullptr)
          .value();
  // S3: blob_mirror gets a row for the URL, which is never used, and one for the
  // tagged object below.
  ASSERT_OK(app->uploads()->PresignedPath("PUT", upload.blob_key, upload.expires));
  ASSERT_OK(app->blobs()->Put("entries/" + kept.id + "/body", "a body",
                              {"", {{kAutoDeleteTag, "true"}}}));
  ASSERT_OK(app->queues()->Send(kSnapshotQueue, "{}"));
  BeginRequest work{"test:1", "test", "invocation-1", ""};
  ASSERT_OK(app->runtime()->history().Record(work, ExecStatus::kFailed, "a failure"));
  ASSERT_OK(app->feed()->SaveCheckpoint("test-consumer", 0, 1));  // a survivor

  const std::map<std::string, int64_t> before = RowsPerTable(DatabasePath());
  ASSERT_FALSE(before.empty());
  for (const auto& [table, rows] : before) {
    if (kResetSurvivors.contains(table)) continue;
    // The directory store keeps tags beside its objects: nothing writes blob_mirror.
    if (table == "blob_mirror" && !IsS3()) continue;
    EXPECT_GT(rows, 0) << "table " << table
                       << " is empty before the reset: fill it above (through its "
                          "owner), so the test shows the reset empties it";
  }

  Result<App::ResetReport> report = app->Reset();
  ASSERT_OK(report);
  EXPECT_EQ(report->sheets, 1);
  EXPECT_EQ(report->blobs, 1);

  const std::map<std::string, int64_t> after = RowsPerTable(DatabasePath());
  EXPECT_EQ(after.size(), before.size());
  for (const auto& [table, rows] : after) {
    if (kResetSurvivors.contains(table)) {
      auto kept_rows = before.find(table);
      EXPECT_EQ(rows, kept_rows == before.end() ? -1 : kept_rows->second)
          << "a reset keeps table " << table;
    } else {
      EXPECT_EQ(rows, 0) << "table " << table
                         << " is not empty after the reset: its owner must empty it "
                            "(App::Reset), or app.h and kResetSurvivors say why it "
                            "stays";
    }
  }
  EXPECT_TRUE(app->blobs()->List(BlobListOptions{}).value().keys.empty());

  // The next sheet works as on a fresh install.
  SheetInfo fresh = app->log()->CreateLog("fresh", 0, 100, nullptr).value();
  append.sheet_id = fresh.id;
  ASSERT_OK(app->log()->AddEntry(append, nullptr));
  ASSERT_OK(app->queues()->Send(kSnapshotQueue, "{}"));
}

INSTANTIATE_TEST_SUITE_P(Directory, AppResetTest,
                         ::testing::Values(BlobStoreKind::kDirectory));
INSTANTIATE_TEST_SUITE_P(S3, AppResetTest, ::testing::Values(BlobStoreKind::kS3));

}  // namespace
}  // namespace sheetlog::testing
