#include "emulator/queue/queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

constexpr int64_t kSecond = 1000000;
// Real-time bound for waiting on a background thread (never a timing assertion).
constexpr auto kGenerous = std::chrono::seconds(30);

// The queue's contract (queue.h) on both backends from one source: Sqlite/QueueTest.*
// on a SQLite file, Postgres/QueueTest.* on a database of the test PostgreSQL server.
class QueueTest : public ::testing::TestWithParam<testing::Backend> {
 protected:
  void SetUp() override {
    db_ = std::make_unique<testing::BackendTestDatabase>(
        GetParam(), dir_.File("sheetlog.db"), &clock_);
    ASSERT_NE(db_->get(), nullptr);
    queues_ = std::make_unique<QueueService>(db_->get(), &clock_, &faults_);
  }

  // Closes the QueueService and the database, then opens both again on the same data.
  void Reopen() {
    queues_.reset();
    db_->Reopen();
    ASSERT_NE(db_->get(), nullptr);
    queues_ = std::make_unique<QueueService>(db_->get(), &clock_, &faults_);
  }

  void Create(const std::string& name, int64_t visibility_timeout_s = 30,
              int64_t max_receive_count = 0, const std::string& dead_letter_queue = "") {
    QueueOptions options;
    options.name = name;
    options.visibility_timeout_s = visibility_timeout_s;
    options.max_receive_count = max_receive_count;
    options.dead_letter_queue = dead_letter_queue;
    ASSERT_OK(queues_->CreateQueue(options));
  }

  std::string SendOk(const std::string& queue, const std::string& body,
                     std::optional<int64_t> delay_s = std::nullopt) {
    auto id = queues_->Send(queue, body, delay_s);
    EXPECT_OK(id);
    return id.ok() ? *id : "";
  }

  std::vector<ReceivedMessage> ReceiveOk(
      const std::string& queue, int max = 1,
      std::optional<int64_t> visibility = std::nullopt) {
    auto got = queues_->Receive(queue, max, visibility);
    EXPECT_OK(got);
    return got.ok() ? *got : std::vector<ReceivedMessage>{};
  }

  QueueStats StatsOk(const std::string& queue) {
    auto stats = queues_->Stats(queue);
    EXPECT_OK(stats);
    return stats.ok() ? *stats : QueueStats{};
  }

  testing::TempDir dir_;
  ManualClock clock_;
  FaultInjector faults_{&clock_};
  std::unique_ptr<testing::BackendTestDatabase> db_;
  std::unique_ptr<QueueService> queues_;
};

INSTANTIATE_TEST_SUITE_P(Sqlite, QueueTest, ::testing::Values(testing::Backend::kSqlite));
INSTANTIATE_TEST_SUITE_P(Postgres, QueueTest,
                         ::testing::Values(testing::Backend::kPostgres));

TEST_P(QueueTest, CreateQueueIsIdempotentAndUpdatesOptions) {
  Create("jobs", 30);
  Create("jobs", 30);
  Create("aaa", 5);
  auto list = queues_->ListQueues();
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "aaa");
  EXPECT_EQ((*list)[1].name, "jobs");
  EXPECT_EQ((*list)[1].delay_s, 0);
  EXPECT_EQ((*list)[1].retention_s, 14 * 24 * 3600);

  Create("jobs", 45);
  auto jobs = queues_->GetQueue("jobs");
  ASSERT_OK(jobs);
  EXPECT_EQ(jobs->visibility_timeout_s, 45);
}

// SQS PurgeQueue: every message of the queue goes (visible, in flight, delayed), its
// dead-letter queue's stay; a consumer holding one finds it gone.
TEST_P(QueueTest, PurgeDeletesEveryMessageOfTheQueueOnly) {
  Create("dlq");
  Create("jobs", 30, 1, "dlq");
  SendOk("jobs", "visible");
  SendOk("jobs", "delayed", 60);
  SendOk("jobs", "taken");
  SendOk("dlq", "dead");
  std::vector<ReceivedMessage> taken = ReceiveOk("jobs");
  ASSERT_EQ(taken.size(), 1u);
  auto purged = queues_->Purge("jobs");
  ASSERT_OK(purged);
  EXPECT_EQ(*purged, 3);
  QueueStats stats = StatsOk("jobs");
  EXPECT_EQ(stats.visible + stats.in_flight + stats.delayed, 0);
  EXPECT_EQ(stats.dead_letter_depth, 1);
  EXPECT_OK(queues_->Delete("jobs", taken[0].receipt_handle));  // already gone: OK
  EXPECT_EQ(queues_->Purge("jobs").value(), 0);
  EXPECT_TRUE(queues_->Purge("nope").status().IsNotFound());
}

TEST_P(QueueTest, MissingQueueIsNotFoundAndBadArgumentsAreRejected) {
  EXPECT_TRUE(queues_->Send("nope", "x").status().IsNotFound());
  EXPECT_TRUE(queues_->Receive("nope").status().IsNotFound());
  EXPECT_TRUE(queues_->Stats("nope").status().IsNotFound());
  EXPECT_TRUE(queues_->GetQueue("nope").status().IsNotFound());
  EXPECT_TRUE(queues_->WaitForMessages("nope", clock_.NowMicros()).status().IsNotFound());

  QueueOptions bad;
  bad.name = "has space";
  EXPECT_EQ(queues_->CreateQueue(bad).code(), StatusCode::kInvalidArgument);
  bad.name = "jobs";
  bad.max_receive_count = 3;  // without a dead-letter queue
  EXPECT_EQ(queues_->CreateQueue(bad).code(), StatusCode::kInvalidArgument);
  bad.dead_letter_queue = "missing-dlq";
  EXPECT_TRUE(queues_->CreateQueue(bad).IsNotFound());
  bad.dead_letter_queue = "jobs";
  EXPECT_EQ(queues_->CreateQueue(bad).code(), StatusCode::kInvalidArgument);

  Create("jobs");
  EXPECT_EQ(queues_->Receive("jobs", 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(queues_->Receive("jobs", 11).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(queues_->Send("jobs", "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(queues_->Send("jobs", std::string(QueueService::kMaxBodyBytes + 1, 'x'))
                .status()
                .code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(queues_->Send("jobs", "x", 901).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(QueueTest, UnacknowledgedMessageReappearsExactlyWhenVisibilityTimeoutExpires) {
  Create("jobs", 30);
  std::string id = SendOk("jobs", "hello");
  auto first = ReceiveOk("jobs");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].id, id);
  EXPECT_EQ(first[0].body, "hello");

  clock_.Advance(30 * kSecond - 1);
  EXPECT_TRUE(ReceiveOk("jobs").empty()) << "visible 1 us before the timeout";
  clock_.Advance(1);
  auto second = ReceiveOk("jobs");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].id, id);
  EXPECT_EQ(second[0].receive_count, 2);
  EXPECT_NE(second[0].receipt_handle, first[0].receipt_handle);
}

TEST_P(QueueTest, ReceiveVisibilityTimeoutOverridesTheQueueDefault) {
  Create("jobs", 30);
  SendOk("jobs", "m");
  ASSERT_EQ(ReceiveOk("jobs", 1, 5).size(), 1u);
  clock_.Advance(5 * kSecond - 1);
  EXPECT_TRUE(ReceiveOk("jobs").empty());
  clock_.Advance(1);
  EXPECT_EQ(ReceiveOk("jobs").size(), 1u);
}

TEST_P(QueueTest, ChangeVisibilityZeroRedeliversAtOnceAndLongerDefers) {
  Create("jobs", 30);
  SendOk("jobs", "m");
  auto got = ReceiveOk("jobs");
  ASSERT_EQ(got.size(), 1u);
  ASSERT_OK(queues_->ChangeVisibility("jobs", got[0].receipt_handle, 0));
  auto again = ReceiveOk("jobs");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].receive_count, 2);

  ASSERT_OK(queues_->ChangeVisibility("jobs", again[0].receipt_handle, 100));
  clock_.Advance(100 * kSecond - 1);
  EXPECT_TRUE(ReceiveOk("jobs").empty());
  clock_.Advance(1);
  EXPECT_EQ(ReceiveOk("jobs").size(), 1u);
}

// A gone receiver's in-flight messages are visible again at once, in every queue; a
// live receiver's, an anonymous receive's and a delayed (never received) message keep
// their time, and a message already deleted is not brought back.
TEST_P(QueueTest, ReleaseReceivedByHandsAGoneReceiversMessagesOnAtOnce) {
  Create("jobs", 60);
  Create("other", 60);
  for (const char* body : {"a1", "a2", "done", "b", "anonymous"}) SendOk("jobs", body);
  SendOk("other", "a3");
  SendOk("jobs", "delayed", 30);
  std::map<std::string, ReceivedMessage> held;  // body -> its receive
  auto receive_as = [&](const std::string& queue, const std::string& receiver) {
    Result<std::vector<ReceivedMessage>> got =
        queues_->Receive(queue, 1, std::nullopt, receiver);
    ASSERT_OK(got);
    ASSERT_EQ(got->size(), 1u);
    held[got->front().body] = got->front();
  };
  for (int i = 0; i < 3; ++i) receive_as("jobs", "owner-a");
  receive_as("jobs", "owner-b");
  receive_as("jobs", "");
  receive_as("other", "owner-a");
  ASSERT_EQ(held.size(), 6u);
  ASSERT_OK(queues_->Delete("jobs", held["done"].receipt_handle));
  EXPECT_TRUE(ReceiveOk("jobs").empty()) << "all hidden before the release";

  Result<int64_t> released = queues_->ReleaseReceivedBy({"owner-a", "owner-gone"});
  ASSERT_OK(released);
  EXPECT_EQ(*released, 3) << "a1, a2 and a3";
  Result<int64_t> again_released = queues_->ReleaseReceivedBy({"owner-a"});
  ASSERT_OK(again_released);
  EXPECT_EQ(*again_released, 0) << "once";

  std::set<std::string> again;
  for (const ReceivedMessage& m : ReceiveOk("jobs", 10)) {
    again.insert(m.body);
    EXPECT_EQ(m.receive_count, 2) << m.body;
    EXPECT_NE(m.receipt_handle, held[m.body].receipt_handle) << "a new receipt";
    // The gone receiver's receipt is stale: it cannot delete what moved on.
    EXPECT_EQ(queues_->Delete("jobs", held[m.body].receipt_handle).code(),
              StatusCode::kConditionFailed);
    ASSERT_OK(queues_->Delete("jobs", m.receipt_handle));  // the new receiver's work
  }
  EXPECT_EQ(again, (std::set<std::string>{"a1", "a2"}));
  auto other = ReceiveOk("other");
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].body, "a3");
  // The rest keeps its time: owner-b's and the anonymous receive's 60 s, the delay.
  clock_.Advance(30 * kSecond);
  auto due = ReceiveOk("jobs", 10);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].body, "delayed");
  clock_.Advance(30 * kSecond);
  std::set<std::string> timed_out;
  for (const ReceivedMessage& m : ReceiveOk("jobs", 10)) timed_out.insert(m.body);
  EXPECT_EQ(timed_out, (std::set<std::string>{"b", "anonymous"}));
}

TEST_P(QueueTest, DelayHidesMessageUntilDue) {
  QueueOptions options;
  options.name = "delayed";
  options.delay_s = 10;
  ASSERT_OK(queues_->CreateQueue(options));
  SendOk("delayed", "queue default");
  SendOk("delayed", "per message", 20);
  SendOk("delayed", "no delay", 0);

  auto now = ReceiveOk("delayed", 10);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].body, "no delay");
  QueueStats stats = StatsOk("delayed");
  EXPECT_EQ(stats.delayed, 2);
  EXPECT_EQ(stats.in_flight, 1);
  EXPECT_EQ(stats.visible, 0);

  clock_.Advance(10 * kSecond - 1);
  EXPECT_TRUE(ReceiveOk("delayed", 10).empty());
  clock_.Advance(1);
  auto due = ReceiveOk("delayed", 10);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].body, "queue default");
  clock_.Advance(10 * kSecond);
  auto later = ReceiveOk("delayed", 10);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].body, "per message");
}

TEST_P(QueueTest, ReceiveCountAndFirstReceiveTime) {
  Create("jobs", 10);
  int64_t sent_at = clock_.NowMicros();
  SendOk("jobs", "m");
  clock_.AdvanceSeconds(3);
  int64_t first_at = clock_.NowMicros();
  auto a = ReceiveOk("jobs");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].receive_count, 1);
  EXPECT_EQ(a[0].sent_micros, sent_at);
  EXPECT_EQ(a[0].first_receive_micros, first_at);

  clock_.AdvanceSeconds(10);
  auto b = ReceiveOk("jobs");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].receive_count, 2);
  EXPECT_EQ(b[0].sent_micros, sent_at);
  EXPECT_EQ(b[0].first_receive_micros, first_at);
}

TEST_P(QueueTest, ReceivesEarliestVisibleFirstAndBatches) {
  Create("jobs", 30);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ids.push_back(SendOk("jobs", "m" + std::to_string(i)));
    clock_.Advance(1);
  }
  auto got = ReceiveOk("jobs", 3);
  ASSERT_EQ(got.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got[i].id, ids[i]);
  auto rest = ReceiveOk("jobs", 10);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].id, ids[3]);
  EXPECT_EQ(rest[1].id, ids[4]);

  auto batch = queues_->SendBatch("jobs", {"x", "y"});
  ASSERT_OK(batch);
  EXPECT_EQ(batch->size(), 2u);
  EXPECT_EQ(queues_->SendBatch("jobs", {}).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(QueueTest, ZeroVisibilityTimeoutNeverDeliversAMessageTwiceInOneBatch) {
  Create("jobs", 30);
  SendOk("jobs", "a");
  SendOk("jobs", "b");
  auto got = ReceiveOk("jobs", 10, 0);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NE(got[0].id, got[1].id);
  EXPECT_EQ(ReceiveOk("jobs", 10, 0).size(), 2u) << "still visible after a 0 s timeout";
}

TEST_P(QueueTest, StaleReceiptCannotChangeVisibilityOrDelete) {
  Create("jobs", 30);
  std::string id = SendOk("jobs", "m");
  auto first = ReceiveOk("jobs");
  ASSERT_EQ(first.size(), 1u);
  clock_.AdvanceSeconds(30);
  auto second = ReceiveOk("jobs");
  ASSERT_EQ(second.size(), 1u);
  const std::string stale = first[0].receipt_handle;
  const std::string fresh = second[0].receipt_handle;

  Status change = queues_->ChangeVisibility("jobs", stale, 0);
  EXPECT_TRUE(change.IsConditionFailed()) << change.ToString();
  EXPECT_NE(change.message().find("stale"), std::string::npos);
  EXPECT_TRUE(ReceiveOk("jobs").empty()) << "the stale handle released the new lock";

  Status del = queues_->Delete("jobs", stale);
  EXPECT_TRUE(del.IsConditionFailed()) << del.ToString();
  EXPECT_TRUE(queues_->RecordFailure("jobs", stale, "late").IsConditionFailed());
  EXPECT_EQ(StatsOk("jobs").in_flight, 1) << "the stale handle deleted the message";

  // The newest handle works, even after its own timeout, until someone receives again.
  clock_.AdvanceSeconds(31);
  ASSERT_OK(queues_->ChangeVisibility("jobs", fresh, 5));
  ASSERT_OK(queues_->Delete("jobs", fresh));
  QueueStats stats = StatsOk("jobs");
  EXPECT_EQ(stats.visible + stats.in_flight + stats.delayed, 0);

  // Once deleted: Delete again is OK; ChangeVisibility and RecordFailure are NotFound.
  EXPECT_OK(queues_->Delete("jobs", fresh));
  EXPECT_TRUE(queues_->ChangeVisibility("jobs", fresh, 0).IsNotFound());
  EXPECT_TRUE(queues_->RecordFailure("jobs", fresh, "x").IsNotFound());

  EXPECT_EQ(queues_->Delete("jobs", "garbage").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(queues_->ChangeVisibility("jobs", id + "#", 0).code(),
            StatusCode::kInvalidArgument);
  Create("other");
  SendOk("jobs", "n");
  auto n = ReceiveOk("jobs");
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(queues_->Delete("other", n[0].receipt_handle).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(queues_->Delete("nope", n[0].receipt_handle).IsNotFound());
}

TEST_P(QueueTest, PoisonMessageMovesToDeadLetterQueueAndRedriveReturnsIt) {
  Create("jobs-dlq", 30);
  Create("jobs", 30, /*max_receive_count=*/2, "jobs-dlq");
  int64_t sent_at = clock_.NowMicros();
  std::string poison = SendOk("jobs", "poison");
  std::string last_receipt;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    auto got = ReceiveOk("jobs");
    ASSERT_EQ(got.size(), 1u) << "attempt " << attempt;
    EXPECT_EQ(got[0].receive_count, attempt);
    ASSERT_OK(queues_->RecordFailure("jobs", got[0].receipt_handle,
                                     "boom " + std::to_string(attempt)));
    last_receipt = got[0].receipt_handle;
    clock_.AdvanceSeconds(30);
  }
  std::string good = SendOk("jobs", "good");
  // The third receive would exceed max_receive_count: the message moves, the good one
  // is still delivered in the same call.
  auto got = ReceiveOk("jobs", 10);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, good);
  ASSERT_OK(queues_->Delete("jobs", got[0].receipt_handle));

  QueueStats stats = StatsOk("jobs");
  ASSERT_TRUE(stats.dead_letter_depth.has_value());
  EXPECT_EQ(*stats.dead_letter_depth, 1);
  EXPECT_FALSE(StatsOk("jobs-dlq").dead_letter_depth.has_value());
  EXPECT_TRUE(queues_->Delete("jobs", last_receipt).IsConditionFailed());

  auto dead = queues_->ListDeadLetters("jobs-dlq");
  ASSERT_OK(dead);
  ASSERT_EQ(dead->size(), 1u);
  const DeadLetterMessage& d = (*dead)[0];
  EXPECT_EQ(d.id, poison);
  EXPECT_EQ(d.body, "poison");
  EXPECT_EQ(d.receive_count, 2);
  EXPECT_EQ(d.last_error, "boom 2");
  EXPECT_EQ(d.sent_micros, sent_at);
  EXPECT_EQ(d.source_queue, "jobs");
  EXPECT_EQ(d.dead_lettered_micros, clock_.NowMicros());
  // Listing does not receive.
  EXPECT_EQ(queues_->ListDeadLetters("jobs-dlq")->size(), 1u);
  EXPECT_EQ(StatsOk("jobs-dlq").visible, 1);

  EXPECT_TRUE(
      queues_->Redrive("jobs-dlq", std::string("00000000-0000-4000-8000-000000000000"))
          .status()
          .IsNotFound());
  auto moved = queues_->Redrive("jobs-dlq");
  ASSERT_OK(moved);
  EXPECT_EQ(*moved, 1);
  EXPECT_EQ(*StatsOk("jobs").dead_letter_depth, 0);
  auto back = ReceiveOk("jobs");
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].id, poison);
  EXPECT_EQ(back[0].receive_count, 1) << "redrive resets the receive count";
  EXPECT_GT(clock_.NowMicros(), sent_at);
  EXPECT_EQ(back[0].sent_micros, clock_.NowMicros())
      << "redrive starts the message's retention over (SQS: a new enqueue time)";
}

// The user finding of a data directory opened long after its snapshot job was
// dead-lettered: a redrive must never report a message that retention then drops.
// A redriven message's retention starts over (it is delivered even when its first send
// is older than the source queue's retention); one already past the dead-letter
// queue's own retention is expired: removed, not moved, not counted.
TEST_P(QueueTest, RedriveNeverReportsAMessageThatRetentionThenDrops) {
  QueueOptions dlq;
  dlq.name = "dlq";
  dlq.retention_s = 100;
  ASSERT_OK(queues_->CreateQueue(dlq));
  QueueOptions jobs;
  jobs.name = "jobs";
  jobs.visibility_timeout_s = 30;
  jobs.retention_s = 100;
  jobs.max_receive_count = 1;
  jobs.dead_letter_queue = "dlq";
  ASSERT_OK(queues_->CreateQueue(jobs));
  // Sends `body` and lets it be dead-lettered (one receive, then the next moves it).
  auto dead_letter = [&](const std::string& body) {
    const std::string id = SendOk("jobs", body);
    EXPECT_EQ(ReceiveOk("jobs").size(), 1u);
    clock_.AdvanceSeconds(30);
    EXPECT_TRUE(ReceiveOk("jobs").empty());
    return id;
  };

  // Sent 90 s before the redrive: without a fresh start, it would expire 11 s later.
  const std::string late = dead_letter("late");
  clock_.AdvanceSeconds(60);
  auto moved = queues_->Redrive("dlq");
  ASSERT_OK(moved);
  EXPECT_EQ(*moved, 1);
  clock_.AdvanceSeconds(50);  // 140 s after its send, 50 s after the redrive
  auto purged = queues_->PurgeExpired();
  ASSERT_OK(purged);
  EXPECT_EQ(*purged, 0) << "the redriven message was dropped by retention";
  auto back = ReceiveOk("jobs");
  ASSERT_EQ(back.size(), 1u) << "a redrive reported a message retention then dropped";
  EXPECT_EQ(back[0].id, late);
  ASSERT_OK(queues_->Delete("jobs", back[0].receipt_handle));

  // Past the dead-letter queue's retention (not purged yet): expired, not redriven.
  const std::string old_one = dead_letter("old one");
  const std::string old_two = dead_letter("old two");
  clock_.AdvanceSeconds(41);  // the first sent 101 s ago, the second 71 s ago
  ASSERT_EQ(queues_->ListDeadLetters("dlq")->size(), 2u) << "not purged yet";
  auto one = queues_->Redrive("dlq", old_one);
  EXPECT_TRUE(one.status().IsNotFound()) << one.status().ToString();
  EXPECT_NE(one.status().message().find("expired"), std::string::npos)
      << one.status().ToString();
  moved = queues_->Redrive("dlq");
  ASSERT_OK(moved);
  EXPECT_EQ(*moved, 1) << "only the second, still retained";
  EXPECT_TRUE(queues_->ListDeadLetters("dlq")->empty());
  clock_.AdvanceSeconds(99);
  back = ReceiveOk("jobs", 10);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].id, old_two);
}

TEST_P(QueueTest, RedriveOneMessageAndPageThroughDeadLetters) {
  Create("dlq", 30);
  Create("jobs", 30, 1, "dlq");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(SendOk("jobs", "p" + std::to_string(i)));
    clock_.Advance(1);
  }
  ASSERT_EQ(ReceiveOk("jobs", 10).size(), 3u);
  clock_.AdvanceSeconds(30);
  EXPECT_TRUE(ReceiveOk("jobs", 10).empty());
  ASSERT_EQ(*StatsOk("jobs").dead_letter_depth, 3);

  auto page1 = queues_->ListDeadLetters("dlq", 2);
  ASSERT_OK(page1);
  ASSERT_EQ(page1->size(), 2u);
  EXPECT_EQ((*page1)[0].id, ids[0]);
  EXPECT_EQ((*page1)[1].id, ids[1]);
  auto page2 = queues_->ListDeadLetters("dlq", 2, (*page1)[1].id);
  ASSERT_OK(page2);
  ASSERT_EQ(page2->size(), 1u);
  EXPECT_EQ((*page2)[0].id, ids[2]);

  auto one = queues_->Redrive("dlq", ids[1]);
  ASSERT_OK(one);
  EXPECT_EQ(*one, 1);
  EXPECT_EQ(*StatsOk("jobs").dead_letter_depth, 2);
  auto back = ReceiveOk("jobs", 10);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].id, ids[1]);
}

TEST_P(QueueTest, RetentionPurgesMessagesOlderThanRetention) {
  QueueOptions options;
  options.name = "short";
  options.retention_s = 60;
  ASSERT_OK(queues_->CreateQueue(options));
  SendOk("short", "old");
  clock_.AdvanceSeconds(30);
  SendOk("short", "young");
  clock_.AdvanceSeconds(30);
  EXPECT_EQ(StatsOk("short").oldest_age_s, 60);
  auto none = queues_->PurgeExpired();
  ASSERT_OK(none);
  EXPECT_EQ(*none, 0) << "exactly retention_s old is not yet expired";
  clock_.Advance(1);
  auto purged = queues_->PurgeExpired();
  ASSERT_OK(purged);
  EXPECT_EQ(*purged, 1);
  EXPECT_EQ(StatsOk("short").visible, 1);
  EXPECT_EQ(StatsOk("short").oldest_age_s, 30);

  // Receive never delivers an expired message, whether or not a purge ran.
  clock_.AdvanceSeconds(31);
  EXPECT_TRUE(ReceiveOk("short", 10).empty());
  EXPECT_EQ(StatsOk("short").visible, 0);
}

TEST_P(QueueTest, ConcurrentConsumersReceiveEachMessageOncePerVisibilityPeriod) {
  Create("jobs", 30);
  constexpr int kMessages = 100;
  for (int i = 0; i < kMessages; ++i) SendOk("jobs", "m" + std::to_string(i));

  for (int period = 1; period <= 2; ++period) {
    std::mutex mu;
    std::map<std::string, int> deliveries;  // GUARDED_BY(mu)
    std::atomic<bool> failed{false};
    std::vector<std::thread> consumers;
    for (int t = 0; t < 4; ++t) {
      consumers.emplace_back([&] {
        while (true) {
          auto got = queues_->Receive("jobs", 3);
          if (!got.ok()) {
            failed = true;
            return;
          }
          if (got->empty()) return;  // time stands still: nothing comes back
          std::lock_guard<std::mutex> lock(mu);
          for (const ReceivedMessage& m : *got) {
            ++deliveries[m.id];
            if (m.receive_count != period) failed = true;
          }
        }
      });
    }
    for (auto& t : consumers) t.join();
    EXPECT_FALSE(failed) << "period " << period;
    EXPECT_EQ(deliveries.size(), static_cast<size_t>(kMessages)) << "period " << period;
    for (const auto& [id, n] : deliveries) EXPECT_EQ(n, 1) << id << " period " << period;
    clock_.AdvanceSeconds(30);
  }
}

TEST_P(QueueTest, MessagesInFlightStateAndReceiveCountsSurviveRestart) {
  Create("dlq", 30);
  Create("jobs", 30, 5, "dlq");
  std::string a = SendOk("jobs", "a");
  clock_.Advance(1);
  std::string b = SendOk("jobs", "b");
  clock_.Advance(1);
  SendOk("jobs", "c", 60);
  auto got = ReceiveOk("jobs");
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].id, a);
  int64_t first_receive = got[0].first_receive_micros;
  ASSERT_OK(queues_->RecordFailure("jobs", got[0].receipt_handle, "kept"));

  ASSERT_NO_FATAL_FAILURE(Reopen());

  auto options = queues_->GetQueue("jobs");
  ASSERT_OK(options);
  EXPECT_EQ(options->max_receive_count, 5);
  EXPECT_EQ(options->dead_letter_queue, "dlq");
  QueueStats stats = StatsOk("jobs");
  EXPECT_EQ(stats.visible, 1);
  EXPECT_EQ(stats.in_flight, 1);
  EXPECT_EQ(stats.delayed, 1);
  // The receipt handle from before the restart is still the newest.
  ASSERT_OK(queues_->ChangeVisibility("jobs", got[0].receipt_handle, 10));
  auto next = ReceiveOk("jobs");
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].id, b);
  clock_.AdvanceSeconds(10);
  auto again = ReceiveOk("jobs");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].id, a);
  EXPECT_EQ(again[0].receive_count, 2);
  EXPECT_EQ(again[0].first_receive_micros, first_receive);
}

TEST_P(QueueTest, WaitForMessagesWakesOnSend) {
  Create("jobs", 30);
  auto waiter = std::async(std::launch::async, [&] {
    return queues_->WaitForMessages("jobs", clock_.NowMicros() + 3600 * kSecond);
  });
  SendOk("jobs", "m");
  ASSERT_EQ(waiter.wait_for(kGenerous), std::future_status::ready);
  auto woke = waiter.get();
  ASSERT_OK(woke);
  EXPECT_TRUE(*woke);
  EXPECT_EQ(ReceiveOk("jobs").size(), 1u);
}

TEST_P(QueueTest, WaitForMessagesWakesWhenVisibilityTimeoutExpires) {
  Create("jobs", 30);
  SendOk("jobs", "m");
  ASSERT_EQ(ReceiveOk("jobs").size(), 1u);
  const int64_t visible_at = clock_.NowMicros() + 30 * kSecond;
  auto waiter = std::async(std::launch::async, [&] {
    auto r = queues_->WaitForMessages("jobs", clock_.NowMicros() + 3600 * kSecond);
    return std::make_pair(r, clock_.NowMicros());
  });
  clock_.AdvanceSeconds(29);
  // Not ready yet: nothing is visible before the timeout. (Checked without waiting.)
  EXPECT_NE(waiter.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  clock_.AdvanceSeconds(1);
  ASSERT_EQ(waiter.wait_for(kGenerous), std::future_status::ready);
  auto [woke, at] = waiter.get();
  ASSERT_OK(woke);
  EXPECT_TRUE(*woke);
  EXPECT_GE(at, visible_at);
}

TEST_P(QueueTest, WaitForMessagesReturnsFalseAtDeadlineOrWhenWoken) {
  Create("jobs", 30);
  const int64_t deadline = clock_.NowMicros() + 5 * kSecond;
  auto waiter = std::async(std::launch::async,
                           [&] { return queues_->WaitForMessages("jobs", deadline); });
  clock_.AdvanceSeconds(5);
  ASSERT_EQ(waiter.wait_for(kGenerous), std::future_status::ready);
  auto r = waiter.get();
  ASSERT_OK(r);
  EXPECT_FALSE(*r);

  auto woken = std::async(std::launch::async, [&] {
    return queues_->WaitForMessages("jobs", clock_.NowMicros() + 3600 * kSecond);
  });
  // WakeWaiters only reaches a waiter already blocked; keep waking until it returns.
  while (woken.wait_for(std::chrono::milliseconds(1)) != std::future_status::ready) {
    queues_->WakeWaiters();
  }
  auto w = woken.get();
  ASSERT_OK(w);
  EXPECT_FALSE(*w);

  queues_->Shutdown();
  EXPECT_EQ(
      queues_->WaitForMessages("jobs", clock_.NowMicros() + kSecond).status().code(),
      StatusCode::kUnavailable);
}

TEST_P(QueueTest, InjectedDuplicateDeliveryRedeliversAndStalesTheFirstHandle) {
  Create("jobs", 30);
  std::string id = SendOk("jobs", "m");
  faults_.Arm(FaultPoint::kQueueReceiveDuplicate,
              FaultSpec{FaultKind::kDuplicate, 1, 1.0, 0});
  auto first = ReceiveOk("jobs");
  auto second = ReceiveOk("jobs");
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(first[0].id, id);
  EXPECT_EQ(second[0].id, id);
  EXPECT_TRUE(queues_->Delete("jobs", first[0].receipt_handle).IsConditionFailed());
  EXPECT_OK(queues_->Delete("jobs", second[0].receipt_handle));
}

TEST_P(QueueTest, InjectedSendFaultStoresNothing) {
  Create("jobs", 30);
  faults_.Arm(FaultPoint::kQueueSend, FaultSpec{});
  EXPECT_EQ(queues_->Send("jobs", "m").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(StatsOk("jobs").visible, 0);
  EXPECT_OK(queues_->Send("jobs", "m"));
  EXPECT_EQ(StatsOk("jobs").visible, 1);
}

// An error text is kept as UTF-8 (PostgreSQL's text holds nothing else, and the API
// shows it as JSON): cut to 4 KiB at a character boundary, a NUL or a malformed byte
// replaced by U+FFFD.
TEST_P(QueueTest, RecordedErrorIsKeptAsUtf8OfAtMostFourKiB) {
  Create("dlq");
  Create("jobs", 30, 1, "dlq");
  SendOk("jobs", "a");
  auto got = ReceiveOk("jobs");
  ASSERT_EQ(got.size(), 1u);
  ASSERT_OK(queues_->RecordFailure("jobs", got[0].receipt_handle,
                                   std::string("bad \xff byte, nul \0 end", 21)));
  clock_.AdvanceSeconds(30);
  EXPECT_TRUE(ReceiveOk("jobs").empty());  // moved to the dead-letter queue
  auto dead = queues_->ListDeadLetters("dlq");
  ASSERT_OK(dead);
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0].last_error, "bad \xEF\xBF\xBD byte, nul \xEF\xBF\xBD end");

  SendOk("jobs", "b");
  auto b = ReceiveOk("jobs");
  ASSERT_EQ(b.size(), 1u);
  std::string long_text = "x";
  while (long_text.size() < 5000) long_text += "\xC3\xA9";  // U+00E9, 2 bytes each
  ASSERT_OK(queues_->RecordFailure("jobs", b[0].receipt_handle, long_text));
  clock_.AdvanceSeconds(30);
  EXPECT_TRUE(ReceiveOk("jobs").empty());
  dead = queues_->ListDeadLetters("dlq", 10, (*dead)[0].id);
  ASSERT_OK(dead);
  ASSERT_EQ(dead->size(), 1u);
  // 4096 bytes would end inside a character: 4095 do not.
  EXPECT_EQ((*dead)[0].last_error, long_text.substr(0, 4095));
}

// Two nodes on one PostgreSQL database (a cluster's shape): each with its own
// PostgresDatabase (its own pool of connections) and its own QueueService, on one
// clock. Every promise of the queue holds across them.
class PostgresQueueNodesTest : public ::testing::Test {
 protected:
  static constexpr int kNodes = 2;
  static constexpr int kReceiversPerNode = 2;

  void SetUp() override {
    ASSERT_FALSE(server_database_.conninfo().empty());
    for (int n = 0; n < kNodes; ++n) {
      PostgresDatabase::Options options;
      options.conninfo = server_database_.conninfo();
      options.connections = 4;
      auto db = PostgresDatabase::Open(options);
      ASSERT_OK(db);
      databases_.push_back(std::move(db).value());
      nodes_.push_back(
          std::make_unique<QueueService>(databases_.back().get(), &clock_, nullptr));
    }
  }

  void TearDown() override {
    nodes_.clear();
    databases_.clear();  // before the database is dropped
  }

  QueueService& node(int n) { return *nodes_[n]; }

  // "jobs", visibility timeout 30 s, no dead-letter queue.
  void CreateJobs() {
    QueueOptions options;
    options.name = "jobs";
    options.visibility_timeout_s = 30;
    ASSERT_OK(node(0).CreateQueue(options));
  }

  struct Delivery {
    int node;
    ReceivedMessage message;
  };

  // kReceiversPerNode threads on every node receive batches of 3 at once until none
  // is left to them (time stands still: nothing reappears meanwhile). Fails the test
  // if a receive fails (a deadlock or lock timeout would).
  std::vector<Delivery> ReceiveFromAllNodes(const std::string& queue) {
    std::mutex mu;
    std::vector<Delivery> deliveries;  // GUARDED_BY(mu)
    std::vector<Status> errors;        // GUARDED_BY(mu)
    std::vector<std::thread> receivers;
    for (int n = 0; n < kNodes; ++n) {
      for (int t = 0; t < kReceiversPerNode; ++t) {
        receivers.emplace_back([&, n] {
          while (true) {
            auto got = node(n).Receive(queue, 3);
            std::lock_guard<std::mutex> lock(mu);
            if (!got.ok()) {
              errors.push_back(got.status());
              return;
            }
            if (got->empty()) return;
            for (ReceivedMessage& m : *got) deliveries.push_back({n, std::move(m)});
          }
        });
      }
    }
    for (auto& t : receivers) t.join();
    for (const Status& e : errors) ADD_FAILURE() << "receive failed: " << e.ToString();
    return deliveries;
  }

  ManualClock clock_;
  testing::PostgresTestDatabase server_database_{"queue_nodes"};
  std::vector<std::unique_ptr<PostgresDatabase>> databases_;
  std::vector<std::unique_ptr<QueueService>> nodes_;
};

// A receiver waiting on one node wakes when another node sends (LISTEN/NOTIFY): not at
// its deadline, which the manual clock never reaches unless the test gives up.
TEST_F(PostgresQueueNodesTest, AWaiterOnOneNodeWakesWhenAnotherNodeSends) {
  CreateJobs();
  for (int round = 0; round < 3; ++round) {
    std::future<Result<bool>> woken = std::async(std::launch::async, [&] {
      return node(1).WaitForMessages("jobs", clock_.NowMicros() + 3600LL * 1000000);
    });
    // Sent before or after the waiter began to wait: it never misses the message.
    ASSERT_OK(node(0).Send("jobs", "m" + std::to_string(round)));
    const bool in_time =
        woken.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
    if (!in_time) clock_.AdvanceSeconds(3601);  // end the wait, then fail
    ASSERT_TRUE(in_time) << "round " << round << ": the other node's Send woke nobody";
    Result<bool> visible = woken.get();
    ASSERT_OK(visible);
    EXPECT_TRUE(*visible);
    auto got = node(1).Receive("jobs", 10);
    ASSERT_OK(got);
    ASSERT_EQ(got->size(), 1u);
    ASSERT_OK(node(1).Delete("jobs", (*got)[0].receipt_handle));
  }
}

TEST_F(PostgresQueueNodesTest, EachMessageGoesToOneNodeAndOldHandlesAreStaleOnBoth) {
  ASSERT_NO_FATAL_FAILURE(CreateJobs());
  constexpr int kMessages = 120;
  std::set<std::string> sent;
  for (int i = 0; i < kMessages; ++i) {
    auto id = node(i % kNodes).Send("jobs", "m" + std::to_string(i));
    ASSERT_OK(id);
    sent.insert(*id);
  }

  // Twice: the first visibility period, then the second after every timeout expired.
  std::map<std::string, Delivery> first;
  std::map<std::string, Delivery> second;
  for (int period = 1; period <= 2; ++period) {
    std::map<std::string, Delivery>& by_id = period == 1 ? first : second;
    std::vector<Delivery> deliveries = ReceiveFromAllNodes("jobs");
    std::set<int> nodes_that_received;
    for (Delivery& d : deliveries) {
      nodes_that_received.insert(d.node);
      EXPECT_EQ(d.message.receive_count, period) << d.message.id;
      const std::string id = d.message.id;
      EXPECT_TRUE(by_id.emplace(id, std::move(d)).second)
          << id << " delivered twice in period " << period;
    }
    EXPECT_EQ(deliveries.size(), static_cast<size_t>(kMessages)) << "period " << period;
    std::set<std::string> received;
    for (const auto& [id, d] : by_id) received.insert(id);
    EXPECT_EQ(received, sent) << "period " << period << ": a message was lost";
    QueueStats stats = node(1 - period % 2).Stats("jobs").value();
    EXPECT_EQ(stats.visible, 0);
    EXPECT_EQ(stats.in_flight, kMessages);
    clock_.AdvanceSeconds(30);
  }

  // Every first-period handle is stale now, on the node that issued it and on the
  // other: refused, and nothing released or deleted.
  for (const auto& [id, old] : first) {
    const std::string& stale = old.message.receipt_handle;
    for (int n = 0; n < kNodes; ++n) {
      Status change = node(n).ChangeVisibility("jobs", stale, 0);
      EXPECT_TRUE(change.IsConditionFailed()) << change.ToString();
      Status del = node(n).Delete("jobs", stale);
      EXPECT_TRUE(del.IsConditionFailed()) << del.ToString();
    }
  }
  // The second period's handles expired with the clock's step above, but nobody has
  // received since: still the newest, they work on either node (here: the other one).
  for (const auto& [id, fresh] : second) {
    ASSERT_OK(
        node(1 - fresh.node).ChangeVisibility("jobs", fresh.message.receipt_handle, 60));
  }
  EXPECT_TRUE(node(0).Receive("jobs", 10)->empty()) << "a stale handle released one";
  for (const auto& [id, fresh] : second) {
    EXPECT_OK(node(1 - fresh.node).Delete("jobs", fresh.message.receipt_handle));
  }
  QueueStats stats = node(0).Stats("jobs").value();
  EXPECT_EQ(stats.visible + stats.in_flight + stats.delayed, 0);
}

// A handle goes stale across nodes while both act on the message at once: node 1
// receives it again (the old timeout expired) while node 0 deletes or releases it with
// the old handle. Whichever commits first, the two never both win: either the receive
// delivered it and the old handle is refused, or the old handle acted first.
TEST_F(PostgresQueueNodesTest, RacingAnOldHandleAgainstAReceiveOnTheOtherNode) {
  ASSERT_NO_FATAL_FAILURE(CreateJobs());
  constexpr int kRounds = 40;
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_OK(node(0).Send("jobs", "m"));
    auto old = node(0).Receive("jobs");
    ASSERT_OK(old);
    ASSERT_EQ(old->size(), 1u);
    clock_.AdvanceSeconds(30);
    const bool deleting = round % 2 == 0;
    const std::string handle = (*old)[0].receipt_handle;
    auto acted = std::async(std::launch::async, [&] {
      return deleting ? node(0).Delete("jobs", handle)
                      : node(0).ChangeVisibility("jobs", handle, 3600);
    });
    auto received = node(1).Receive("jobs");
    ASSERT_EQ(acted.wait_for(kGenerous), std::future_status::ready);
    Status old_result = acted.get();
    ASSERT_OK(received);
    if (received->empty()) {
      // The old handle came first: it deleted the message or hid it for an hour.
      EXPECT_OK(old_result);
      QueueStats stats = node(1).Stats("jobs").value();
      EXPECT_EQ(stats.visible, 0);
      EXPECT_EQ(stats.in_flight, deleting ? 0 : 1);
    } else {
      // The receive came first: the old handle lost and changed nothing.
      EXPECT_TRUE(old_result.IsConditionFailed()) << old_result.ToString();
      EXPECT_EQ((*received)[0].receive_count, 2);
      EXPECT_EQ(node(1).Stats("jobs")->in_flight, 1);
    }
    ASSERT_OK(node(0).Purge("jobs"));
  }
}

// Dead-lettering and the retention purge with receivers on both nodes at once: each
// message is moved once (never also delivered), expired ones are never delivered, and
// nobody fails on the other's locks.
TEST_F(PostgresQueueNodesTest, DeadLetteringAndRetentionPurgeAreSafeWithTwoNodes) {
  QueueOptions dlq;
  dlq.name = "dlq";
  ASSERT_OK(node(0).CreateQueue(dlq));
  QueueOptions jobs;
  jobs.name = "jobs";
  jobs.visibility_timeout_s = 30;
  jobs.max_receive_count = 1;
  jobs.dead_letter_queue = "dlq";
  jobs.retention_s = 100;
  ASSERT_OK(node(1).CreateQueue(jobs));
  constexpr int kMessages = 60;
  for (int i = 0; i < kMessages; ++i) ASSERT_OK(node(i % kNodes).Send("jobs", "p"));
  EXPECT_EQ(ReceiveFromAllNodes("jobs").size(), static_cast<size_t>(kMessages));

  // Every receive count has reached 1: the next receives move, on whichever node.
  clock_.AdvanceSeconds(30);
  EXPECT_TRUE(ReceiveFromAllNodes("jobs").empty()) << "a dead letter was delivered";
  auto dead = node(0).ListDeadLetters("dlq", 1000);
  ASSERT_OK(dead);
  ASSERT_EQ(dead->size(), static_cast<size_t>(kMessages));
  for (const DeadLetterMessage& m : *dead) {
    EXPECT_EQ(m.receive_count, 1) << m.id;
    EXPECT_EQ(m.source_queue, "jobs");
  }
  EXPECT_EQ(node(1).Stats("jobs")->dead_letter_depth, kMessages);

  // Back to "jobs"; then past their retention: two nodes purge while two receive.
  auto moved = node(1).Redrive("dlq");
  ASSERT_OK(moved);
  EXPECT_EQ(*moved, kMessages);
  clock_.AdvanceSeconds(101);  // redriven 101 s ago (its retention restarted), 100 s
  std::vector<std::future<Result<int64_t>>> purges;
  for (int n = 0; n < kNodes; ++n) {
    purges.push_back(
        std::async(std::launch::async, [&, n] { return node(n).PurgeExpired(); }));
  }
  std::vector<Delivery> delivered = ReceiveFromAllNodes("jobs");
  for (auto& p : purges) {
    ASSERT_EQ(p.wait_for(kGenerous), std::future_status::ready);
    EXPECT_OK(p.get());
  }
  EXPECT_TRUE(delivered.empty()) << "an expired message was delivered";
  QueueStats stats = node(0).Stats("jobs").value();
  EXPECT_EQ(stats.visible + stats.in_flight + stats.delayed, 0);
}

}  // namespace
}  // namespace sheetlog
