// FunctionRuntime queue event source mappings over the real QueueService. Time is a
// ManualClock; background progress is awaited on conditions (bounded in real time).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/runtime/cluster_membership.h"
#include "emulator/runtime/function_runtime.h"
#include "tests/support/server_process.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

using namespace std::chrono_literals;
constexpr auto kPatience = 30s;

class Recorder {
 public:
  void Add(const RuntimeEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
    cv_.notify_all();
  }
  void Call(const ReceivedMessage& m) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(m);
    cv_.notify_all();
  }
  // Waits until `n` events of `kind` have been reported.
  bool WaitForEvents(RuntimeEvent::Kind kind, int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] { return CountLocked(kind) >= n; });
  }
  bool WaitForCalls(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] { return calls_.size() >= n; });
  }
  int Count(RuntimeEvent::Kind kind) {
    std::lock_guard<std::mutex> lock(mu_);
    return CountLocked(kind);
  }
  std::vector<ReceivedMessage> Calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  int CountLocked(RuntimeEvent::Kind kind) {
    int n = 0;
    for (const RuntimeEvent& e : events_) n += e.kind == kind;
    return n;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RuntimeEvent> events_;
  std::vector<ReceivedMessage> calls_;
};

class Gate {
 public:
  void Arrive() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  bool WaitForArrivals(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] { return waiting_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

class QueueMappingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenEmulatorTestDatabase(dir_.File("sheetlog.db"), &clock_);
    ASSERT_NE(db_, nullptr);
    queues_ = std::make_unique<QueueService>(db_.get(), &clock_, &faults_);
    QueueOptions q;
    q.name = "jobs";
    q.visibility_timeout_s = 30;
    ASSERT_OK(queues_->CreateQueue(q));
  }
  void TearDown() override { runtime_.reset(); }

  FunctionRuntime& NewRuntime() {
    FunctionRuntime::Options options;
    options.prune_interval_micros = 0;
    options.observer = [this](const RuntimeEvent& e) { recorder_.Add(e); };
    runtime_ = std::make_unique<FunctionRuntime>(db_.get(), &clock_, &faults_, options);
    return *runtime_;
  }

  // A runtime whose one mapping records each message and succeeds, started.
  void StartRecordingRuntime() {
    FunctionRuntime& rt = NewRuntime();
    ASSERT_OK(rt.AddQueueMapping(Mapping([&](const auto& msgs, InvocationContext&) {
      recorder_.Call(msgs[0]);
      return Status::OK();
    })));
    ASSERT_OK(rt.Start());
  }

  QueueMapping Mapping(QueueHandler handler) {
    QueueMapping m;
    m.name = "worker";
    m.queues = queues_.get();
    m.queue = "jobs";
    m.handler = std::move(handler);
    m.time_budget_micros = 30LL * 1000000;  // at most the queue's visibility timeout
    return m;
  }

  std::string Send(const std::string& body) {
    auto id = queues_->Send("jobs", body);
    EXPECT_OK(id);
    return id.ok() ? *id : "";
  }

  QueueStats Stats() {
    auto stats = queues_->Stats("jobs");
    EXPECT_OK(stats);
    return stats.ok() ? *stats : QueueStats{};
  }

  testing::TempDir dir_;
  ManualClock clock_;
  FaultInjector faults_{&clock_};
  std::unique_ptr<Database> db_;
  std::unique_ptr<QueueService> queues_;
  Recorder recorder_;
  std::unique_ptr<FunctionRuntime> runtime_;
};

TEST_F(QueueMappingTest, SuccessDeletesTheMessageAndRecordsHistory) {
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddQueueMapping(Mapping([&](const auto& msgs, InvocationContext& ctx) {
                  EXPECT_EQ(ctx.history_key(), "worker:" + msgs[0].id);
                  recorder_.Call(msgs[0]);
                  return Status::OK();
                }))
                  .ok());
  ASSERT_OK(rt.Start());
  const std::string id = Send("snapshot sheet-1 0 100");
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 1));
  EXPECT_EQ(recorder_.Calls()[0].body, "snapshot sheet-1 0 100");
  QueueStats stats = Stats();
  EXPECT_EQ(stats.visible + stats.in_flight + stats.delayed, 0) << "deleted";
  auto latest = rt.history().Latest("worker:" + id);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->status, ExecStatus::kSucceeded);
  EXPECT_EQ((*latest)->sequence, 2);
}

TEST_F(QueueMappingTest, FailureLeavesTheMessageUntilItsVisibilityTimeout) {
  std::atomic<int> attempts{0};
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddQueueMapping(Mapping([&](const auto& msgs, InvocationContext&) {
                  recorder_.Call(msgs[0]);
                  if (attempts.fetch_add(1) == 0) return Unavailable("blob store down");
                  return Status::OK();
                }))
                  .ok());
  ASSERT_OK(rt.Start());
  const std::string id = Send("job");
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageFailed, 1));
  QueueStats stats = Stats();
  EXPECT_EQ(stats.in_flight, 1) << "left in the queue, hidden until the timeout";
  // The failure is kept on the message (shown if it is dead-lettered later).
  auto listed = queues_->ListDeadLetters("jobs");
  ASSERT_OK(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_NE((*listed)[0].last_error.find("blob store down"), std::string::npos);

  clock_.AdvanceSeconds(29);
  EXPECT_EQ(recorder_.Calls().size(), 1u);
  clock_.AdvanceSeconds(2);  // past the 30 s visibility timeout
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 1));
  std::vector<ReceivedMessage> calls = recorder_.Calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].id, id);
  EXPECT_EQ(calls[1].receive_count, 2);
  auto rows = rt.history().List("worker:" + id);
  ASSERT_OK(rows);
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[1].status, ExecStatus::kFailed);
  EXPECT_EQ((*rows)[3].status, ExecStatus::kSucceeded);
}

TEST_F(QueueMappingTest, HandlerCanDeferAMessageItself) {
  std::atomic<int> attempts{0};
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddQueueMapping(Mapping([&](const auto& msgs, InvocationContext& ctx) {
                  recorder_.Call(msgs[0]);
                  if (attempts.fetch_add(1) == 0) {
                    // Seed 000: an earlier snapshot is pending; come back in 60 s.
                    Status s =
                        queues_->ChangeVisibility("jobs", msgs[0].receipt_handle, 60);
                    if (!s.ok()) return s;
                    ctx.MarkMessageHandled(msgs[0].id);
                  }
                  return Status::OK();
                }))
                  .ok());
  ASSERT_OK(rt.Start());
  const std::string id = Send("job");
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageHandled, 1));
  EXPECT_EQ(Stats().in_flight, 1) << "neither deleted nor failed";
  auto latest = rt.history().Latest("worker:" + id);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->status, ExecStatus::kDeferred);

  clock_.AdvanceSeconds(
      31);  // the runtime's 30 s would have passed; the handler's 60 not
  EXPECT_EQ(recorder_.Calls().size(), 1u);
  clock_.AdvanceSeconds(30);
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 1));
  EXPECT_EQ(recorder_.Calls().size(), 2u);
  EXPECT_EQ(recorder_.Count(RuntimeEvent::Kind::kMessageFailed), 0);
}

TEST_F(QueueMappingTest, PartialBatchFailureKeepsOnlyTheFailedMessage) {
  FunctionRuntime& rt = NewRuntime();
  QueueMapping m = Mapping([&](const auto& msgs, InvocationContext& ctx) {
    for (const ReceivedMessage& msg : msgs) {
      recorder_.Call(msg);
      if (msg.body == "bad") ctx.ReportItemFailure(msg.id, "cannot parse");
    }
    return Status::OK();
  });
  m.batch_size = 10;
  ASSERT_OK(rt.AddQueueMapping(std::move(m)));
  ASSERT_OK(queues_->SendBatch("jobs", {"good-1", "bad", "good-2"}));
  ASSERT_OK(rt.Start());
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 2));
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageFailed, 1));
  QueueStats stats = Stats();
  EXPECT_EQ(stats.in_flight, 1);
  EXPECT_EQ(stats.visible, 0);
}

TEST_F(QueueMappingTest, DuplicateDeliveryIsDeletedWithoutRunningAgain) {
  faults_.Arm(FaultPoint::kRuntimeQueueDuplicate, {FaultKind::kDuplicate, 1});
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddQueueMapping(Mapping([&](const auto& msgs, InvocationContext&) {
                  recorder_.Call(msgs[0]);
                  return Status::OK();
                }))
                  .ok());
  ASSERT_OK(rt.Start());
  Send("job");
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageDuplicate, 1));
  EXPECT_EQ(faults_.FiredCount(FaultPoint::kRuntimeQueueDuplicate), 1);
  EXPECT_EQ(recorder_.Calls().size(), 1u);
  EXPECT_EQ(rt.Stats()[0].duplicates, 1);
}

TEST_F(QueueMappingTest, ConcurrentDuplicateFoundInHistoryIsLeftAlone) {
  FunctionRuntime& rt = NewRuntime();
  QueueMapping m = Mapping([&](const auto& msgs, InvocationContext&) {
    recorder_.Call(msgs[0]);
    return Status::OK();
  });
  // The key comes from the work (the body), so a second message for the same job is
  // recognised as the same work.
  m.history_key = [](const ReceivedMessage& msg) { return "snapshot:" + msg.body; };
  ASSERT_OK(rt.AddQueueMapping(std::move(m)));
  // Another invocation of this runtime is working on the job right now.
  LiveInvocation other_is_running(&rt.live_invocations(), "other");
  auto other = rt.history().Begin({"snapshot:s1", "elsewhere", "other", ""},
                                  kDefaultTimeBudgetMicros);
  ASSERT_TRUE(other.ok() && other->outcome == BeginOutcome::kProceed);
  ASSERT_OK(rt.Start());
  Send("s1");
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageBusy, 1));
  EXPECT_EQ(recorder_.Calls().size(), 0u);
  EXPECT_EQ(Stats().in_flight, 1) << "not deleted: the other invocation may still fail";

  // The other invocation succeeds; the redelivery is then a duplicate and is deleted.
  ASSERT_OK(rt.history().Finish(*other, ExecStatus::kSucceeded));
  clock_.AdvanceSeconds(31);
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageDuplicate, 1));
  EXPECT_EQ(recorder_.Calls().size(), 0u);
  QueueStats stats = Stats();
  EXPECT_EQ(stats.visible + stats.in_flight, 0);
}

TEST_F(QueueMappingTest, ConsumersRunConcurrently) {
  Gate gate;
  FunctionRuntime& rt = NewRuntime();
  QueueMapping m = Mapping([&](const auto& msgs, InvocationContext&) {
    gate.Arrive();  // returns only once all three are in handlers at the same time
    recorder_.Call(msgs[0]);
    return Status::OK();
  });
  m.concurrency = 3;
  ASSERT_OK(rt.AddQueueMapping(std::move(m)));
  ASSERT_OK(rt.Start());
  for (int i = 0; i < 3; ++i) Send("job-" + std::to_string(i));
  ASSERT_TRUE(gate.WaitForArrivals(3));
  EXPECT_EQ(rt.Stats()[0].running, 3);  // all three in their handlers now
  gate.Open();
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 3));
  rt.Stop();
  EXPECT_EQ(rt.Stats()[0].running, 0);
}

TEST_F(QueueMappingTest, MessageOfAnAbandonedConsumerReappearsAfterItsTimeout) {
  const std::string id = Send("job");
  // A consumer receives the message and dies without deleting it.
  auto taken = queues_->Receive("jobs", 1);
  ASSERT_OK(taken);
  ASSERT_EQ(taken->size(), 1u);

  ASSERT_NO_FATAL_FAILURE(StartRecordingRuntime());
  Send("other");  // proves the runtime is receiving while the first one is hidden
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 1));
  EXPECT_EQ(recorder_.Calls().size(), 1u);
  EXPECT_EQ(recorder_.Calls()[0].body, "other");

  clock_.AdvanceSeconds(31);
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 2));
  EXPECT_EQ(recorder_.Calls()[1].id, id);
  EXPECT_EQ(recorder_.Calls()[1].receive_count, 2);
}

// A process of this data directory received a message and was killed (its lease row
// stays): the next process's start releases that lease, and with it the message, which
// runs at once instead of after its 30 s visibility timeout (no clock moves here).
TEST_F(QueueMappingTest, MessageHeldByAKilledProcessIsRedeliveredAtTheNextStart) {
  const std::string id = Send("job");
  ClusterMembership killed(db_.get(), &clock_);
  ASSERT_OK(killed.StartLease({30LL * 1000000, 10LL * 1000000, false, ""}));
  auto taken = queues_->Receive("jobs", 1, std::nullopt, killed.owner());
  ASSERT_OK(taken);
  ASSERT_EQ(taken->size(), 1u);

  ASSERT_NO_FATAL_FAILURE(StartRecordingRuntime());
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 1));
  ASSERT_EQ(recorder_.Calls().size(), 1u);
  EXPECT_EQ(recorder_.Calls()[0].id, id);
  EXPECT_EQ(recorder_.Calls()[0].receive_count, 2);
}

// A process killed while its handler ran leaves the message's
// history at `started`. After a restart that invocation exists nowhere, so the
// redelivery runs the work at once instead of waiting out the time budget (and
// dead-lettering the message meanwhile).
TEST_F(QueueMappingTest, StartedRowOfADeadProcessDoesNotHoldTheRedeliveryBack) {
  const std::string id = Send("job");
  {
    // The previous process: it received the message, wrote `started`, then died.
    FunctionRuntime dead(db_.get(), &clock_, &faults_);
    auto taken = queues_->Receive("jobs", 1, /*visibility_timeout_s=*/5);
    ASSERT_TRUE(taken.ok() && taken->size() == 1u);
    auto claim = dead.history().Begin({"worker:" + id, "worker", "dead-invocation", id},
                                      30LL * 1000000);
    ASSERT_TRUE(claim.ok() && claim->outcome == BeginOutcome::kProceed);
  }
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddQueueMapping(Mapping([&](const auto& msgs, InvocationContext&) {
                  recorder_.Call(msgs[0]);
                  return Status::OK();
                }))
                  .ok());
  auto abandoned = rt.ListAbandoned(0, clock_.NowMicros() + 1, 10);
  ASSERT_OK(abandoned);
  ASSERT_EQ(abandoned->size(), 1u) << "listed for operators and replay";
  EXPECT_EQ((*abandoned)[0].partition_key, "worker:" + id);
  ASSERT_OK(rt.Start());
  clock_.AdvanceSeconds(5);  // visible again long before the 30 s time budget ends
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 1));
  EXPECT_EQ(recorder_.Calls()[0].id, id);
  EXPECT_EQ(recorder_.Count(RuntimeEvent::Kind::kMessageBusy), 0);
  EXPECT_EQ(rt.Stats()[0].abandoned, 1);
  EXPECT_EQ(Stats().visible + Stats().in_flight, 0);
}

// The open gap crash_recovery_test documented: a handler that disposes of its own
// message (the snapshot worker defers by sending a delayed copy and deleting the
// original; or completes and deletes it), then a process that dies before the runtime
// writes the outcome row (here: the history write fails, and the invocation ends, so
// it is no longer live, exactly as after kill -9). The copy runs under its own key;
// the original's key would be listed as abandoned for good, with nothing left to run
// or replay. Its row is resolved instead, as the `deferred` row the runtime would
// have written; a dead row whose message still exists stays abandoned.
TEST_F(QueueMappingTest, DeadInvocationWhoseHandlerDisposedOfItsMessageIsNotAbandoned) {
  std::atomic<int> calls{0};
  FunctionRuntime& rt = NewRuntime();
  ASSERT_OK(rt.AddQueueMapping(Mapping([&](const auto& msgs, InvocationContext& ctx) {
    recorder_.Call(msgs[0]);
    if (calls.fetch_add(1) == 0) {
      // Defer: a delayed copy first, then the original goes (QueueMessageControl).
      Status sent = queues_->Send("jobs", msgs[0].body, /*delay_s=*/5).status();
      if (!sent.ok()) return sent;
      Status deleted = queues_->Delete("jobs", msgs[0].receipt_handle);
      if (!deleted.ok()) return deleted;
      faults_.Arm(FaultPoint::kHistoryFinish,
                  {});  // the process "dies" before the outcome row
      ctx.MarkMessageHandled(msgs[0].id);
    }
    return Status::OK();
  })));
  ASSERT_OK(rt.Start());
  const std::string original = Send("job");
  ASSERT_TRUE(recorder_.WaitForCalls(1));
  ASSERT_TRUE(testing::Eventually([&] { return rt.live_invocations().size() == 0; }));
  auto latest = rt.history().Latest("worker:" + original);
  ASSERT_OK(latest);
  ASSERT_TRUE(latest->has_value());
  ASSERT_EQ((*latest)->status, ExecStatus::kStarted) << "the outcome row was lost";

  auto abandoned = rt.ListAbandoned(0, clock_.NowMicros() + 1, 10);
  ASSERT_OK(abandoned);
  EXPECT_TRUE(abandoned->empty()) << (*abandoned)[0].partition_key;
  auto rows = rt.history().List("worker:" + original);
  ASSERT_OK(rows);
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1].status, ExecStatus::kDeferred);
  EXPECT_EQ((*rows)[1].invocation_id, (*rows)[0].invocation_id);
  EXPECT_NE((*rows)[1].error.find("was gone"), std::string::npos) << (*rows)[1].error;

  // The copy runs under its own key; nothing is left abandoned, failed or replayable.
  clock_.AdvanceSeconds(5);
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 1));
  ASSERT_EQ(recorder_.Calls().size(), 2u);
  EXPECT_NE(recorder_.Calls()[1].id, original);
  abandoned = rt.ListAbandoned(0, clock_.NowMicros() + 1, 10);
  ASSERT_OK(abandoned);
  EXPECT_TRUE(abandoned->empty());
  auto replayed = rt.Replay(0, clock_.NowMicros() + 1, 10);
  ASSERT_OK(replayed);
  EXPECT_TRUE(replayed->empty());
  rows = rt.history().List("worker:" + original);
  ASSERT_OK(rows);
  EXPECT_EQ(rows->size(), 2u) << "resolved once";

  // A dead invocation whose message is still in the queue is real abandoned work.
  rt.Stop();  // so that this test, not a consumer, receives the next message
  const std::string kept = Send("kept");
  auto taken = queues_->Receive("jobs", 1);
  ASSERT_OK(taken);
  ASSERT_EQ(taken->size(), 1u);
  auto claim = rt.history().Begin({"worker:" + kept, "worker", "dead-invocation", kept},
                                  30LL * 1000000);
  ASSERT_OK(claim);
  abandoned = rt.ListAbandoned(0, clock_.NowMicros() + 1, 10);
  ASSERT_OK(abandoned);
  ASSERT_EQ(abandoned->size(), 1u);
  EXPECT_EQ((*abandoned)[0].partition_key, "worker:" + kept);
}

// AWS refuses an SQS event source whose visibility timeout is shorter than the
// function timeout; so does the runtime.
TEST_F(QueueMappingTest, StartRefusesAVisibilityTimeoutShorterThanTheTimeBudget) {
  FunctionRuntime& rt = NewRuntime();
  QueueMapping m = Mapping([](const auto&, InvocationContext&) { return Status::OK(); });
  m.time_budget_micros = 31LL * 1000000;  // the queue hides messages for 30 s
  ASSERT_OK(rt.AddQueueMapping(std::move(m)));
  Status started = rt.Start();
  EXPECT_EQ(started.code(), StatusCode::kInvalidArgument) << started.ToString();
  EXPECT_NE(started.message().find("visibility timeout"), std::string::npos);

  FunctionRuntime& ok = NewRuntime();
  QueueMapping coherent =
      Mapping([](const auto&, InvocationContext&) { return Status::OK(); });
  coherent.visibility_timeout_s = 31;  // the mapping's own timeout counts
  coherent.time_budget_micros = 31LL * 1000000;
  ASSERT_OK(ok.AddQueueMapping(std::move(coherent)));
  EXPECT_OK(ok.Start());
}

TEST_F(QueueMappingTest, StopDrainsTheInFlightHandlerAndStartsNoNewOne) {
  Gate gate;
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddQueueMapping(Mapping([&](const auto& msgs, InvocationContext&) {
                  gate.Arrive();
                  recorder_.Call(msgs[0]);
                  return Status::OK();
                }))
                  .ok());
  ASSERT_OK(rt.Start());
  Send("job");
  ASSERT_TRUE(gate.WaitForArrivals(1));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    rt.Stop();
    stopped = true;
  });
  EXPECT_FALSE(stopped.load()) << "Stop returned while a handler was running";
  gate.Open();
  stopper.join();
  EXPECT_EQ(recorder_.Count(RuntimeEvent::Kind::kMessageSucceeded), 1);
  EXPECT_EQ(Stats().in_flight, 0) << "the drained invocation deleted its message";

  Send("late");
  EXPECT_EQ(recorder_.Calls().size(), 1u);
  EXPECT_EQ(Stats().visible, 1) << "no consumer after Stop";
}

TEST_F(QueueMappingTest, FaultBeforeDeleteLeavesAMessageThatIsThenDeletedAsDuplicate) {
  faults_.Arm(FaultPoint::kRuntimeQueueAfterHistoryBeforeDelete, {});
  ASSERT_NO_FATAL_FAILURE(StartRecordingRuntime());
  Send("job");
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 1));
  EXPECT_EQ(Stats().in_flight, 1) << "the delete did not happen";
  clock_.AdvanceSeconds(31);
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageDuplicate, 1));
  EXPECT_EQ(recorder_.Calls().size(), 1u);
  QueueStats stats = Stats();
  EXPECT_EQ(stats.visible + stats.in_flight, 0);
}

// Seed 002's replay for queue work: a message whose runs failed until it was
// dead-lettered is redriven and runs again; a message that succeeded is never touched,
// and a second replay finds nothing left to do.
TEST_F(QueueMappingTest, ReplayRedrivesOnlyTheDeadLetteredFailedMessage) {
  const int64_t t0 = clock_.NowMicros();
  QueueOptions dlq;
  dlq.name = "tasks-dlq";
  ASSERT_OK(queues_->CreateQueue(dlq));
  QueueOptions tasks;
  tasks.name = "tasks";
  tasks.visibility_timeout_s = 30;
  tasks.max_receive_count = 1;
  tasks.dead_letter_queue = "tasks-dlq";
  ASSERT_OK(queues_->CreateQueue(tasks));
  std::atomic<bool> failing{true};
  FunctionRuntime& rt = NewRuntime();
  QueueMapping m = Mapping([&](const auto& msgs, InvocationContext&) {
    recorder_.Call(msgs[0]);
    if (failing.load() && msgs[0].body == "poison") return Unavailable("downstream down");
    return Status::OK();
  });
  m.queue = "tasks";
  ASSERT_OK(rt.AddQueueMapping(std::move(m)));
  ASSERT_OK(rt.Start());
  auto good = queues_->Send("tasks", "good");
  auto poison = queues_->Send("tasks", "poison");
  ASSERT_OK(good);
  ASSERT_OK(poison);
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageFailed, 1));
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 1));
  clock_.AdvanceSeconds(31);  // visible again: the next receive dead-letters it
  ASSERT_TRUE(testing::Eventually([&] {
    auto stats = queues_->Stats("tasks");
    return stats.ok() && stats->dead_letter_depth == 1;
  }));
  EXPECT_EQ(recorder_.Calls().size(), 2u);

  failing = false;
  auto replayed = rt.Replay(t0, clock_.NowMicros() + 1, 100);
  ASSERT_OK(replayed);
  ASSERT_EQ(replayed->size(), 1u);
  EXPECT_EQ((*replayed)[0].key, "worker:" + *poison);
  EXPECT_EQ((*replayed)[0].outcome, "redriven") << (*replayed)[0].detail;
  ASSERT_TRUE(recorder_.WaitForEvents(RuntimeEvent::Kind::kMessageSucceeded, 2));
  std::vector<ReceivedMessage> calls = recorder_.Calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[2].id, *poison);
  auto latest = rt.history().Latest("worker:" + *poison);
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->status, ExecStatus::kSucceeded);

  replayed = rt.Replay(t0, clock_.NowMicros() + 1, 100);
  ASSERT_OK(replayed);
  EXPECT_TRUE(replayed->empty()) << "nothing failed is left";
  EXPECT_EQ(recorder_.Calls().size(), 3u);
}

}  // namespace
}  // namespace sheetlog
