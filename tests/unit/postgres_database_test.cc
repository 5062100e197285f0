// PostgresDatabase itself, against the test PostgreSQL server (ctest's postgres
// fixture): conditional appends racing across two processes' worth of connections,
// the database unreachable or lost, and Writes aborted by concurrency run again (a
// real deadlock; the bound); its migrations: migrations_test.cc. The table operations'
// conformance tests are table_test.cc's Postgres/TableTest.*.
#include "emulator/postgres/postgres_database.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <latch>
#include <set>
#include <thread>
#include <vector>

#include "emulator/env/clock.h"
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

// ReadEach: statements without a transaction around them, each seeing the commits
// made before it ran; Read: one state for all of them.
TEST_F(PostgresDatabaseTest, ReadEachStatementSeesWhatWasCommittedBeforeIt) {
  std::unique_ptr<PostgresDatabase> db = Open();
  ASSERT_NE(db, nullptr);
  auto put = [&](int64_t seq) {
    return db->Write([&](Connection& c) {
      return AppendLog().PutIfAbsent(c, {{"sheet", "s"}, {"seq", seq}, {"writer", "w"}},
                                     nullptr);
    });
  };
  auto count = [](Connection& c) -> Result<size_t> {
    QueryRequest all;
    all.partition = {"s"};
    ASSIGN_OR_RETURN(QueryResult r, AppendLog().Query(c, all, nullptr));
    return r.items.size();
  };
  ASSERT_OK(put(1));
  std::vector<size_t> each, one_state;
  ASSERT_OK(db->ReadEach([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(size_t before, count(c));
    RETURN_IF_ERROR(put(2));  // another connection commits between the statements
    ASSIGN_OR_RETURN(size_t after, count(c));
    each = {before, after};
    return Status::OK();
  }));
  EXPECT_EQ(each, (std::vector<size_t>{1, 2}));
  ASSERT_OK(db->Read([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(size_t before, count(c));
    RETURN_IF_ERROR(put(3));
    ASSIGN_OR_RETURN(size_t after, count(c));
    one_state = {before, after};
    return Status::OK();
  }));
  EXPECT_EQ(one_state, (std::vector<size_t>{2, 2}));
}

// Group commit (WriteAsync): works queued while a batch is in flight run together in
// the next one. `blocker` is the first work: it holds its batch until `release` while
// `queued` are queued behind it, so they make one batch of their own.
struct GroupCommitRun {
  std::vector<Status> outcomes;
  int64_t batches = 0;
  int64_t batched_works = 0;
};
GroupCommitRun RunQueuedBehindABlocker(PostgresDatabase& db,
                                       std::vector<Transactions::Work> queued) {
  std::latch blocker_running(1);
  std::latch release(1);
  std::atomic<int> pending{static_cast<int>(queued.size()) + 1};
  std::vector<Status> outcomes(queued.size());
  std::thread leader([&] {
    db.WriteAsync(
        [&](Connection& c) -> Status {
          blocker_running.count_down();
          release.wait();
          return AppendLog().PutIfAbsent(
              c, {{"sheet", "blocker"}, {"seq", 1}, {"writer", "blocker"}}, nullptr);
        },
        [&](Status status) {
          EXPECT_OK(status);
          --pending;
        });
  });
  blocker_running.wait();
  const int64_t batches_before = db.batches();
  const int64_t works_before = db.batched_works();
  for (size_t i = 0; i < queued.size(); ++i) {
    // Queued behind the running batch: WriteAsync returns at once.
    db.WriteAsync(queued[i], [&, i](Status status) {
      outcomes[i] = status;
      --pending;
    });
  }
  release.count_down();
  leader.join();  // the leader ran every batch before its WriteAsync returned
  EXPECT_EQ(pending.load(), 0);
  return {outcomes, db.batches() - batches_before, db.batched_works() - works_before};
}

Transactions::Work PutWork(const std::string& sheet, int64_t seq,
                           const std::string& writer) {
  return [=](Connection& c) {
    return AppendLog().PutIfAbsent(
        c, {{"sheet", sheet}, {"seq", seq}, {"writer", writer}}, nullptr);
  };
}

// A batch where one work fails having written nothing (a lost condition: the slot is
// taken by an earlier work of the same batch, whose write it sees): it fails alone, and
// the others commit together, in one transaction.
TEST_F(PostgresDatabaseTest, AWorkThatFailsWithoutWritingFailsAloneInItsBatch) {
  std::unique_ptr<PostgresDatabase> db = Open();
  ASSERT_NE(db, nullptr);
  std::atomic<int> runs_of_a{0};
  Transactions::Work a = [&](Connection& c) {
    ++runs_of_a;
    return PutWork("s", 1, "a")(c);
  };
  GroupCommitRun run = RunQueuedBehindABlocker(
      *db, {a, PutWork("s", 1, "loser"), PutWork("s", 2, "b"), PutWork("t", 1, "c")});
  EXPECT_EQ(runs_of_a.load(), 1) << "the batch committed as one: nothing ran again";
  EXPECT_OK(run.outcomes[0]);
  EXPECT_TRUE(run.outcomes[1].IsConditionFailed()) << run.outcomes[1].ToString();
  EXPECT_OK(run.outcomes[2]);
  EXPECT_OK(run.outcomes[3]);
  EXPECT_EQ(run.batches, 1) << "the four queued works made one batch";
  EXPECT_EQ(run.batched_works, 4);
  std::vector<Item> s = AppendsOf(*db, "s");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].at("writer").AsString(), "a");
  EXPECT_EQ(s[1].at("writer").AsString(), "b");
  EXPECT_EQ(AppendsOf(*db, "t").size(), 1u);
}

// A work that fails after writing cannot be taken out of the batch's transaction
// alone: the batch is rolled back and every work runs on its own. The failing one's
// write is gone; the others committed once each.
TEST_F(PostgresDatabaseTest, AWorkThatFailsAfterWritingSendsItsBatchOneByOne) {
  std::unique_ptr<PostgresDatabase> db = Open();
  ASSERT_NE(db, nullptr);
  std::atomic<int> runs_of_a{0};
  Transactions::Work a = [&](Connection& c) {
    ++runs_of_a;
    return AppendLog().PutIfAbsent(c, {{"sheet", "s"}, {"seq", 1}, {"writer", "a"}},
                                   nullptr);
  };
  Transactions::Work wrote_then_failed = [](Connection& c) -> Status {
    RETURN_IF_ERROR(AppendLog().PutIfAbsent(
        c, {{"sheet", "u"}, {"seq", 1}, {"writer", "half"}}, nullptr));
    return InvalidArgument("refused after its write");
  };
  GroupCommitRun run =
      RunQueuedBehindABlocker(*db, {a, wrote_then_failed, PutWork("s", 2, "b")});
  EXPECT_OK(run.outcomes[0]);
  EXPECT_EQ(run.outcomes[1].code(), StatusCode::kInvalidArgument);
  EXPECT_OK(run.outcomes[2]);
  EXPECT_EQ(runs_of_a.load(), 2) << "once in the batch, once on its own";
  EXPECT_EQ(AppendsOf(*db, "s").size(), 2u);
  EXPECT_TRUE(AppendsOf(*db, "u").empty()) << "the failed work's write was rolled back";
}

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

// Migrations (each in its own transaction under the advisory lock, the newer-schema
// refusal, nodes starting at once): migrations_test.cc's Postgres/MigrationsTest.

TEST_F(PostgresDatabaseTest, APasswordInTheConnectionStringIsRefused) {
  PostgresDatabase::Options options = Options();
  options.conninfo += " password=secret";
  auto db = PostgresDatabase::Open(options);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(db.status().message().find("secret"), std::string::npos);
  EXPECT_NE(db.status().message().find("PGPASSWORD"), std::string::npos);
}

// The operator learns where (the detail, and ToString, which `serve` prints when it
// cannot start); the message, which is all an HTTP client ever sees, does not say.
TEST_F(PostgresDatabaseTest, AnUnreachableServerIsUnavailableNamingItToTheOperatorOnly) {
  PostgresDatabase::Options options = Options();
  options.conninfo = "host=/nonexistent/sheetlog-test port=5432 dbname=x user=sheetlog";
  auto db = PostgresDatabase::Open(options);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kUnavailable) << db.status().ToString();
  EXPECT_NE(db.status().detail().find("host=/nonexistent/sheetlog-test"),
            std::string::npos)
      << db.status().ToString();
  EXPECT_NE(db.status().ToString().find("host=/nonexistent/sheetlog-test"),
            std::string::npos);
  EXPECT_EQ(db.status().message().find("/nonexistent"), std::string::npos)
      << db.status().message();
  EXPECT_NE(db.status().message().find("PostgreSQL"), std::string::npos)
      << db.status().message();
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
  // The first error's code, not Aborted: nothing here is worth running again.
  EXPECT_EQ(later.code(), StatusCode::kInvalidArgument) << later.ToString();
  EXPECT_NE(later.message().find("ended by an earlier error"), std::string::npos)
      << later.ToString();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_TRUE(AppendsOf(*db, "s").empty());
}

// A real deadlock (40P01): two Writes lock the same two rows in opposite orders.
// PostgreSQL breaks it by aborting one (Aborted); the runner rolls that one back and
// runs its work again, which then waits for the other's commit: both Writes succeed,
// and the work ran three times in all (more if the run again deadlocks once more).
TEST_F(PostgresDatabaseTest, ADeadlockedWriteIsRunAgainUntilItCommits) {
  PostgresDatabase::Options options = Options();
  // The server's default is 1 s before it looks for a deadlock (the test user is the
  // cluster's superuser: scripts/postgres).
  options.conninfo += " options='-c deadlock_timeout=50'";
  auto opened = PostgresDatabase::Open(options);
  ASSERT_OK(opened);
  PostgresDatabase& db = **opened;
  ASSERT_OK(db.Write([](Connection& c) -> Status {
    RETURN_IF_ERROR(AppendLog().PutIfAbsent(
        c, {{"sheet", "s"}, {"seq", 1}, {"writer", "seed"}}, nullptr));
    return AppendLog().PutIfAbsent(c, {{"sheet", "s"}, {"seq", 2}, {"writer", "seed"}},
                                   nullptr);
  }));

  std::latch first_rows_locked(2);
  std::atomic<int> runs{0};
  auto write_in_order = [&](int64_t first, int64_t second, const std::string& me) {
    bool first_run = true;
    return db.Write([&, first, second](Connection& c) -> Status {
      ++runs;
      // Put reads its item FOR UPDATE: the row stays locked until the commit.
      RETURN_IF_ERROR(AppendLog().Put(c, {{"sheet", "s"}, {"seq", first}, {"writer", me}},
                                      {}, nullptr));
      if (first_run) {  // only the first runs meet; a second run just waits its turn
        first_run = false;
        first_rows_locked.arrive_and_wait();
      }
      return AppendLog().Put(c, {{"sheet", "s"}, {"seq", second}, {"writer", me}}, {},
                             nullptr);
    });
  };
  Status a;
  Status b;
  std::thread one([&] { a = write_in_order(1, 2, "one"); });
  std::thread two([&] { b = write_in_order(2, 1, "two"); });
  one.join();
  two.join();
  EXPECT_OK(a);
  EXPECT_OK(b);
  // At least one deadlock; on a loaded machine the run again can meet the other in a
  // second one (it may lock its first row before the survivor, woken by the abort, takes
  // it): every run beyond the two first ones is a retried abort.
  EXPECT_GE(runs.load(), 3);
  EXPECT_EQ(db.aborted_writes_retried(), runs.load() - 2);
  // Whichever committed last wrote both rows: never a mix of the two.
  std::vector<Item> rows = AppendsOf(db, "s");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("writer").AsString(), rows[1].at("writer").AsString());
}

// An aborted run leaves nothing behind: its row is rolled back, so the second run's
// put-if-absent of the same item succeeds. Other errors are the work's answer and are
// not run again.
TEST_F(PostgresDatabaseTest, AnAbortedWriteIsRolledBackAndRunAgainOtherErrorsAreNot) {
  auto db = Open();
  ASSERT_NE(db, nullptr);
  int runs = 0;
  ASSERT_OK(db->Write([&](Connection& c) -> Status {
    ++runs;
    RETURN_IF_ERROR(AppendLog().PutIfAbsent(
        c, {{"sheet", "s"}, {"seq", 1}, {"writer", "w" + std::to_string(runs)}},
        nullptr));
    if (runs == 1) return Aborted("the item changed under the first run");
    return Status::OK();
  }));
  EXPECT_EQ(runs, 2);
  std::vector<Item> rows = AppendsOf(*db, "s");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].at("writer").AsString(), "w2");

  for (const Status& answer : {ConditionFailed("lost"), Unavailable("busy"),
                               InvalidArgument("bad"), Internal("bug")}) {
    runs = 0;
    Status s = db->Write([&](Connection&) -> Status {
      ++runs;
      return answer;
    });
    EXPECT_EQ(s.code(), answer.code()) << s.ToString();
    EXPECT_EQ(runs, 1) << answer.ToString();
  }
  EXPECT_EQ(db->aborted_writes_retried(), 1);
}

// A work aborted on every run: after write_attempts runs the Write returns Aborted
// with nothing written. The backoff between runs sleeps on the injected clock (a
// ManualClock here: it advances instead of sleeping), within its jitter's bounds.
TEST_F(PostgresDatabaseTest, AWriteAbortedOnEveryAttemptReturnsAbortedAfterTheBound) {
  ManualClock clock;
  PostgresDatabase::Options options = Options();
  options.clock = &clock;
  options.write_attempts = 4;
  options.abort_backoff_base_micros = 1000;
  options.abort_backoff_cap_micros = 3000;
  auto opened = PostgresDatabase::Open(options);
  ASSERT_OK(opened);
  PostgresDatabase& db = **opened;
  const int64_t before = clock.NowMicros();
  int runs = 0;
  Status s = db.Write([&](Connection& c) -> Status {
    ++runs;
    RETURN_IF_ERROR(AppendLog().PutIfAbsent(
        c, {{"sheet", "s"}, {"seq", runs}, {"writer", "w"}}, nullptr));
    return Aborted("deadlock detected (simulated)");
  });
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_EQ(runs, 4);
  EXPECT_EQ(db.aborted_writes_retried(), 3);
  EXPECT_TRUE(AppendsOf(db, "s").empty());
  // Three waits: at most 1 ms, 2 ms, 3 ms (the cap).
  EXPECT_LE(clock.NowMicros() - before, 1000 + 2000 + 3000);

  // write_attempts 1: never run again.
  options.write_attempts = 1;
  auto once = PostgresDatabase::Open(options);
  ASSERT_OK(once);
  runs = 0;
  Status aborted = (*once)->Write([&](Connection&) -> Status {
    ++runs;
    return Aborted("serialization failure (simulated)");
  });
  EXPECT_EQ(aborted.code(), StatusCode::kAborted) << aborted.ToString();
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace sheetlog
