#include "emulator/sqlite/database.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <optional>
#include <thread>
#include <vector>

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
  EXPECT_TRUE(db.Read([&](SqliteConnection& c) {
                  ASSIGN_OR_RETURN(Statement s,
                                   c.Prepare("SELECT COUNT(*) FROM " + table));
                  ASSIGN_OR_RETURN(bool row, s.Step());
                  n = row ? s.ColumnInt(0) : -1;
                  return Status::OK();
                }).ok());
  return n;
}

// Migrations (each in its own transaction, the newer-database refusal, the
// application's joining the emulator's): migrations_test.cc, on both backends.

TEST(DatabaseTest, FailedWorkRollsBackOnlyItself) {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  ASSERT_TRUE(db->Write([](SqliteConnection& c) {
                  return c.Exec("CREATE TABLE t (x INTEGER)");
                }).ok());
  Status failed = db->Write([](SqliteConnection& c) {
    RETURN_IF_ERROR(c.Exec("INSERT INTO t VALUES (1)"));
    return ConditionFailed("lost the race");
  });
  EXPECT_TRUE(failed.IsConditionFailed());
  EXPECT_TRUE(db->Write([](SqliteConnection& c) {
                  return c.Exec("INSERT INTO t VALUES (2)");
                }).ok());
  EXPECT_EQ(CountRows(*db, "t"), 1);
}

TEST(DatabaseTest, ConcurrentWritersAreGroupedAndAllCommit) {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  ASSERT_TRUE(db->Write([](SqliteConnection& c) {
                  return c.Exec("CREATE TABLE t (x INTEGER)");
                }).ok());
  // The writes before the threads': the table's and the migrations' (one each).
  const int64_t writes_before = db->stats().writes;
  constexpr int kThreads = 8, kPerThread = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        Status s = db->Write([&](SqliteConnection& c) {
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
  EXPECT_EQ(stats.writes, writes_before + kThreads * kPerThread);
  EXPECT_LE(stats.batches, stats.writes);
}

TEST(DatabaseTest, ReadersSeeOnlyCommittedState) {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  ASSERT_TRUE(db->Write([](SqliteConnection& c) {
                  return c.Exec("CREATE TABLE t (x INTEGER)");
                }).ok());
  Status s = db->Write([&](SqliteConnection& c) {
    RETURN_IF_ERROR(c.Exec("INSERT INTO t VALUES (1)"));
    // Inside the write transaction, a reader still sees the table empty.
    EXPECT_EQ(CountRows(*db, "t"), 0);
    return Status::OK();
  });
  ASSERT_OK(s);
  EXPECT_EQ(CountRows(*db, "t"), 1);
}

// Holds a synchronous writer inside its work, so that writes made meanwhile queue
// behind it, until Release().
class HeldLeader {
 public:
  explicit HeldLeader(Database& db) {
    thread_ = std::thread([&db, this] {
      status_ = db.Write([this](SqliteConnection& c) {
        entered_.set_value();
        release_.get_future().wait();
        return c.Exec("INSERT INTO t VALUES (0)");
      });
    });
    entered_.get_future().wait();
  }
  ~HeldLeader() { (void)Release(); }
  Status Release() {
    if (thread_.joinable()) {
      release_.set_value();
      thread_.join();
    }
    return status_;
  }

 private:
  std::promise<void> entered_, release_;
  std::thread thread_;
  Status status_;
};

Database::WorkFn InsertRow(int x) {
  return [x](Connection& conn) {
    auto& c = static_cast<SqliteConnection&>(conn);
    ASSIGN_OR_RETURN(Statement st, c.Prepare("INSERT INTO t VALUES (?)"));
    return st.Bind(1, x).Run();
  };
}

std::unique_ptr<Database> OpenDbWithTable(const testing::TempDir& dir) {
  std::unique_ptr<Database> db = OpenDb(dir);
  EXPECT_TRUE(db->Write([](SqliteConnection& c) {
                  return c.Exec("CREATE TABLE t (x INTEGER)");
                }).ok());
  return db;
}

TEST(DatabaseTest, AsyncWriteWithNoCommitInProgressCommitsBeforeReturning) {
  testing::TempDir dir;
  auto db = OpenDbWithTable(dir);
  std::optional<Status> outcome;
  std::thread::id done_on;
  db->WriteAsync(InsertRow(1), [&](Status s) {
    outcome = s;
    done_on = std::this_thread::get_id();
  });
  ASSERT_TRUE(outcome.has_value());
  EXPECT_OK(*outcome);
  EXPECT_EQ(done_on, std::this_thread::get_id());
  EXPECT_EQ(CountRows(*db, "t"), 1);
}

TEST(DatabaseTest, AsyncWritesQueuedBehindALeaderReturnAtOnceAndCommitLater) {
  testing::TempDir dir;
  auto db = OpenDbWithTable(dir);
  HeldLeader leader(*db);
  std::promise<Status> first, second;
  std::atomic<int> dones{0};
  std::thread::id second_done_on;
  db->WriteAsync(InsertRow(1), [&](Status s) {
    ++dones;
    first.set_value(s);
  });
  db->WriteAsync(
      [](SqliteConnection& c) {
        RETURN_IF_ERROR(c.Exec("INSERT INTO t VALUES (2)"));
        return ConditionFailed("lost the race");
      },
      [&](Status s) {
        ++dones;
        second_done_on = std::this_thread::get_id();
        second.set_value(s);
      });
  // Both calls returned while the leader still holds its transaction.
  EXPECT_EQ(dones.load(), 0);
  EXPECT_EQ(CountRows(*db, "t"), 0);
  EXPECT_OK(leader.Release());
  EXPECT_OK(first.get_future().get());
  // A failed work rolls back only itself, and its caller hears why.
  EXPECT_TRUE(second.get_future().get().IsConditionFailed());
  EXPECT_NE(second_done_on, std::this_thread::get_id());
  EXPECT_EQ(CountRows(*db, "t"), 2);  // the leader's row and the first async one
}

TEST(DatabaseTest, AsyncDoneMayWriteSynchronouslyWithoutDeadlock) {
  testing::TempDir dir;
  auto db = OpenDbWithTable(dir);
  HeldLeader leader(*db);
  std::promise<Status> nested;
  db->WriteAsync(InsertRow(1), [&](Status) {
    // Runs on the committing thread after it passed the lead on.
    nested.set_value(db->Write(InsertRow(2)));
  });
  db->WriteAsync(InsertRow(3), [](Status) {});  // more work queued behind it
  EXPECT_OK(leader.Release());
  EXPECT_OK(nested.get_future().get());
  // A synchronous writer queued behind asynchronous ones still gets its turn.
  EXPECT_OK(db->Write(InsertRow(4)));
  EXPECT_EQ(CountRows(*db, "t"), 5);
}

// A synchronous writer that finds no leader while more asynchronous writes than one
// batch holds are queued (the committer is busy in a `done`) leads from behind them:
// its own write is in the batch it commits before it returns.
TEST(DatabaseTest, SyncWriterLeadingFromBehindQueuedAsyncWritesCommitsItsOwnWrite) {
  testing::TempDir dir;
  Database::Options options;
  options.path = dir.File("sheetlog.db");
  options.max_batch = 2;
  auto opened = Database::Open(options);
  ASSERT_OK(opened);
  std::unique_ptr<Database> db = std::move(opened).value();
  ASSERT_OK(db->Write(
      [](SqliteConnection& c) { return c.Exec("CREATE TABLE t (x INTEGER)"); }));
  std::promise<void> in_done, gate;
  std::shared_future<void> gate_open = gate.get_future().share();
  std::atomic<int> dones{0};
  {
    HeldLeader leader(*db);
    db->WriteAsync(InsertRow(1), [&](Status) {
      in_done.set_value();
      gate_open.wait();  // holds the committer, with the lead released
      ++dones;
    });
    for (int x = 2; x <= 5; ++x) db->WriteAsync(InsertRow(x), [&](Status) { ++dones; });
    EXPECT_OK(leader.Release());
  }
  in_done.get_future().wait();  // writes 1 and 2 committed; 3, 4, 5 queued
  ASSERT_OK(db->Write(InsertRow(100)));
  int64_t mine = -1;
  ASSERT_OK(db->Read([&](SqliteConnection& c) {
    ASSIGN_OR_RETURN(Statement st, c.Prepare("SELECT COUNT(*) FROM t WHERE x = 100"));
    ASSIGN_OR_RETURN(bool row, st.Step());
    mine = row ? st.ColumnInt(0) : -1;
    return Status::OK();
  }));
  EXPECT_EQ(mine, 1);
  gate.set_value();
  db.reset();  // the committer finishes the rest
  EXPECT_EQ(dones.load(), 5);
}

TEST(DatabaseTest, DestructorFinishesTheWritesLeftToTheCommitter) {
  testing::TempDir dir;
  std::atomic<int> committed{0};
  constexpr int kWrites = 50;
  {
    auto db = OpenDbWithTable(dir);
    HeldLeader leader(*db);
    for (int i = 0; i < kWrites; ++i) {
      db->WriteAsync(InsertRow(i), [&](Status s) {
        if (s.ok()) ++committed;
      });
    }
    EXPECT_OK(leader.Release());
  }
  EXPECT_EQ(committed.load(), kWrites);
  auto reopened = OpenDb(dir);
  EXPECT_EQ(CountRows(*reopened, "t"), kWrites + 1);
}

}  // namespace
}  // namespace sheetlog
