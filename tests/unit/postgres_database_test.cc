// PostgresDatabase itself, against the test PostgreSQL server (ctest's postgres
// fixture): conditional appends racing across two processes' worth of connections,
// migrations and schema versions, and the database unreachable or lost. The table
// operations' conformance tests are table_test.cc's Postgres/TableTest.*.
#include "emulator/postgres/postgres_database.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <set>
#include <thread>
#include <vector>

#include "emulator/table/table.h"
#include "tests/support/postgres_test_server.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

constexpr const char* kAppendLogSql =
    "CREATE TABLE entry (sheet text COLLATE \"C\" NOT NULL, seq bigint NOT NULL,"
    " writer text NOT NULL, PRIMARY KEY (sheet, seq))";

const Table& AppendLog() {
  static const Table table(TableSchema{
      "entry", {"sheet"}, {"seq"}, {{"sheet", "S"}, {"seq", "Q"}, {"writer", "W"}}});
  return table;
}

// Every entry of `sheet`, in seq order (one unpaged query).
std::vector<Item> AppendsOf(PostgresDatabase& db, const std::string& sheet) {
  std::vector<Item> items;
  EXPECT_OK(db.Read([&](Connection& c) -> Status {
    QueryRequest all;
    all.partition = {sheet};
    ASSIGN_OR_RETURN(QueryResult r, AppendLog().Query(c, all, nullptr));
    items = std::move(r.items);
    return Status::OK();
  }));
  return items;
}

// The version of this test's first application migration: after the emulator's own
// (EmulatorPostgresMigrations), as schema/'s come after the tables they need.
int FirstAppVersion() {
  int newest = 0;
  for (const Migration& m : EmulatorPostgresMigrations()) {
    newest = std::max(newest, m.version);
  }
  return newest + 1;
}

class PostgresDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(database_.conninfo().empty()); }

  PostgresDatabase::Options Options(std::vector<Migration> migrations = {
                                        {FirstAppVersion(), "001_entry",
                                         kAppendLogSql}}) {
    PostgresDatabase::Options options;
    options.conninfo = database_.conninfo();
    options.migrations = std::move(migrations);
    options.release = "0.1.0-test";
    return options;
  }

  std::unique_ptr<PostgresDatabase> Open() {
    auto db = PostgresDatabase::Open(Options());
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    return db.ok() ? std::move(db).value() : nullptr;
  }

  testing::PostgresTestDatabase database_{
      ::testing::UnitTest::GetInstance()->current_test_info()->name()};
};

// Seed 001's append across nodes: two databases (separate connection pools, as two
// nodes have), four writers each, every one reading the head and putting at head + 1
// if absent, retrying when another took the slot. Every acknowledged append is present
// exactly once and the sequence has no gaps.
TEST_F(PostgresDatabaseTest, ConditionalAppendsAtTheHeadRaceAcrossNodesWithoutLoss) {
  std::unique_ptr<PostgresDatabase> nodes[2] = {Open(), Open()};
  ASSERT_NE(nodes[0], nullptr);
  ASSERT_NE(nodes[1], nullptr);
  constexpr int kWritersPerNode = 4;
  constexpr int kAppendsPerWriter = 25;
  std::atomic<int> lost_races{0};
  std::vector<std::vector<int64_t>> acknowledged(2 * kWritersPerNode);
  std::vector<std::thread> writers;
  for (int w = 0; w < 2 * kWritersPerNode; ++w) {
    writers.emplace_back([&, w] {
      PostgresDatabase& db = *nodes[w % 2];
      const std::string me = "writer-" + std::to_string(w);
      for (int i = 0; i < kAppendsPerWriter; ++i) {
        while (true) {
          int64_t seq = 0;
          Status s = db.Write([&](Connection& c) -> Status {
            QueryRequest head;
            head.partition = {"sheet"};
            head.forward = false;
            head.limit = 1;
            head.consistency = Consistency::kStrong;
            ASSIGN_OR_RETURN(QueryResult last, AppendLog().Query(c, head, nullptr));
            seq = last.items.empty() ? 1 : last.items[0].at("seq").AsInt() + 1;
            return AppendLog().PutIfAbsent(
                c, {{"sheet", "sheet"}, {"seq", seq}, {"writer", me}}, nullptr);
          });
          if (s.IsConditionFailed()) {
            ++lost_races;
            continue;
          }
          ASSERT_OK(s);
          acknowledged[w].push_back(seq);
          break;
        }
      }
    });
  }
  for (std::thread& t : writers) t.join();

  std::vector<Item> stored = AppendsOf(*nodes[0], "sheet");
  const int total = 2 * kWritersPerNode * kAppendsPerWriter;
  ASSERT_EQ(stored.size(), static_cast<size_t>(total));
  for (int i = 0; i < total; ++i) {
    EXPECT_EQ(stored[i].at("seq").AsInt(), i + 1);  // no gaps
  }
  std::set<int64_t> seen;
  for (int w = 0; w < 2 * kWritersPerNode; ++w) {
    for (int64_t seq : acknowledged[w]) {
      EXPECT_TRUE(seen.insert(seq).second) << "seq " << seq << " acknowledged twice";
      EXPECT_EQ(stored[seq - 1].at("writer").AsString(), "writer-" + std::to_string(w));
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(total));
  // Not asserted (it depends on scheduling), but reported: how often a slot was taken.
  std::printf("lost races: %d\n", lost_races.load());
}

TEST_F(PostgresDatabaseTest, MigrationsApplyOnceAndANewerSchemaIsRefused) {
  const int first = FirstAppVersion();
  {
    auto db = Open();
    ASSERT_NE(db, nullptr);
    EXPECT_EQ(db->schema_version(), first);
  }
  {
    auto again = Open();  // nothing left to apply
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->schema_version(), first);
  }
  // A newer release adds the next version ...
  auto newer = PostgresDatabase::Open(
      Options({{first, "001_entry", kAppendLogSql},
               {first + 1, "002_note", "ALTER TABLE entry ADD COLUMN note text"}}));
  ASSERT_OK(newer);
  EXPECT_EQ((*newer)->schema_version(), first + 1);
  newer->reset();
  // ... and this release, which knows only the first, refuses to start on it.
  auto older = PostgresDatabase::Open(Options());
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(older.status().message().find("schema version " + std::to_string(first + 1)),
            std::string::npos)
      << older.status().ToString();
  EXPECT_NE(older.status().message().find("knows schema versions up to " +
                                          std::to_string(first)),
            std::string::npos)
      << older.status().ToString();
}

TEST_F(PostgresDatabaseTest, AFailedMigrationLeavesNothingBehind) {
  auto failed = PostgresDatabase::Open(
      Options({{FirstAppVersion(), "001_entry", kAppendLogSql},
               {FirstAppVersion() + 1, "002_bad", "ALTER TABLE nope ADD x int"}}));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("002_bad"), std::string::npos)
      << failed.status().ToString();
  // The first was rolled back with it (the emulator's own with them): the table does
  // not exist.
  auto db = PostgresDatabase::Open(Options({}));
  ASSERT_OK(db);
  EXPECT_EQ((*db)->schema_version(), FirstAppVersion() - 1);
  EXPECT_FALSE((*db)
                   ->Write([](Connection& c) {
                     return AppendLog().PutIfAbsent(
                         c, {{"sheet", "s"}, {"seq", 1}, {"writer", "a"}}, nullptr);
                   })
                   .ok());
}

TEST_F(PostgresDatabaseTest, APasswordInTheConnectionStringIsRefused) {
  PostgresDatabase::Options options = Options();
  options.conninfo += " password=secret";
  auto db = PostgresDatabase::Open(options);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(db.status().message().find("secret"), std::string::npos);
  EXPECT_NE(db.status().message().find("PGPASSWORD"), std::string::npos);
}

TEST_F(PostgresDatabaseTest, AnUnreachableServerIsUnavailableNamingIt) {
  PostgresDatabase::Options options = Options();
  options.conninfo = "host=/nonexistent/sheetlog-test port=5432 dbname=x user=sheetlog";
  auto db = PostgresDatabase::Open(options);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kUnavailable) << db.status().ToString();
  EXPECT_NE(db.status().message().find("host=/nonexistent/sheetlog-test"),
            std::string::npos)
      << db.status().ToString();
}

// The server ends every session of the node (as a restart or failover does): the next
// calls connect afresh, without a restart of the node.
TEST_F(PostgresDatabaseTest, LostConnectionsAreReplacedWithoutARestart) {
  auto db = Open();
  ASSERT_NE(db, nullptr);
  ASSERT_OK(db->Write([](Connection& c) {
    return AppendLog().PutIfAbsent(c, {{"sheet", "s"}, {"seq", 1}, {"writer", "a"}},
                                   nullptr);
  }));
  {
    auto admin = PostgresConnection::Open(database_.conninfo(), 5);
    ASSERT_OK(admin);
    ASSERT_OK((*admin)->Exec(
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"));
  }
  ASSERT_OK(db->Write([](Connection& c) {
    return AppendLog().PutIfAbsent(c, {{"sheet", "s"}, {"seq", 2}, {"writer", "a"}},
                                   nullptr);
  }));
  EXPECT_EQ(AppendsOf(*db, "s").size(), 2u);
}

// A statement PostgreSQL refuses ends the transaction: later statements of the same
// Write say so, and the Write fails with nothing written.
TEST_F(PostgresDatabaseTest, ARefusedStatementEndsItsTransaction) {
  auto db = Open();
  ASSERT_NE(db, nullptr);
  Status later;
  Status s = db->Write([&](Connection& c) -> Status {
    RETURN_IF_ERROR(AppendLog().PutIfAbsent(
        c, {{"sheet", "s"}, {"seq", 1}, {"writer", "a"}}, nullptr));
    // writer is NOT NULL: a Put without it is refused by the schema.
    Status refused = AppendLog().Put(c, {{"sheet", "s"}, {"seq", 2}}, {}, nullptr);
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.ToString();
    later = AppendLog().PutIfAbsent(c, {{"sheet", "s"}, {"seq", 3}, {"writer", "a"}},
                                    nullptr);
    return Status::OK();  // the work ignores the failure; the commit does not
  });
  EXPECT_EQ(later.code(), StatusCode::kAborted) << later.ToString();
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(AppendsOf(*db, "s").empty());
}

}  // namespace
}  // namespace sheetlog
