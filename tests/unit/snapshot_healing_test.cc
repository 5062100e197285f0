// The snapshot pipeline's self-healing (src/effects/snapshot_healing.h) over the real
// parts — a SQLite file (event log, Pending Snapshots, queues, change feed) and the
// manual clock: which Snapshot entries get a job again (incomplete, old enough, no live
// job) and which are left alone (a message queued, in flight or dead-lettered, an
// invocation on it, too young, complete); an expired dead letter is no live job; a run
// is bounded. And PipelineBacklog, verify's view of the work still to do.
#include "src/effects/snapshot_healing.h"

#include <gtest/gtest.h>

#include "emulator/env/faults.h"
#include "src/log/pending_snapshots.h"
#include "src/log/tables.h"
#include "src/snapshot/worker.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

constexpr char kSnapshotQueue[] = "snapshots";
constexpr char kDeadLetters[] = "snapshots-dlq";
constexpr char kConsumer[] = "entry-effects";
constexpr int64_t kMinAge = 300;

class SnapshotHealingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenTestDatabase(dir_.File("sheetlog.db"), &clock_);
    ASSERT_NE(db_, nullptr);
    log_ = std::make_unique<EventLog>(db_.get(), &clock_, &faults_, EventLog::Options{});
    queues_ = std::make_unique<QueueService>(db_.get(), &clock_);
    feed_ = std::make_unique<ChangeFeed>(db_.get(), &clock_, "entry");
    QueueOptions dlq;
    dlq.name = kDeadLetters;
    ASSERT_OK(queues_->CreateQueue(dlq));
    QueueOptions queue;
    queue.name = kSnapshotQueue;
    queue.visibility_timeout_s = 60;
    queue.max_receive_count = 1;
    queue.dead_letter_queue = kDeadLetters;
    ASSERT_OK(queues_->CreateQueue(queue));
    healer_ = MakeHealer(100);
  }

  std::unique_ptr<SnapshotHealer> MakeHealer(int64_t max_jobs_per_run) {
    SnapshotHealingOptions options;
    options.queue = kSnapshotQueue;
    options.dead_letter_queue = kDeadLetters;
    options.min_age_seconds = kMinAge;
    options.stale_seconds = 60;
    options.max_jobs_per_run = max_jobs_per_run;
    return std::make_unique<SnapshotHealer>(log_.get(), queues_.get(), &clock_, options);
  }

  // A new sheet: its Snapshot entry at seq 0 (segment 0, entry 0) has no job.
  std::string NewSheet() {
    auto sheet = log_->CreateLog("test", 0, 100000, nullptr);
    EXPECT_OK(sheet);
    return sheet.ok() ? sheet->id : "";
  }

  EntryRecord Append(const std::string& sheet, const std::string& type,
                     std::optional<std::string> external = std::nullopt) {
    AppendRequest request;
    request.sheet_id = sheet;
    request.type = type;
    if (type != kSnapshotType) request.body = R"({"ref": "A1", "value": 1})";
    request.external = std::move(external);
    request.allow_reserved = type == kSnapshotType;
    auto appended = log_->AddEntry(request, nullptr, nullptr);
    EXPECT_OK(appended);
    return appended.ok() ? appended->entry : EntryRecord{};
  }

  SnapshotHealingReport Heal(SnapshotHealer* healer = nullptr) {
    auto report = (healer ? healer : healer_.get())->RunOnce();
    EXPECT_OK(report);
    return report.ok() ? *report : SnapshotHealingReport{};
  }

  // The jobs the snapshot queue holds (visible, delayed or in flight).
  std::vector<SnapshotJob> QueuedJobs() {
    std::vector<SnapshotJob> jobs;
    auto listed = queues_->ListDeadLetters(kSnapshotQueue, 1000);
    EXPECT_OK(listed);
    for (const DeadLetterMessage& m :
         listed.ok() ? *listed : std::vector<DeadLetterMessage>{}) {
      auto job = SnapshotJob::FromJson(m.body);
      EXPECT_OK(job);
      if (job.ok()) jobs.push_back(*job);
    }
    return jobs;
  }

  void PutPending(const std::string& sheet, bool active, int64_t modified) {
    PendingSnapshot item;
    item.sheet_id = sheet;
    item.created = modified;
    item.modified = modified;
    item.active = active;
    item.increment = 1;
    ASSERT_OK(db_->Write(
        [&](Connection& conn) { return CreatePendingSnapshot(conn, item, nullptr); }));
  }

  // The entry-effects consumer has processed every record there is.
  void FeedCaughtUp() {
    auto latest = feed_->LatestSequences();
    ASSERT_OK(latest);
    for (const auto& [shard, sequence] : *latest) {
      ASSERT_OK(feed_->SaveCheckpoint(kConsumer, shard, sequence));
    }
  }

  testing::TempDir dir_;
  ManualClock clock_;
  FaultInjector faults_{&clock_};
  std::unique_ptr<Database> db_;
  std::unique_ptr<EventLog> log_;
  std::unique_ptr<QueueService> queues_;
  std::unique_ptr<ChangeFeed> feed_;
  std::unique_ptr<SnapshotHealer> healer_;
};

TEST_F(SnapshotHealingTest, IncompleteSnapshotWithNoJobGetsOneOnceOldEnough) {
  const std::string sheet = NewSheet();
  EXPECT_EQ(Heal().enqueued, 0) << "young: its job may still be in the change feed";
  EXPECT_TRUE(QueuedJobs().empty());
  clock_.AdvanceSeconds(kMinAge);
  SnapshotHealingReport report = Heal();
  EXPECT_EQ(report.candidates, 1);
  EXPECT_EQ(report.enqueued, 1);
  ASSERT_EQ(report.actions.size(), 1u);
  EXPECT_NE(report.actions[0].find("sheet " + sheet + ": snapshot at seq 0"),
            std::string::npos)
      << report.actions[0];
  std::vector<SnapshotJob> jobs = QueuedJobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].sheet_id, sheet);
  EXPECT_EQ(jobs[0].segment, 0);
  EXPECT_EQ(jobs[0].entry, 0);
  // Its job is queued now: the next run leaves it alone.
  EXPECT_EQ(Heal().enqueued, 0);
  EXPECT_EQ(QueuedJobs().size(), 1u);
}

TEST_F(SnapshotHealingTest, LiveJobsAreLeftAlone) {
  const std::string sheet = NewSheet();
  clock_.AdvanceSeconds(kMinAge);
  const SnapshotJob job{sheet, 0, 0};
  // Queued.
  ASSERT_OK(queues_->Send(kSnapshotQueue, job.ToJson()));
  EXPECT_EQ(Heal().enqueued, 0);
  // In flight.
  auto received = queues_->Receive(kSnapshotQueue, 1);
  ASSERT_OK(received);
  ASSERT_EQ(received->size(), 1u);
  EXPECT_EQ(Heal().enqueued, 0);
  // Dead-lettered: an operator's redrive, not a new job that would fail the same way.
  clock_.AdvanceSeconds(60);
  ASSERT_OK(queues_->Receive(kSnapshotQueue, 1));
  ASSERT_EQ(queues_->ListDeadLetters(kDeadLetters)->size(), 1u);
  EXPECT_EQ(Heal().enqueued, 0);
  EXPECT_TRUE(QueuedJobs().empty());
}

TEST_F(SnapshotHealingTest, AnInvocationCheckpointingItIsALiveJob) {
  const std::string sheet = NewSheet();
  clock_.AdvanceSeconds(kMinAge);
  // A worker holds its pending item and checkpointed 10 s ago (its message was lost).
  PutPending(sheet, /*active=*/true, clock_.NowSeconds() - 10);
  EXPECT_EQ(Heal().enqueued, 0);
  // 60 s without a checkpoint: stale, nobody is on it.
  clock_.AdvanceSeconds(50);
  EXPECT_EQ(Heal().enqueued, 1);
}

// The user finding: the job was dead-lettered longer ago than the queues' retention.
// Retention removes it (the run purges first), and the entry gets its job again.
TEST_F(SnapshotHealingTest, ADeadLetterPastRetentionIsNoLiveJob) {
  const std::string sheet = NewSheet();
  ASSERT_OK(queues_->Send(kSnapshotQueue, SnapshotJob{sheet, 0, 0}.ToJson()));
  ASSERT_OK(queues_->Receive(kSnapshotQueue, 1));
  clock_.AdvanceSeconds(60);
  ASSERT_OK(queues_->Receive(kSnapshotQueue, 1));  // moves it to the dead-letter queue
  ASSERT_EQ(queues_->ListDeadLetters(kDeadLetters)->size(), 1u);
  clock_.AdvanceSeconds(15 * 24 * 3600);
  SnapshotHealingReport report = Heal();
  EXPECT_EQ(report.expired, 1);
  EXPECT_EQ(report.enqueued, 1);
  EXPECT_TRUE(queues_->ListDeadLetters(kDeadLetters)->empty());
  EXPECT_EQ(QueuedJobs().size(), 1u);
}

// Snapshots complete in order: the run looks after the newest completed one only, and
// asks for the first incomplete one (a completed snapshot sends the next one's job).
TEST_F(SnapshotHealingTest, OnlyTheFirstIncompleteSnapshotAfterTheNewestCompletedOne) {
  const std::string sheet = NewSheet();
  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "snapshots/root0", nullptr));
  Append(sheet, "SetCell");
  const EntryRecord second = Append(sheet, kSnapshotType);
  Append(sheet, "SetCell");
  Append(sheet, kSnapshotType);
  clock_.AdvanceSeconds(kMinAge);
  EXPECT_EQ(Heal().enqueued, 1);
  std::vector<SnapshotJob> jobs = QueuedJobs();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].entry, second.num);
}

TEST_F(SnapshotHealingTest, ARunEnqueuesAtMostItsBound) {
  for (int i = 0; i < 3; ++i) NewSheet();
  clock_.AdvanceSeconds(kMinAge);
  std::unique_ptr<SnapshotHealer> bounded = MakeHealer(2);
  EXPECT_EQ(Heal(bounded.get()).enqueued, 2);
  EXPECT_EQ(Heal(bounded.get()).enqueued, 1) << "the next run goes on";
  EXPECT_EQ(Heal(bounded.get()).enqueued, 0);
  EXPECT_EQ(QueuedJobs().size(), 3u);
}

// Verify's view: an untag or a snapshot job the change feed has not delivered is
// pending; so is a job queued without a failure; a failing or dead-lettered one, or
// none at all, is not.
TEST_F(SnapshotHealingTest, BacklogExplainsWhatThePipelineHasNotDoneYet) {
  const std::string sheet = NewSheet();
  const std::string key = "entries/" + sheet + "/body";
  Append(sheet, "SetCell", key);
  const SnapshotJobKey job{sheet, 0, 0};
  auto backlog = [&] {
    return PipelineBacklog(feed_.get(), kConsumer, queues_.get(), kSnapshotQueue,
                           kDeadLetters);
  };
  {
    PipelineBacklog pending = backlog();
    auto untag = pending.UntagPending(key);
    ASSERT_OK(untag);
    EXPECT_TRUE(untag->has_value()) << "the feed has not delivered the entry";
    EXPECT_FALSE(pending.UntagPending("entries/other").value().has_value());
    auto snapshot = pending.SnapshotPending(job);
    ASSERT_OK(snapshot);
    EXPECT_TRUE(snapshot->has_value());
  }
  ASSERT_NO_FATAL_FAILURE(FeedCaughtUp());
  {
    PipelineBacklog done = backlog();
    EXPECT_FALSE(done.UntagPending(key).value().has_value());
    EXPECT_FALSE(done.SnapshotPending(job).value().has_value()) << "no job anywhere";
  }
  ASSERT_OK(queues_->Send(kSnapshotQueue, SnapshotJob{sheet, 0, 0}.ToJson()));
  {
    PipelineBacklog queued = backlog();
    auto why = queued.SnapshotPending(job);
    ASSERT_OK(why);
    ASSERT_TRUE(why->has_value());
    EXPECT_NE((*why)->find("its job is in the snapshots queue"), std::string::npos)
        << **why;
  }
  auto received = queues_->Receive(kSnapshotQueue, 1);
  ASSERT_OK(received);
  ASSERT_EQ(received->size(), 1u);
  ASSERT_OK(
      queues_->RecordFailure(kSnapshotQueue, (*received)[0].receipt_handle, "boom"));
  EXPECT_FALSE(backlog().SnapshotPending(job).value().has_value()) << "failing";
  clock_.AdvanceSeconds(60);
  ASSERT_OK(queues_->Receive(kSnapshotQueue, 1));  // dead-lettered
  EXPECT_FALSE(backlog().SnapshotPending(job).value().has_value()) << "dead-lettered";
}

}  // namespace
}  // namespace sheetlog
