#include "emulator/sqlite/database.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "emulator/sqlite/migrations.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

std::unique_ptr<Database> OpenDb(const testing::TempDir& dir) {
  Database::Options options;
  options.path = dir.File("sheetlog.db");
  auto db = Database::Open(options);
  EXPECT_OK(db);
  return std::move(db).value();
}

int64_t CountRows(Database& db, const std::string& table) {
  int64_t n = -1;
  EXPECT_TRUE(db.Read([&](Connection& c) {
                  ASSIGN_OR_RETURN(Statement s,
                                   c.Prepare("SELECT COUNT(*) FROM " + table));
                  ASSIGN_OR_RETURN(bool row, s.Step());
                  n = row ? s.ColumnInt(0) : -1;
                  return Status::OK();
                }).ok());
  return n;
}

TEST(DatabaseTest, MigrationsApplyOnceAndRecordVersion) {
  testing::TempDir dir;
  int version = 0;
  {
    auto db = OpenDb(dir);
    version = db->schema_version();
    EXPECT_GE(version, 1);
  }
  auto again = OpenDb(dir);  // applying twice is a no-op
  EXPECT_EQ(again->schema_version(), version);
  EXPECT_EQ(CountRows(*again, "schema_version"),
            static_cast<int64_t>(EmulatorMigrations().size()));
}

// The application hands its own migrations to Open: they run in one version order with
// the emulator's (an application table may be created between two emulator ones), and a
// version both lists claim is refused before anything is applied.
TEST(DatabaseTest, ApplicationMigrationsJoinTheEmulatorsInVersionOrder) {
  testing::TempDir dir;
  const int newest_emulator = EmulatorMigrations().back().version;
  Database::Options options;
  options.path = dir.File("sheetlog.db");
  // Listed out of order: the second needs the first.
  options.migrations = {
      {newest_emulator + 2, "later_app.sql", "CREATE TABLE later AS SELECT * FROM app"},
      {newest_emulator + 1, "app.sql", "CREATE TABLE app (x)"}};
  auto db = Database::Open(options);
  ASSERT_OK(db);
  EXPECT_EQ((*db)->schema_version(), newest_emulator + 2);
  EXPECT_EQ(CountRows(**db, "app"), 0);
  EXPECT_EQ(CountRows(**db, "later"), 0);
  EXPECT_EQ(CountRows(**db, "queue"), 0);  // the emulator's own tables are there too
  db->reset();

  testing::TempDir other;
  options.path = other.File("sheetlog.db");
  options.migrations = {{EmulatorMigrations().front().version, "clash.sql", "SELECT 1"}};
  EXPECT_THAT(Database::Open(options).status(),
              StatusIs(StatusCode::kInvalidArgument, ::testing::HasSubstr("clash.sql")));
}

TEST(DatabaseTest, NewerDatabaseIsRefusedUntouched) {
  testing::TempDir dir;
  {
    auto db = OpenDb(dir);
    ASSERT_TRUE(db->Write([](Connection& c) {
                    return c.Exec("INSERT INTO schema_version VALUES (9999, 'future')");
                  }).ok());
  }
  Database::Options options;
  options.path = dir.File("sheetlog.db");
  auto db = Database::Open(options);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(db.status().message().find("newer"), std::string::npos);
}

TEST(DatabaseTest, FailedWorkRollsBackOnlyItself) {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  ASSERT_TRUE(
      db->Write([](Connection& c) { return c.Exec("CREATE TABLE t (x INTEGER)"); }).ok());
  Status failed = db->Write([](Connection& c) {
    RETURN_IF_ERROR(c.Exec("INSERT INTO t VALUES (1)"));
    return ConditionFailed("lost the race");
  });
  EXPECT_TRUE(failed.IsConditionFailed());
  EXPECT_TRUE(
      db->Write([](Connection& c) { return c.Exec("INSERT INTO t VALUES (2)"); }).ok());
  EXPECT_EQ(CountRows(*db, "t"), 1);
}

TEST(DatabaseTest, ConcurrentWritersAreGroupedAndAllCommit) {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  ASSERT_TRUE(
      db->Write([](Connection& c) { return c.Exec("CREATE TABLE t (x INTEGER)"); }).ok());
  constexpr int kThreads = 8, kPerThread = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Status s = db->Write([&](Connection& c) {
          ASSIGN_OR_RETURN(Statement st, c.Prepare("INSERT INTO t VALUES (?)"));
          return st.Bind(1, t * kPerThread + i).Run();
        });
        if (!s.ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(CountRows(*db, "t"), kThreads * kPerThread);
  // Group commit: at least some batches carried more than one write.
  Database::Stats stats = db->stats();
  EXPECT_EQ(stats.writes, kThreads * kPerThread + 1);
  EXPECT_LE(stats.batches, stats.writes);
}

TEST(DatabaseTest, ReadersSeeOnlyCommittedState) {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  ASSERT_TRUE(
      db->Write([](Connection& c) { return c.Exec("CREATE TABLE t (x INTEGER)"); }).ok());
  Status s = db->Write([&](Connection& c) {
    RETURN_IF_ERROR(c.Exec("INSERT INTO t VALUES (1)"));
    // Inside the write transaction, a reader still sees the table empty.
    EXPECT_EQ(CountRows(*db, "t"), 0);
    return Status::OK();
  });
  ASSERT_OK(s);
  EXPECT_EQ(CountRows(*db, "t"), 1);
}

}  // namespace
}  // namespace sheetlog
