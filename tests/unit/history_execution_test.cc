#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/runtime/execution_history.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

constexpr int64_t kBudget = 900LL * 1000000;

class ExecutionHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenEmulatorTestDatabase(dir_.File("sheetlog.db"), &clock_);
    ASSERT_NE(db_, nullptr);
    history_ = std::make_unique<ExecutionHistory>(db_.get(), &clock_, &faults_);
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
  std::unique_ptr<Database> db_;
  std::unique_ptr<ExecutionHistory> history_;
};

TEST_F(ExecutionHistoryTest, SeedTableFailedThenReplayedToSuccess) {
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
TEST_F(ExecutionHistoryTest, InvocationsAreListedNewestFirstWithTheirStart) {
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

TEST_F(ExecutionHistoryTest, YoungStartedRowMeansRunningElsewhereOldOneIsTakenOver) {
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
TEST_F(ExecutionHistoryTest, StartedRowOfAnInvocationThatIsNotLiveIsAbandoned) {
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

// RecordIfLatest resolves a dead invocation's `started` row on its behalf, but never
// overtakes an invocation that claimed the key since.
TEST_F(ExecutionHistoryTest, RecordIfLatestWritesOnlyOverTheRowItWasGiven) {
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

TEST_F(ExecutionHistoryTest, AtomicCounterStopsTheSecondOfTwoThatPassedTheCheck) {
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

TEST_F(ExecutionHistoryTest, LateCounterUpdateNeverRewritesAnOutcomeRow) {
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

TEST_F(ExecutionHistoryTest, ConcurrentBeginsOfOneKeyLetExactlyOneProceed) {
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

TEST_F(ExecutionHistoryTest, DeferredRunsAgainButIsNotListedAsFailed) {
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

TEST_F(ExecutionHistoryTest, ListFailedHonoursTheWindowAndTheLatestRow) {
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

TEST_F(ExecutionHistoryTest, FaultBetweenReadAndClaimClaimsNothing) {
  faults_.Arm(FaultPoint::kHistoryAfterReadBeforeClaim, {});
  auto claim = history_->Begin({"job", "test", "", ""}, kBudget);
  EXPECT_EQ(claim.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Rows("job").empty());
  EXPECT_EQ(MustBegin("job").outcome, BeginOutcome::kProceed);
}

}  // namespace
}  // namespace sheetlog
