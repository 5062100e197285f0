#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/postgres/postgres_database.h"
#include "emulator/runtime/cluster_membership.h"
#include "emulator/runtime/execution_history.h"
#include "tests/support/offset_clock.h"
#include "tests/support/postgres_test_server.h"
#include "tests/support/server_process.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

constexpr int64_t kBudget = 900LL * 1000000;

using testing::Backend;

// Every case runs on both backends from one source: Sqlite/ExecutionHistoryTest.* and
// Postgres/ExecutionHistoryTest.* (the latter on ctest's throwaway server).
class ExecutionHistoryTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    db_ = std::make_unique<testing::BackendTestDatabase>(
        GetParam(), dir_.File("sheetlog.db"), &clock_);
    ASSERT_NE(db_->get(), nullptr);
    membership_ = std::make_unique<ClusterMembership>(db_->get(), &clock_);
    history_ = std::make_unique<ExecutionHistory>(db_->get(), &clock_, &faults_,
                                                  membership_.get());
  }

  Claim MustBegin(const std::string& key) {
    auto claim = history_->Begin({key, "test", "inv", ""}, kBudget);
    EXPECT_OK(claim);
    return claim.ok() ? *claim : Claim{};
  }

  std::vector<ExecutionRow> Rows(const std::string& key) {
    auto rows = history_->List(key);
    EXPECT_OK(rows);
    return rows.ok() ? *rows : std::vector<ExecutionRow>{};
  }

  testing::TempDir dir_;
  ManualClock clock_;
  FaultInjector faults_{&clock_};
  std::unique_ptr<testing::BackendTestDatabase> db_;
  // This node's lease (none until a case starts it); history_ judges other owners'
  // rows by it.
  std::unique_ptr<ClusterMembership> membership_;
  std::unique_ptr<ExecutionHistory> history_;
};

TEST_P(ExecutionHistoryTest, SeedTableFailedThenReplayedToSuccess) {
  const int64_t t0 = clock_.NowMicros();
  Claim first = MustBegin("job1");
  ASSERT_EQ(first.outcome, BeginOutcome::kProceed);
  EXPECT_EQ(first.sequence, 1);
  EXPECT_FALSE(first.latest.has_value());
  clock_.AdvanceSeconds(60);
  ASSERT_OK(history_->Finish(first, ExecStatus::kFailed, "boom"));

  auto failed = history_->ListFailed(t0, clock_.NowMicros() + 1);
  ASSERT_OK(failed);
  ASSERT_EQ(failed->size(), 1u);
  EXPECT_EQ((*failed)[0].partition_key, "job1");
  EXPECT_EQ((*failed)[0].error, "boom");

  clock_.AdvanceSeconds(60);
  Claim replay = MustBegin("job1");
  ASSERT_EQ(replay.outcome, BeginOutcome::kProceed);
  EXPECT_EQ(replay.sequence, 3);
  ASSERT_OK(history_->Finish(replay, ExecStatus::kSucceeded));

  std::vector<ExecutionRow> rows = Rows("job1");
  ASSERT_EQ(rows.size(), 4u);
  const ExecStatus expected[] = {ExecStatus::kStarted, ExecStatus::kFailed,
                                 ExecStatus::kStarted, ExecStatus::kSucceeded};
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].sequence, static_cast<int64_t>(i + 1));
    EXPECT_EQ(rows[i].atomic_counter, 1);
    EXPECT_EQ(rows[i].status, expected[i]);
    EXPECT_EQ(rows[i].source, "test");
  }
  EXPECT_EQ(rows[0].created_at, t0);
  EXPECT_EQ(rows[1].created_at, t0 + 60 * 1000000);

  // The latest row succeeded: no longer failed, and a redelivery is a duplicate.
  EXPECT_TRUE(history_->ListFailed(t0, clock_.NowMicros() + 1)->empty());
  Claim duplicate = MustBegin("job1");
  EXPECT_EQ(duplicate.outcome, BeginOutcome::kAlreadySucceeded);
  EXPECT_EQ(Rows("job1").size(), 4u);
}

// The invocation log: an outcome row stands for its invocation (with its start), a
// `started` row only while it is its key's latest; newest first, paged by cursor.
TEST_P(ExecutionHistoryTest, InvocationsAreListedNewestFirstWithTheirStart) {
  Claim a = MustBegin("a");
  clock_.AdvanceSeconds(2);
  ASSERT_OK(history_->Finish(a, ExecStatus::kSucceeded));
  clock_.AdvanceSeconds(1);
  Claim b = MustBegin("b");
  clock_.AdvanceSeconds(1);
  ASSERT_OK(history_->Finish(b, ExecStatus::kFailed, "boom"));
  clock_.AdvanceSeconds(1);
  MustBegin("c");  // still running

  InvocationQuery query;
  auto all = history_->ListInvocations(query);
  ASSERT_OK(all);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].row.partition_key, "c");
  EXPECT_EQ((*all)[0].row.status, ExecStatus::kStarted);
  EXPECT_EQ((*all)[1].row.partition_key, "b");
  EXPECT_EQ((*all)[1].row.error, "boom");
  ASSERT_TRUE((*all)[1].started_micros.has_value());
  EXPECT_EQ((*all)[1].row.created_at - *(*all)[1].started_micros, 1000000);
  EXPECT_EQ((*all)[2].row.partition_key, "a");
  EXPECT_EQ((*all)[2].row.created_at - *(*all)[2].started_micros, 2000000);

  query.limit = 1;
  query.before_micros = (*all)[0].row.created_at;
  query.before_key = (*all)[0].row.partition_key;
  query.before_sequence = (*all)[0].row.sequence;
  auto page = history_->ListInvocations(query);
  ASSERT_OK(page);
  ASSERT_EQ(page->size(), 1u);
  EXPECT_EQ((*page)[0].row.partition_key, "b");
  InvocationQuery failed;
  failed.status = ExecStatus::kFailed;
  EXPECT_EQ(history_->ListInvocations(failed)->size(), 1u);
  failed.limit = 0;
  EXPECT_EQ(history_->ListInvocations(failed).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(ExecutionHistoryTest, YoungStartedRowMeansRunningElsewhereOldOneIsTakenOver) {
  Claim first = MustBegin("job");
  ASSERT_EQ(first.outcome, BeginOutcome::kProceed);
  clock_.AdvanceSeconds(899);
  EXPECT_EQ(MustBegin("job").outcome, BeginOutcome::kRunningElsewhere);
  clock_.AdvanceSeconds(1);  // the first invocation's budget is spent: presumed dead
  Claim takeover = MustBegin("job");
  ASSERT_EQ(takeover.outcome, BeginOutcome::kProceed);
  EXPECT_EQ(takeover.sequence, 2);

  // The first invocation comes back late: its outcome row goes after the takeover's.
  ASSERT_OK(history_->Finish(first, ExecStatus::kSucceeded));
  ASSERT_OK(history_->Finish(takeover, ExecStatus::kSucceeded));
  std::vector<ExecutionRow> rows = Rows("job");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[1].status, ExecStatus::kStarted);
  EXPECT_EQ(rows[2].status, ExecStatus::kSucceeded);
  EXPECT_EQ(rows[3].status, ExecStatus::kSucceeded);
}

// With a liveness oracle a `started` row counts as running only while its invocation
// is in the live set: a row left by a dead process is abandoned at once.
TEST_P(ExecutionHistoryTest, StartedRowOfAnInvocationThatIsNotLiveIsAbandoned) {
  LiveInvocations live;
  history_->set_live_invocations(&live);
  {
    LiveInvocation running(&live, "inv");
    ASSERT_EQ(MustBegin("job").outcome, BeginOutcome::kProceed);
    EXPECT_EQ(MustBegin("job").outcome, BeginOutcome::kRunningElsewhere)
        << "its invocation is still running";
    auto abandoned = history_->ListAbandoned(0, clock_.NowMicros() + 1, kBudget, 10);
    ASSERT_OK(abandoned);
    EXPECT_TRUE(abandoned->empty());
  }
  // The invocation is gone (its process died) with no outcome row.
  auto abandoned = history_->ListAbandoned(0, clock_.NowMicros() + 1, kBudget, 10);
  ASSERT_OK(abandoned);
  ASSERT_EQ(abandoned->size(), 1u);
  EXPECT_EQ((*abandoned)[0].partition_key, "job");
  Claim takeover = MustBegin("job");
  EXPECT_EQ(takeover.outcome, BeginOutcome::kProceed) << "no wait for the budget";
  EXPECT_EQ(takeover.sequence, 2);
}

// Another node's `started` row runs while that node's lease lasts, whatever
// this node's live set says; once the lease lapses (the node stopped renewing: killed)
// the work is abandoned and taken over.
TEST_P(ExecutionHistoryTest, AnotherOwnersStartedRowRunsWhileItsLeaseLasts) {
  const ClusterMembership::LeaseOptions lease{/*ttl_micros=*/30LL * 1000000,
                                              /*renew_every_micros=*/10LL * 1000000,
                                              /*renew_in_background=*/false, /*node=*/""};
  ClusterMembership other_node(db_->get(), &clock_);
  ExecutionHistory other(db_->get(), &clock_, nullptr, &other_node);
  LiveInvocations here, there;
  history_->set_live_invocations(&here);
  other.set_live_invocations(&there);
  ASSERT_OK(membership_->StartLease(lease));
  ASSERT_OK(other_node.StartLease(lease));
  EXPECT_NE(membership_->owner(), other_node.owner());
  EXPECT_EQ(other_node.StartLease(lease).code(), StatusCode::kFailedPrecondition);

  LiveInvocation running(&there, "theirs");
  auto theirs = other.Begin({"job", "test", "theirs", ""}, kBudget);
  ASSERT_OK(theirs);
  ASSERT_EQ(theirs->outcome, BeginOutcome::kProceed);
  EXPECT_EQ(Rows("job")[0].owner, other_node.owner());

  clock_.AdvanceSeconds(20);
  ASSERT_OK(other_node.RenewLease());  // now + 30 s
  clock_.AdvanceSeconds(29);
  EXPECT_EQ(MustBegin("job").outcome, BeginOutcome::kRunningElsewhere)
      << "not in this node's live set, but its owner's lease lasts";
  auto abandoned = history_->ListAbandoned(0, clock_.NowMicros() + 1, kBudget, 10);
  ASSERT_OK(abandoned);
  EXPECT_TRUE(abandoned->empty());

  // The other node stops renewing: its lease lapses and its work is taken over.
  clock_.AdvanceSeconds(1);
  abandoned = history_->ListAbandoned(0, clock_.NowMicros() + 1, kBudget, 10);
  ASSERT_OK(abandoned);
  ASSERT_EQ(abandoned->size(), 1u);
  EXPECT_EQ((*abandoned)[0].owner, other_node.owner());
  Claim takeover = MustBegin("job");
  EXPECT_EQ(takeover.outcome, BeginOutcome::kProceed) << "long before the time budget";
  EXPECT_EQ(takeover.sequence, 2);
  EXPECT_EQ(Rows("job")[1].owner, membership_->owner());
  // A node judges its own rows by its live set, not by its lease: "inv" is not live.
  EXPECT_TRUE(history_->IsAbandoned(Rows("job")[1], kBudget, clock_.NowMicros()));
  LiveInvocation mine(&here, "inv");
  EXPECT_FALSE(history_->IsAbandoned(Rows("job")[1], kBudget, clock_.NowMicros()));
}

// A node that stops cleanly releases its lease: its rows are abandoned at once. Rows
// written without an owner (before leases) are judged by the live set, as before: a
// dead process's invocation is not in it.
TEST_P(ExecutionHistoryTest, AReleasedLeaseOrNoOwnerHandsTheWorkOverAtOnce) {
  const ClusterMembership::LeaseOptions lease{30LL * 1000000, 10LL * 1000000, false, ""};
  LiveInvocations live;
  history_->set_live_invocations(&live);
  ASSERT_OK(membership_->StartLease(lease));
  auto other_node = std::make_unique<ClusterMembership>(db_->get(), &clock_);
  auto other =
      std::make_unique<ExecutionHistory>(db_->get(), &clock_, nullptr, other_node.get());
  ASSERT_OK(other_node->StartLease(lease));  // after ours: on SQLite it releases ours
  ASSERT_EQ(other->Begin({"job", "test", "theirs", ""}, kBudget)->outcome,
            BeginOutcome::kProceed);
  ExecutionHistory unowned(db_->get(), &clock_);
  ASSERT_EQ(unowned.Begin({"old", "test", "before-leases", ""}, kBudget)->outcome,
            BeginOutcome::kProceed);
  EXPECT_EQ(Rows("old")[0].owner, "");
  EXPECT_EQ(MustBegin("old").outcome, BeginOutcome::kProceed);

  EXPECT_EQ(MustBegin("job").outcome, BeginOutcome::kRunningElsewhere);
  other_node->StopLease();
  EXPECT_EQ(other_node->owner(), "");
  EXPECT_EQ(MustBegin("job").outcome, BeginOutcome::kProceed);
}

// The one documented difference: a SQLite file belongs to one process, so a new owner
// there releases every other lease (a restart takes its dead predecessor's work over at
// once); on PostgreSQL other nodes' leases stand.
TEST_P(ExecutionHistoryTest, ANewOwnerReleasesOtherLeasesOnlyOnSqlite) {
  const ClusterMembership::LeaseOptions lease{30LL * 1000000, 10LL * 1000000, false, ""};
  ClusterMembership node_before_restart(db_->get(), &clock_);
  ExecutionHistory before_restart(db_->get(), &clock_, nullptr, &node_before_restart);
  ASSERT_OK(node_before_restart.StartLease(lease));
  ASSERT_EQ(before_restart.Begin({"job", "test", "dead", ""}, kBudget)->outcome,
            BeginOutcome::kProceed);
  ASSERT_OK(membership_->StartLease(lease));
  EXPECT_EQ(MustBegin("job").outcome, GetParam() == Backend::kSqlite
                                          ? BeginOutcome::kProceed
                                          : BeginOutcome::kRunningElsewhere);
}

// As the history meets it: a node whose clock runs 45 s ahead judges another
// live node's `started` row on the database's clock (its own time translated by the
// skew its membership measured), so it leaves that running work alone instead of
// finding its owner's lease lapsed. Real clocks; nothing waits.
TEST_P(ExecutionHistoryTest, ANodeWhoseClockRunsAheadLeavesALiveNodesWorkRunning) {
  if (GetParam() == Backend::kSqlite) {
    GTEST_SKIP() << "a SQLite file has one process: no other node, no other clock";
  }
  // The rows' created_at come from the database's transactions, on the fixture's
  // manual clock: a budget no age reaches keeps this case about leases alone.
  constexpr int64_t kNoBudget = 100LL * 365 * 24 * 3600 * 1000000;
  const ClusterMembership::LeaseOptions lease{30LL * 1000000, 10LL * 1000000, false, ""};
  testing::OffsetSystemClock on_time_clock(0);
  testing::OffsetSystemClock ahead_clock(45LL * 1000000);
  ClusterMembership on_time_node(db_->get(), &on_time_clock);
  ClusterMembership ahead_node(db_->get(), &ahead_clock);
  ExecutionHistory on_time(db_->get(), &on_time_clock, nullptr, &on_time_node);
  ExecutionHistory ahead(db_->get(), &ahead_clock, nullptr, &ahead_node);
  LiveInvocations there, here;
  on_time.set_live_invocations(&there);
  ahead.set_live_invocations(&here);
  ASSERT_OK(on_time_node.StartLease(lease));
  ASSERT_OK(ahead_node.StartLease(lease));

  LiveInvocation running(&there, "theirs");
  auto theirs = on_time.Begin({"job", "test", "theirs", ""}, kNoBudget);
  ASSERT_OK(theirs);
  ASSERT_EQ(theirs->outcome, BeginOutcome::kProceed);
  auto mine = ahead.Begin({"job", "test", "mine", ""}, kNoBudget);
  ASSERT_OK(mine);
  EXPECT_EQ(mine->outcome, BeginOutcome::kRunningElsewhere)
      << "its owner's lease lives on the database's clock";
  auto abandoned = ahead.ListAbandoned(0, INT64_MAX, kNoBudget, 10);
  ASSERT_OK(abandoned);
  EXPECT_TRUE(abandoned->empty());
}

// In the background the lease is renewed on the clock: it never lapses while its owner
// lives, however far time moves.
TEST_P(ExecutionHistoryTest, TheLeaseIsRenewedOnTheClockWhileItsOwnerLives) {
  ASSERT_OK(membership_->StartLease(
      ClusterMembership::LeaseOptions{30LL * 1000000, 10LL * 1000000, false, ""}));
  ClusterMembership other_node(db_->get(), &clock_);
  ExecutionHistory other(db_->get(), &clock_, nullptr, &other_node);
  ASSERT_OK(other_node.StartLease());  // 30 s, renewed every 10 s
  ASSERT_EQ(other.Begin({"job", "test", "theirs", ""}, 3600LL * 1000000)->outcome,
            BeginOutcome::kProceed);
  for (int step = 0; step < 12; ++step) {
    clock_.AdvanceSeconds(10);
    const int64_t now = clock_.NowMicros();
    // The renewal is the other node's thread's: wait for it (a read, not a sleep).
    ASSERT_TRUE(testing::Eventually([&] {
      auto latest = history_->Latest("job");
      return latest.ok() && *latest && (*latest)->owner_lease_expires_at &&
             *(*latest)->owner_lease_expires_at >= now + 30LL * 1000000;
    })) << "step "
        << step;
    auto claim = history_->Begin({"job", "test", "inv", ""}, 3600LL * 1000000);
    ASSERT_OK(claim);
    EXPECT_EQ(claim->outcome, BeginOutcome::kRunningElsewhere) << "step " << step;
  }
  other_node.StopLease();
  EXPECT_EQ(MustBegin("job").outcome, BeginOutcome::kProceed);
}

// RecordIfLatest resolves a dead invocation's `started` row on its behalf, but never
// overtakes an invocation that claimed the key since.
TEST_P(ExecutionHistoryTest, RecordIfLatestWritesOnlyOverTheRowItWasGiven) {
  ASSERT_EQ(MustBegin("job").outcome, BeginOutcome::kProceed);
  std::vector<ExecutionRow> rows = Rows("job");
  ASSERT_EQ(rows.size(), 1u);
  const ExecutionRow dead = rows[0];
  EXPECT_THAT(history_->RecordIfLatest(dead, ExecStatus::kStarted, ""),
              StatusIs(StatusCode::kInvalidArgument));

  // Someone took the key over meanwhile: nothing is written.
  ExecutionRow stale = dead;
  ASSERT_OK(history_->AddStarted({"job", "test", "newer", ""}, 2));
  auto written = history_->RecordIfLatest(stale, ExecStatus::kDeferred, "gone");
  ASSERT_OK(written);
  EXPECT_FALSE(*written);
  EXPECT_EQ(Rows("job").size(), 2u);

  // Still the latest: appended after it, on behalf of its invocation.
  ExecutionRow latest = Rows("job").back();
  written = history_->RecordIfLatest(latest, ExecStatus::kDeferred, "gone");
  ASSERT_OK(written);
  EXPECT_TRUE(*written);
  rows = Rows("job");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].status, ExecStatus::kDeferred);
  EXPECT_EQ(rows[2].invocation_id, "newer");
  EXPECT_EQ(rows[2].error, "gone");
}

TEST_P(ExecutionHistoryTest, AtomicCounterStopsTheSecondOfTwoThatPassedTheCheck) {
  // Both invocations ran step 1 and saw no history; both now claim sequence 1.
  auto a = history_->AddStarted({"job", "test", "a", ""}, 1);
  auto b = history_->AddStarted({"job", "test", "b", ""}, 1);
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_EQ(*a, 1);
  EXPECT_EQ(*b, 2);
  std::vector<ExecutionRow> rows = Rows("job");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].atomic_counter, 2);
  EXPECT_EQ(rows[0].invocation_id, "a") << "the loser must not rewrite the row";
  EXPECT_EQ(rows[0].status, ExecStatus::kStarted);
}

TEST_P(ExecutionHistoryTest, LateCounterUpdateNeverRewritesAnOutcomeRow) {
  Claim winner = MustBegin("job");
  ASSERT_OK(history_->Finish(winner, ExecStatus::kSucceeded));
  // A slow duplicate that read the history before the winner finished targets seq 2.
  auto counter = history_->AddStarted({"job", "test", "slow", ""}, 2);
  ASSERT_OK(counter);
  EXPECT_EQ(*counter, 2);
  std::vector<ExecutionRow> rows = Rows("job");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].status, ExecStatus::kSucceeded);
  EXPECT_EQ(rows[1].atomic_counter, 2);
}

TEST_P(ExecutionHistoryTest, ConcurrentBeginsOfOneKeyLetExactlyOneProceed) {
  constexpr int kThreads = 6, kRounds = 30;
  for (int round = 0; round < kRounds; ++round) {
    const std::string key = "job-" + std::to_string(round);
    std::atomic<int> proceeded{0}, stopped{0}, errors{0};
    std::barrier start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        auto claim = history_->Begin({key, "test", std::to_string(t), ""}, kBudget);
        if (!claim.ok()) {
          ++errors;
        } else if (claim->outcome == BeginOutcome::kProceed) {
          ++proceeded;
        } else if (claim->outcome == BeginOutcome::kLostRace ||
                   claim->outcome == BeginOutcome::kRunningElsewhere) {
          ++stopped;
        }
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_EQ(errors.load(), 0);
    ASSERT_EQ(proceeded.load(), 1) << key;
    ASSERT_EQ(stopped.load(), kThreads - 1) << key;
    std::vector<ExecutionRow> rows = Rows(key);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].status, ExecStatus::kStarted);
  }
}

TEST_P(ExecutionHistoryTest, DeferredRunsAgainButIsNotListedAsFailed) {
  const int64_t t0 = clock_.NowMicros();
  Claim first = MustBegin("job");
  ASSERT_OK(history_->Finish(first, ExecStatus::kDeferred, "waiting for seq 3"));
  EXPECT_TRUE(history_->ListFailed(t0, t0 + 1)->empty());
  Claim again = MustBegin("job");
  EXPECT_EQ(again.outcome, BeginOutcome::kProceed);
  EXPECT_EQ(again.sequence, 3);
  EXPECT_EQ(history_->Finish(again, ExecStatus::kStarted).code(),
            StatusCode::kInvalidArgument);
}

TEST_P(ExecutionHistoryTest, ListFailedHonoursTheWindowAndTheLatestRow) {
  const int64_t t0 = clock_.NowMicros();
  ASSERT_OK(history_->Record({"a", "m", "", "{}"}, ExecStatus::kFailed, "too old"));
  clock_.AdvanceSeconds(10);
  ASSERT_OK(history_->Record({"b", "m", "", ""}, ExecStatus::kFailed, "x"));
  clock_.AdvanceSeconds(10);
  ASSERT_OK(history_->Record({"c", "m", "", ""}, ExecStatus::kFailed, "y"));
  ASSERT_OK(history_->Record({"c", "m", "", ""}, ExecStatus::kSucceeded, ""));

  auto all = history_->ListFailed(t0, clock_.NowMicros() + 1);
  ASSERT_OK(all);
  ASSERT_EQ(all->size(), 2u);  // c succeeded later
  EXPECT_EQ((*all)[0].partition_key, "a");
  EXPECT_EQ((*all)[0].error, "too old");
  EXPECT_EQ((*all)[0].detail, "{}");
  EXPECT_EQ((*all)[1].partition_key, "b");
  auto window = history_->ListFailed(t0 + 5 * 1000000, t0 + 15 * 1000000);
  ASSERT_EQ(window->size(), 1u);
  EXPECT_EQ((*window)[0].partition_key, "b");
  EXPECT_EQ(history_->ListFailed(t0, clock_.NowMicros() + 1, 1)->size(), 1u);

  EXPECT_EQ(*history_->DeleteBefore(t0 + 1), 1);
  EXPECT_TRUE(Rows("a").empty());
}

TEST_P(ExecutionHistoryTest, FaultBetweenReadAndClaimClaimsNothing) {
  faults_.Arm(FaultPoint::kHistoryAfterReadBeforeClaim, {});
  auto claim = history_->Begin({"job", "test", "", ""}, kBudget);
  EXPECT_EQ(claim.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Rows("job").empty());
  EXPECT_EQ(MustBegin("job").outcome, BeginOutcome::kProceed);
}

// Two nodes: two PostgresDatabase handles on one database, each with its own
// ExecutionHistory, claiming the same work and appending to the same key at once.
// Exactly one claim of each key proceeds across both, no append is lost or lands on
// another's row, and each node reads the other's rows.
TEST(PostgresExecutionHistoryTwoNodesTest, NoRecordIsLostOrMergedAndEachSeesTheOthers) {
  testing::PostgresTestDatabase database("history_two_nodes");
  ASSERT_FALSE(database.conninfo().empty());
  PostgresDatabase::Options options;
  options.conninfo = database.conninfo();
  auto node_a = PostgresDatabase::Open(options);
  auto node_b = PostgresDatabase::Open(options);
  ASSERT_OK(node_a);
  ASSERT_OK(node_b);
  ManualClock clock;
  ClusterMembership membership_a(node_a->get(), &clock),
      membership_b(node_b->get(), &clock);
  ExecutionHistory history_a(node_a->get(), &clock, nullptr, &membership_a),
      history_b(node_b->get(), &clock, nullptr, &membership_b);
  ExecutionHistory* const nodes[] = {&history_a, &history_b};
  // Owners with leases, renewed by hand (time stands still here): each node's claims
  // see the other's `started` rows as running by its lease.
  for (ClusterMembership* membership : {&membership_a, &membership_b}) {
    ASSERT_OK(membership->StartLease({30LL * 1000000, 10LL * 1000000, false, ""}));
  }

  constexpr int kNodes = 2, kThreadsPerNode = 3, kKeys = 20, kAppendsPerThread = 10;
  std::atomic<int> errors{0};
  std::vector<std::atomic<int>> proceeded(kKeys);
  std::atomic<int> written_by[kNodes] = {0, 0};
  std::barrier start(kNodes * kThreadsPerNode);
  std::vector<std::thread> threads;
  for (int n = 0; n < kNodes; ++n) {
    for (int t = 0; t < kThreadsPerNode; ++t) {
      threads.emplace_back([&, n, t] {
        ExecutionHistory& history = *nodes[n];
        const std::string source = "node-" + std::to_string(n);
        const std::string thread = source + "-" + std::to_string(t);
        start.arrive_and_wait();
        for (int k = 0; k < kKeys; ++k) {
          auto claim =
              history.Begin({"job-" + std::to_string(k), source, thread, ""}, kBudget);
          if (!claim.ok()) {
            ++errors;
          } else if (claim->outcome == BeginOutcome::kProceed) {
            ++proceeded[k];
            if (history.Finish(*claim, ExecStatus::kSucceeded).ok()) {
              ++written_by[n];
            } else {
              ++errors;
            }
          }
        }
        for (int i = 0; i < kAppendsPerThread; ++i) {
          const BeginRequest request{"shared", source, thread + "-" + std::to_string(i),
                                     ""};
          if (history.Record(request, ExecStatus::kFailed, "attempt").ok()) {
            ++written_by[n];
          } else {
            ++errors;
          }
        }
      });
    }
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(errors.load(), 0);

  for (int k = 0; k < kKeys; ++k) {
    const std::string key = "job-" + std::to_string(k);
    EXPECT_EQ(proceeded[k].load(), 1) << key;
    auto rows_a = history_a.List(key);
    auto rows_b = history_b.List(key);
    ASSERT_OK(rows_a);
    ASSERT_OK(rows_b);
    ASSERT_EQ(rows_a->size(), 2u) << key;
    EXPECT_EQ((*rows_a)[0].status, ExecStatus::kStarted);
    EXPECT_EQ((*rows_a)[1].status, ExecStatus::kSucceeded);
    EXPECT_EQ((*rows_a)[0].invocation_id, (*rows_a)[1].invocation_id)
        << "the outcome is the claimant's own";
    ASSERT_EQ(rows_b->size(), 2u);
    EXPECT_EQ((*rows_b)[1].invocation_id, (*rows_a)[1].invocation_id);
  }

  // Every append is there once, at its own sequence, 1..n without a gap.
  for (ExecutionHistory* history : nodes) {
    auto shared = history->List("shared");
    ASSERT_OK(shared);
    ASSERT_EQ(shared->size(), size_t{kNodes * kThreadsPerNode * kAppendsPerThread});
    std::set<std::string> invocations;
    for (size_t i = 0; i < shared->size(); ++i) {
      EXPECT_EQ((*shared)[i].sequence, static_cast<int64_t>(i + 1));
      EXPECT_EQ((*shared)[i].atomic_counter, 1);
      invocations.insert((*shared)[i].invocation_id);
    }
    EXPECT_EQ(invocations.size(), shared->size()) << "no two appends on one row";
  }

  // Each node's invocation log holds the other node's outcomes.
  for (int n = 0; n < kNodes; ++n) {
    InvocationQuery query;
    query.source = "node-" + std::to_string(n);
    query.limit = 1000;
    for (ExecutionHistory* history : nodes) {
      auto invocations = history->ListInvocations(query);
      ASSERT_OK(invocations);
      EXPECT_EQ(invocations->size(), static_cast<size_t>(written_by[n].load()))
          << query.source;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sqlite, ExecutionHistoryTest,
                         ::testing::Values(Backend::kSqlite));
INSTANTIATE_TEST_SUITE_P(Postgres, ExecutionHistoryTest,
                         ::testing::Values(Backend::kPostgres));

}  // namespace
}  // namespace sheetlog
