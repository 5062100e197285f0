// The migration runner (emulator/table/migrations.h) on both backends, through the
// Open of each (Database, PostgresDatabase), which apply the emulator's migrations and
// the application's with it: each migration commits in a transaction of its own with
// its schema_version row, so a failure or crash before a commit leaves the version
// before it and the next open completes the rest; applying twice is a no-op; a
// database newer than the binary is refused untouched, naming both releases; on
// PostgreSQL two nodes starting at once migrate once. The schemas the two dialects'
// migrations make are compared by schema_parity_test.cc.
#include "emulator/table/migrations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "emulator/env/faults.h"
#include "emulator/postgres/postgres_database.h"
#include "emulator/sqlite/database.h"
#include "emulator/table/connection.h"
#include "src/app/schema.h"
#include "tests/support/postgres_test_server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// What an open is given, on either backend: Migrating(app).To(version).With(&faults).
struct MigrationRun {
  std::vector<Migration> migrations;  // the application's, in the backend's SQL
  std::string release = "0.1.0";
  FaultInjector* faults = nullptr;
  std::optional<int> target_version;  // none: every migration

  MigrationRun& By(std::string r) {
    release = std::move(r);
    return *this;
  }
  MigrationRun& With(FaultInjector* f) {
    faults = f;
    return *this;
  }
  MigrationRun& To(int version) {
    target_version = version;
    return *this;
  }
};

MigrationRun Migrating(std::vector<Migration> app = {}) {
  MigrationRun run;
  run.migrations = std::move(app);
  return run;
}

// An open database and the version its open left in force.
struct MigratedDatabase {
  std::unique_ptr<Transactions> db;
  int version = 0;
};

class MigrationsTest : public ::testing::TestWithParam<testing::Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == testing::Backend::kPostgres) {
      server_ = std::make_unique<testing::PostgresTestDatabase>(
          ::testing::UnitTest::GetInstance()->current_test_info()->name());
      ASSERT_FALSE(server_->conninfo().empty());
    }
  }

  SqlDialect dialect() const {
    return GetParam() == testing::Backend::kPostgres ? SqlDialect::kPostgres
                                                     : SqlDialect::kSqlite;
  }
  // The SQL type of a small integer column, in this backend's dialect.
  const char* IntegerType() const {
    return dialect() == SqlDialect::kPostgres ? "bigint" : "INTEGER";
  }
  const std::vector<Migration>& EmulatorList() const {
    return EmulatorMigrations(dialect());
  }
  int NewestEmulatorVersion() const { return EmulatorList().back().version; }

  // Database::Open or PostgresDatabase::Open on this test's database.
  Result<MigratedDatabase> Open(const MigrationRun& run) {
    MigratedDatabase opened;
    if (GetParam() == testing::Backend::kSqlite) {
      Database::Options options;
      options.path = dir_.File("sheetlog.db");
      options.sync = SyncMode::kOff;
      options.migrations = run.migrations;
      options.release = run.release;
      options.faults = run.faults;
      options.target_version = run.target_version;
      ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(options));
      opened.version = db->schema_version();
      opened.db = std::move(db);
    } else {
      PostgresDatabase::Options options;
      options.conninfo = server_->conninfo();
      options.migrations = run.migrations;
      options.release = run.release;
      options.faults = run.faults;
      options.target_version = run.target_version;
      ASSIGN_OR_RETURN(std::unique_ptr<PostgresDatabase> db,
                       PostgresDatabase::Open(options));
      opened.version = db->schema_version();
      opened.db = std::move(db);
    }
    return opened;
  }

  // The first value of the first row of `sql` (an integer), or -1.
  static int64_t SelectInt(Transactions& db, const std::string& sql,
                           std::vector<Value> params = {}) {
    int64_t value = -1;
    EXPECT_OK(db.Read([&](Connection& c) -> Status {
      return c
          .RunSql(sql, params,
                  [&](const SqlRow& row) {
                    value = row.Int(0);
                    return false;
                  })
          .status();
    }));
    return value;
  }

  int64_t SchemaVersionRows(Transactions& db) {
    return SelectInt(db, "SELECT COUNT(*) FROM schema_version");
  }

  bool TableExists(Transactions& db, const std::string& table) {
    const char* sql =
        dialect() == SqlDialect::kPostgres
            ? "SELECT COUNT(*) FROM pg_tables WHERE schemaname = current_schema()"
              " AND tablename = ?1"
            : "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1";
    return SelectInt(db, sql, {Value(table)}) > 0;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::PostgresTestDatabase> server_;  // PostgreSQL only
};

INSTANTIATE_TEST_SUITE_P(Sqlite, MigrationsTest,
                         ::testing::Values(testing::Backend::kSqlite));
INSTANTIATE_TEST_SUITE_P(Postgres, MigrationsTest,
                         ::testing::Values(testing::Backend::kPostgres));

TEST_P(MigrationsTest, ApplyOnceAndRecordEachVersionWithItsRelease) {
  {
    Result<MigratedDatabase> first = Open(Migrating());
    ASSERT_OK(first);
    EXPECT_EQ(first->version, NewestEmulatorVersion());
  }
  Result<MigratedDatabase> again = Open(Migrating().By("0.2.0"));  // a no-op
  ASSERT_OK(again);
  EXPECT_EQ(again->version, NewestEmulatorVersion());
  EXPECT_EQ(SchemaVersionRows(*again->db), static_cast<int64_t>(EmulatorList().size()));
  EXPECT_EQ(SelectInt(*again->db,
                      "SELECT COUNT(*) FROM schema_version WHERE release = '0.1.0'"),
            static_cast<int64_t>(EmulatorList().size()))
      << "every row names the release that applied it";
}

// The application hands its own migrations to Open: they run in one version order with
// the emulator's, and a version both lists claim is refused before anything is applied.
TEST_P(MigrationsTest, ApplicationMigrationsJoinTheEmulatorsInVersionOrder) {
  const int newest = NewestEmulatorVersion();
  const std::string app_sql = std::string("CREATE TABLE app (x ") + IntegerType() + ")";
  // Listed out of order: the second needs the first.
  Result<MigratedDatabase> db = Open(
      Migrating({{newest + 2, "later_app.sql", "CREATE TABLE later AS SELECT * FROM app"},
                 {newest + 1, "app.sql", app_sql.c_str()}}));
  ASSERT_OK(db);
  EXPECT_EQ(db->version, newest + 2);
  EXPECT_TRUE(TableExists(*db->db, "app"));
  EXPECT_TRUE(TableExists(*db->db, "later"));
  EXPECT_TRUE(TableExists(*db->db, "queue"));  // the emulator's own tables are there too
  db->db.reset();

  const Migration clash = {EmulatorList().front().version, "clash.sql", "SELECT 1"};
  EXPECT_THAT(Open(Migrating({clash})).status(),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("clash.sql")));
}

TEST_P(MigrationsTest, ANewerDatabaseIsRefusedUntouchedNamingBothReleases) {
  const Migration future = {9999, "9999_future.sql", "SELECT 1"};
  {
    Result<MigratedDatabase> db = Open(Migrating());
    ASSERT_OK(db);
    ASSERT_OK(db->db->Write([](Connection& c) {
      return c
          .RunSql(
              "INSERT INTO schema_version (version, name, release)"
              " VALUES (9999, '9999_future.sql', '9.9.0')",
              {})
          .status();
    }));
  }
  // This release has a migration pending too: it must not be applied.
  const std::string app_sql = std::string("CREATE TABLE app (x ") + IntegerType() + ")";
  const Migration app = {NewestEmulatorVersion() + 1, "app.sql", app_sql.c_str()};
  EXPECT_THAT(
      Open(Migrating({app})).status(),
      StatusIs(
          StatusCode::kFailedPrecondition,
          AllOf(
              HasSubstr("newer than this binary"), HasSubstr("schema version 9999"),
              HasSubstr("written by sheetlog 9.9.0"), HasSubstr("this is sheetlog 0.1.0"),
              HasSubstr("knows schema versions up to " + std::to_string(app.version)))));
  EXPECT_THAT(
      Open(Migrating({app}).By("")).status(),
      StatusIs(StatusCode::kFailedPrecondition, HasSubstr("this is sheetlog (unknown)")))
      << "refused again: nothing was changed";
  EXPECT_THAT(Open(Migrating({app}).To(0)).status(),
              StatusIs(StatusCode::kFailedPrecondition))
      << "whatever the target";

  // The release that wrote it opens it; nothing of the refused ones is there.
  Result<MigratedDatabase> newer = Open(Migrating({future}));
  ASSERT_OK(newer);
  EXPECT_EQ(newer->version, 9999);
  EXPECT_FALSE(TableExists(*newer->db, "app"));
  EXPECT_EQ(SchemaVersionRows(*newer->db),
            static_cast<int64_t>(EmulatorList().size() + 1));
  // Without the future row, this release opens it and applies its own.
  ASSERT_OK(newer->db->Write([](Connection& c) {
    return c.RunSql("DELETE FROM schema_version WHERE version = 9999", {}).status();
  }));
  newer->db.reset();
  Result<MigratedDatabase> db = Open(Migrating({app}));
  ASSERT_OK(db);
  EXPECT_EQ(db->version, app.version);
  EXPECT_TRUE(TableExists(*db->db, "app"));
}

// Each migration is a transaction of its own: a fault before the commit of version k
// (after its statements and its schema_version row) leaves the database at the version
// before k, and the next open applies k and the rest. Every migration of the
// emulator's and the application's lists, in this backend's SQL, in turn.
TEST_P(MigrationsTest, AFaultBeforeAMigrationsCommitLeavesThePreviousVersion) {
  std::vector<Migration> all = EmulatorList();
  const std::vector<Migration>& app = SheetlogMigrations(dialect());
  all.insert(all.end(), app.begin(), app.end());
  std::sort(all.begin(), all.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  int previous = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Migration& m = all[i];
    SCOPED_TRACE(m.name);
    FaultInjector faults;
    faults.Arm(FaultPoint::kMigrationBeforeCommit, FaultSpec{});  // the next hit, once
    EXPECT_THAT(Open(Migrating(app).With(&faults)).status(),
                StatusIs(StatusCode::kUnavailable,
                         HasSubstr(std::string("applying migration ") + m.name)));
    EXPECT_EQ(faults.FiredCount(FaultPoint::kMigrationBeforeCommit), 1);
    // Still at the one before (an open that may apply nothing past it says so).
    Result<MigratedDatabase> before = Open(Migrating(app).To(previous));
    ASSERT_OK(before);
    EXPECT_EQ(before->version, previous);
    EXPECT_EQ(SchemaVersionRows(*before->db), static_cast<int64_t>(i));
    before->db.reset();
    // The next open applies it.
    Result<MigratedDatabase> after = Open(Migrating(app).To(m.version));
    ASSERT_OK(after);
    EXPECT_EQ(after->version, m.version);
    previous = m.version;
  }
  Result<MigratedDatabase> done = Open(Migrating(app));
  ASSERT_OK(done);
  EXPECT_EQ(done->version, all.back().version);
  EXPECT_EQ(SchemaVersionRows(*done->db), static_cast<int64_t>(all.size()));
}

// What a migration made is rolled back with it (its tables too), and the ones before it
// stay.
TEST_P(MigrationsTest, AnInterruptedMigrationLeavesNothingOfItselfAndIsAppliedNext) {
  const int base = NewestEmulatorVersion();
  const std::string first = std::string("CREATE TABLE first (x ") + IntegerType() + ")";
  const std::string second = std::string("CREATE TABLE second (x ") + IntegerType() + ")";
  const std::vector<Migration> app = {{base + 1, "first.sql", first.c_str()},
                                      {base + 2, "second.sql", second.c_str()}};
  ASSERT_OK(Open(Migrating(app).To(base + 1)));
  FaultInjector faults;
  faults.Arm(FaultPoint::kMigrationBeforeCommit, FaultSpec{});
  EXPECT_THAT(Open(Migrating(app).With(&faults)).status(),
              StatusIs(StatusCode::kUnavailable, HasSubstr("second.sql")));
  {
    Result<MigratedDatabase> db = Open(Migrating(app).To(base + 1));
    ASSERT_OK(db);
    EXPECT_EQ(db->version, base + 1);
    EXPECT_TRUE(TableExists(*db->db, "first"));
    EXPECT_FALSE(TableExists(*db->db, "second")) << "rolled back with its version row";
    EXPECT_EQ(SchemaVersionRows(*db->db),
              static_cast<int64_t>(EmulatorList().size() + 1));
  }
  Result<MigratedDatabase> db = Open(Migrating(app));
  ASSERT_OK(db);
  EXPECT_EQ(db->version, base + 2);
  EXPECT_TRUE(TableExists(*db->db, "second"));
  EXPECT_EQ(SchemaVersionRows(*db->db), static_cast<int64_t>(EmulatorList().size() + 2));
}

// A migration that fails is rolled back; the ones before it committed on their own,
// and stay.
TEST_P(MigrationsTest, AFailedMigrationKeepsTheOnesBeforeIt) {
  const int base = NewestEmulatorVersion();
  const std::string first = std::string("CREATE TABLE first (x ") + IntegerType() + ")";
  Result<MigratedDatabase> failed =
      Open(Migrating({{base + 1, "first.sql", first.c_str()},
                      {base + 2, "bad.sql", "ALTER TABLE nope ADD COLUMN x TEXT"}}));
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr("applying migration bad.sql"));
  Result<MigratedDatabase> db = Open(Migrating({{base + 1, "first.sql", first.c_str()}}));
  ASSERT_OK(db);
  EXPECT_EQ(db->version, base + 1);
  EXPECT_TRUE(TableExists(*db->db, "first"));
  EXPECT_EQ(SchemaVersionRows(*db->db), static_cast<int64_t>(EmulatorList().size() + 1));
}

// Nodes starting together on an empty database: the migration lock makes the second
// wait for each migration and then find it applied (applying one twice would fail on
// its schema_version row's key).
TEST_P(MigrationsTest, NodesStartingAtOnceMigrateOnce) {
  if (GetParam() == testing::Backend::kSqlite) {
    GTEST_SKIP() << "one process opens a SQLite file";
  }
  const std::vector<Migration>& app = SheetlogMigrations(dialect());
  constexpr int kNodes = 4;
  std::vector<Result<MigratedDatabase>> opened;
  for (int i = 0; i < kNodes; ++i) opened.emplace_back(Internal("not opened"));
  std::vector<std::thread> nodes;
  for (int i = 0; i < kNodes; ++i) {
    nodes.emplace_back([&, i] { opened[i] = Open(Migrating(app)); });
  }
  for (std::thread& node : nodes) node.join();
  // The newest version of the emulator's and the application's, together.
  int newest = app.back().version;
  for (const Migration& m : EmulatorList()) newest = std::max(newest, m.version);
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_OK(opened[i]) << "node " << i;
    EXPECT_EQ(opened[i]->version, newest);
  }
  EXPECT_EQ(SchemaVersionRows(*opened[0]->db),
            static_cast<int64_t>(EmulatorList().size() + app.size()));
}

}  // namespace
}  // namespace sheetlog
