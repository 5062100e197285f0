// FunctionRuntime stream event source mappings over the real `entry` change feed, from
// one source for every backend (Sqlite/... and Postgres/...).
// Time is a ManualClock that only the test moves; background progress is awaited on
// conditions signalled by the runtime's observer and the handlers (bounded in real time).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/postgres/postgres_database.h"
#include "emulator/runtime/function_runtime.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

using namespace std::chrono_literals;
constexpr auto kWaitBound = 30s;  // real-time bound on waiting for background threads

// Everything the runtime reported, awaitable.
class RuntimeEventLog {
 public:
  void Add(const RuntimeEvent& e) {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
    cv_.notify_all();
  }
  template <typename Pred>
  bool WaitFor(Pred pred) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitBound, [&] { return pred(events_); });
  }
  bool WaitForCheckpoint(const std::string& mapping, int shard, int64_t sequence) {
    return WaitFor([&](const std::vector<RuntimeEvent>& events) {
      for (const RuntimeEvent& e : events) {
        if (e.mapping == mapping && e.shard == shard && e.last_sequence >= sequence &&
            (e.kind == RuntimeEvent::Kind::kBatchSucceeded ||
             e.kind == RuntimeEvent::Kind::kRecordsSkipped ||
             e.kind == RuntimeEvent::Kind::kRecordsFiltered)) {
          return true;
        }
      }
      return false;
    });
  }
  int Count(RuntimeEvent::Kind kind, int shard = -1) {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const RuntimeEvent& e : events_)
      n += e.kind == kind && (shard < 0 || e.shard == shard);
    return n;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RuntimeEvent> events_;
};

// What handlers were given: one entry per invocation.
struct Invocation {
  int shard;
  std::vector<int64_t> sequences;
  std::vector<std::string> types;
  std::vector<std::string> keys;
};

class Calls {
 public:
  void Add(const std::vector<StreamRecord>& batch, const InvocationContext& ctx) {
    Invocation inv{batch.front().shard, {}, {}, ctx.history_keys()};
    for (const StreamRecord& r : batch) {
      inv.sequences.push_back(r.sequence);
      inv.types.push_back(r.new_image.value("type", ""));
    }
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back(std::move(inv));
    cv_.notify_all();
  }
  std::vector<Invocation> Get() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  bool WaitForCount(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitBound, [&] { return calls_.size() >= n; });
  }
  // Sequences of `shard` in delivery order (every invocation, failed ones included).
  std::vector<int64_t> Delivered(int shard) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int64_t> out;
    for (const Invocation& c : calls_) {
      if (c.shard == shard) out.insert(out.end(), c.sequences.begin(), c.sequences.end());
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Invocation> calls_;
};

// A gate a handler waits at until the test opens it.
class StreamGate {
 public:
  void Arrive() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  bool WaitForArrivals(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kWaitBound, [&] { return waiting_ >= n; });
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

class StreamMappingTest : public ::testing::TestWithParam<testing::Backend> {
 protected:
  void SetUp() override { OpenDatabase(); }

  // Opens the database, or opens it again (a restart).
  void OpenDatabase() {
    runtime_.reset();
    feed_.reset();
    if (db_ == nullptr) {
      db_ = testing::OpenEntryTestDatabase(GetParam(), dir_.File("sheetlog.db"), &clock_);
    } else {
      db_->Reopen();
    }
    ASSERT_NE(db_->get(), nullptr);
    feed_ = std::make_unique<ChangeFeed>(db_->get(), &clock_);
  }

  // The runtime's database: the backend's.
  Transactions* runtime_db() { return db_->get(); }

  // A runtime with no pruning (so nothing but commits and the test's clock moves it).
  FunctionRuntime& NewRuntime(int workers = 4, int64_t batching_window_micros = 0) {
    FunctionRuntime::Options options;
    options.stream_workers = workers;
    options.batching_window_micros = batching_window_micros;
    options.batching_window_clock = &window_clock_;
    options.prune_interval_micros = 0;
    options.observer = [this](const RuntimeEvent& e) { events_.Add(e); };
    runtime_ =
        std::make_unique<FunctionRuntime>(runtime_db(), &clock_, &faults_, options);
    return *runtime_;
  }

  StreamMapping Mapping(StreamHandler handler) {
    StreamMapping m;
    m.name = "effects";
    m.feed = feed_.get();
    m.handler = std::move(handler);
    return m;
  }

  // A mapping that records every batch it is given and succeeds.
  StreamMapping Recording() {
    return Mapping(
        [this](const std::vector<StreamRecord>& batch, InvocationContext& ctx) {
          calls_.Add(batch, ctx);
          return Status::OK();
        });
  }

  void Insert(const std::string& sheet, int64_t num, const std::string& type = "SetCell",
              bool external = false) {
    Status s = db_->get()->Write([&](Connection& c) -> Status {
      return c
          .RunSql(
              "INSERT INTO entry (sheet_id, segment, num, seq, created, "
              "external, type, version, body) VALUES (?1, 0, ?2, ?3, 1, ?4, "
              "?5, 1, NULL)",
              {sheet, num, num,
               external ? Value("blob/" + sheet + "/" + std::to_string(num))
                        : Value::Null(),
               type})
          .status();
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  int ShardOf(const std::string& sheet) {
    int shard = -1;
    EXPECT_TRUE(db_->get()
                    ->Read([&](Connection& c) -> Status {
                      return c
                          .RunSql("SELECT sheetlog_hash(?1, ?2) % 4", {sheet, 0},
                                  [&](const SqlRow& row) {
                                    shard = static_cast<int>(row.Int(0));
                                    return false;
                                  })
                          .status();
                    })
                    .ok());
    return shard;
  }

  // Two sheets whose entries land in different shards.
  std::pair<std::string, std::string> SheetsInTwoShards() {
    std::string first = "sheet-0";
    for (int i = 1; i < 100; ++i) {
      std::string other = "sheet-" + std::to_string(i);
      if (ShardOf(other) != ShardOf(first)) return {first, other};
    }
    ADD_FAILURE() << "no two shards";
    return {};
  }

  int64_t Checkpoint(int shard, const std::string& consumer = "effects") {
    auto cp = feed_->Checkpoint(consumer, shard);
    EXPECT_TRUE(cp.ok()) << cp.status().ToString();
    return cp.ok() ? *cp : -1;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  ManualClock window_clock_;  // ends batching windows (NewRuntime) when advanced
  FaultInjector faults_{&clock_};
  std::unique_ptr<testing::BackendTestDatabase> db_;
  std::unique_ptr<ChangeFeed> feed_;
  RuntimeEventLog events_;
  Calls calls_;
  std::unique_ptr<FunctionRuntime> runtime_;
};

TEST_P(StreamMappingTest, DeliversInOrderWithoutPollingAndCheckpoints) {
  FunctionRuntime& rt = NewRuntime();
  StreamMapping m = Mapping([&](const auto& batch, InvocationContext& ctx) {
    calls_.Add(batch, ctx);
    EXPECT_EQ(ctx.RemainingMicros(), kDefaultTimeBudgetMicros);  // the clock stands still
    EXPECT_FALSE(ctx.invocation_id().empty());
    return Status::OK();
  });
  m.batch_size = 2;
  ASSERT_TRUE(rt.AddStreamMapping(std::move(m)).ok());
  ASSERT_TRUE(rt.Start().ok());
  const int shard = ShardOf("s");
  for (int num = 0; num < 5; ++num) Insert("s", num);  // after Start: woken by commits

  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 5));
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  for (const Invocation& inv : calls_.Get()) EXPECT_LE(inv.sequences.size(), 2u);
  EXPECT_EQ(Checkpoint(shard), 5);
  // Each record has its started + succeeded history under the default key.
  const std::string key = "effects:" + std::to_string(shard) + ":3";
  auto rows = rt.history().List(key);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1].status, ExecStatus::kSucceeded);
  EXPECT_EQ((*rows)[1].detail,
            R"({"num":2,"segment":0,"sheet_id":"s"})");  // seq 3 = num 2
}

// With a batching window, a commit after a quiet window is delivered at once; the
// commits that follow within the window wake nobody and are delivered together when it
// ends (the window's own clock moves only when the test advances it).
TEST_P(StreamMappingTest, BatchingWindowGathersTheCommitsWithinItIntoOneInvocation) {
  constexpr int64_t kWindow = 5000;
  FunctionRuntime& rt = NewRuntime(/*workers=*/4, kWindow);
  ASSERT_TRUE(rt.AddStreamMapping(Recording()).ok());
  ASSERT_TRUE(rt.Start().ok());
  const int shard = ShardOf("s");
  // Whenever the start read the heads, one window later the first commit is read.
  Insert("s", 0);
  window_clock_.Advance(kWindow);
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 1));
  // After a quiet window a commit is read at once, which starts a new window...
  window_clock_.Advance(kWindow);
  Insert("s", 1);
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 2));
  // ...and the commits within it are read when it ends, together.
  for (int num = 2; num <= 4; ++num) Insert("s", num);
  window_clock_.Advance(kWindow);
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 5));
  std::vector<Invocation> calls = calls_.Get();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].sequences, (std::vector<int64_t>{1}));
  EXPECT_EQ(calls[1].sequences, (std::vector<int64_t>{2}));
  EXPECT_EQ(calls[2].sequences, (std::vector<int64_t>{3, 4, 5}));
}

TEST_P(StreamMappingTest, FilterDeliversOnlyMatchingRecordsAndSkipsTheRest) {
  FunctionRuntime& rt = NewRuntime();
  StreamMapping m = Mapping([&](const auto& batch, InvocationContext& ctx) {
    calls_.Add(batch, ctx);
    return Status::OK();
  });
  m.filter = EventFilter{{
      FilterPattern{{StreamEventName::kInsert},
                    {AttributeTest::Equals("type", {"Snapshot"})}},
      FilterPattern{{StreamEventName::kInsert}, {AttributeTest::Exists("external")}},
  }};
  ASSERT_TRUE(rt.AddStreamMapping(std::move(m)).ok());
  const int shard = ShardOf("s");
  Insert("s", 0, "Snapshot");
  Insert("s", 1, "SetCell");
  Insert("s", 2, "SetCell", /*external=*/true);
  Insert("s", 3, "SetCell");
  // A MODIFY of the Snapshot entry does not match (patterns want INSERT).
  ASSERT_TRUE(db_->get()
                  ->Write([](Connection& c) {
                    return c
                        .RunSql("UPDATE entry SET snapshot_root = 'r' WHERE num = 0", {})
                        .status();
                  })
                  .ok());
  ASSERT_TRUE(rt.Start().ok());

  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 5));
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{1, 3}));
  std::vector<Invocation> calls = calls_.Get();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].types, (std::vector<std::string>{"Snapshot", "SetCell"}));
  EXPECT_EQ(Checkpoint(shard), 5);

  // A shard with nothing matching still moves its checkpoint.
  auto [a, b] = SheetsInTwoShards();
  const std::string other = ShardOf(a) == shard ? b : a;
  Insert(other, 0, "SetCell");
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", ShardOf(other), 1));
  EXPECT_EQ(Checkpoint(ShardOf(other)), 1);
  EXPECT_EQ(calls_.Get().size(), 1u);
}

TEST_P(StreamMappingTest, FailingBatchRetriesAfterBackoffAndBlocksOnlyItsShard) {
  auto [sick, healthy] = SheetsInTwoShards();
  const int sick_shard = ShardOf(sick), healthy_shard = ShardOf(healthy);
  std::atomic<bool> failing{true};
  FunctionRuntime& rt = NewRuntime();
  StreamMapping m = Mapping([&](const auto& batch, InvocationContext& ctx) {
    calls_.Add(batch, ctx);
    if (batch.front().shard == sick_shard && failing)
      return Unavailable("downstream down");
    return Status::OK();
  });
  m.retry_base_micros = 2 * 1000000;
  ASSERT_TRUE(rt.AddStreamMapping(std::move(m)).ok());
  ASSERT_TRUE(rt.Start().ok());

  Insert(sick, 0);
  ASSERT_TRUE(events_.WaitFor([&](const auto& events) {
    for (const auto& e : events) {
      if (e.kind == RuntimeEvent::Kind::kBatchFailed && e.shard == sick_shard)
        return true;
    }
    return false;
  }));
  // The other shard keeps flowing while the sick one waits for its backoff.
  Insert(healthy, 0);
  Insert(sick, 1);
  Insert(healthy, 1);
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", healthy_shard, 2));
  EXPECT_EQ(Checkpoint(healthy_shard), 2);
  EXPECT_EQ(Checkpoint(sick_shard), 0);
  // No time has passed: no retry yet.
  EXPECT_EQ(calls_.Delivered(sick_shard), (std::vector<int64_t>{1}));

  // The retry is the same batch (record 1 alone), after the 2 s backoff.
  failing = false;
  clock_.AdvanceSeconds(1);
  EXPECT_EQ(calls_.Delivered(sick_shard), (std::vector<int64_t>{1}));
  clock_.AdvanceSeconds(1);
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", sick_shard, 2));
  EXPECT_EQ(calls_.Delivered(sick_shard), (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(Checkpoint(sick_shard), 2);
  // History: the failed attempt and the successful retry of record 1.
  auto rows = rt.history().List("effects:" + std::to_string(sick_shard) + ":1");
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[1].status, ExecStatus::kFailed);
  EXPECT_NE((*rows)[1].error.find("downstream down"), std::string::npos);
  EXPECT_EQ((*rows)[3].status, ExecStatus::kSucceeded);
}

TEST_P(StreamMappingTest, RecordOlderThanMaxAgeIsSkippedAndListedAsFailed) {
  const int64_t t0 = clock_.NowMicros();
  FunctionRuntime& rt = NewRuntime();
  StreamMapping m = Mapping([&](const auto& batch, InvocationContext& ctx) {
    calls_.Add(batch, ctx);
    if (batch.front().new_image.value("type", "") == "Poison")
      return Internal("bad record");
    return Status::OK();
  });
  m.max_record_age_micros = 10 * 1000000;
  ASSERT_TRUE(rt.AddStreamMapping(std::move(m)).ok());
  ASSERT_TRUE(rt.Start().ok());
  const int shard = ShardOf("s");
  Insert("s", 0, "Poison");
  ASSERT_TRUE(events_.WaitFor([&](const auto& events) {  // the backoff is now scheduled
    for (const auto& e : events) {
      if (e.kind == RuntimeEvent::Kind::kBatchFailed) return true;
    }
    return false;
  }));

  clock_.AdvanceSeconds(11);  // past the backoff and past the maximum age
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 1));
  EXPECT_EQ(events_.Count(RuntimeEvent::Kind::kRecordsSkipped, shard), 1);
  EXPECT_EQ(calls_.Get().size(), 1u) << "a too-old record is not retried";
  EXPECT_EQ(Checkpoint(shard), 1);
  auto failed = rt.history().ListFailed(t0, clock_.NowMicros() + 1);
  ASSERT_TRUE(failed.ok());
  ASSERT_EQ(failed->size(), 1u);
  EXPECT_EQ((*failed)[0].partition_key, "effects:" + std::to_string(shard) + ":1");
  EXPECT_NE((*failed)[0].error.find("exceeds the maximum"), std::string::npos);
  EXPECT_NE((*failed)[0].error.find("bad record"), std::string::npos);

  // The shard moves on.
  Insert("s", 1);
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 2));
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(rt.Stats()[0].skipped, 1);
}

// Seed 002's replay for stream work: only the records whose latest run failed are
// handed to the handler again (each alone, through the history guard); records that
// succeeded are never re-run, and a second replay finds nothing left to do.
TEST_P(StreamMappingTest, ReplayRerunsOnlyTheFailedRecords) {
  const int64_t t0 = clock_.NowMicros();
  std::atomic<bool> failing{true};
  FunctionRuntime& rt = NewRuntime();
  StreamMapping m = Mapping([&](const auto& batch, InvocationContext& ctx) {
    calls_.Add(batch, ctx);
    if (failing.load() && batch.front().new_image.value("type", "") == "Poison")
      return Internal("bad record");
    return Status::OK();
  });
  m.batch_size = 1;
  m.max_retry_attempts = 0;  // skip a failed record at once (listed as failed)
  ASSERT_TRUE(rt.AddStreamMapping(std::move(m)).ok());
  ASSERT_TRUE(rt.Start().ok());
  const int shard = ShardOf("s");
  for (int num = 0; num < 4; ++num) Insert("s", num, num % 2 == 1 ? "Poison" : "SetCell");
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 4));
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{1, 2, 3, 4}));

  failing = false;
  auto replayed = rt.Replay(t0, clock_.NowMicros() + 1, 100);
  ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
  ASSERT_EQ(replayed->size(), 2u);
  const std::string prefix = "effects:" + std::to_string(shard) + ":";
  EXPECT_EQ((*replayed)[0].key, prefix + "2");
  EXPECT_EQ((*replayed)[1].key, prefix + "4");
  for (const auto& item : *replayed) EXPECT_EQ(item.outcome, "succeeded") << item.detail;
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{1, 2, 3, 4, 2, 4}));
  auto rows = rt.history().List(prefix + "2");
  ASSERT_TRUE(rows.ok());
  ASSERT_FALSE(rows->empty());
  EXPECT_EQ(rows->back().status, ExecStatus::kSucceeded);

  replayed = rt.Replay(t0, clock_.NowMicros() + 1, 100);
  ASSERT_TRUE(replayed.ok());
  EXPECT_TRUE(replayed->empty()) << "nothing failed is left";
  EXPECT_EQ(calls_.Delivered(shard).size(), 6u);
}

TEST_P(StreamMappingTest, BisectIsolatesThePoisonRecord) {
  const int64_t t0 = clock_.NowMicros();
  const int shard = ShardOf("s");
  for (int num = 0; num < 8; ++num) Insert("s", num, num == 5 ? "Poison" : "SetCell");
  std::mutex mu;
  std::vector<int64_t> succeeded;
  FunctionRuntime& rt = NewRuntime();
  StreamMapping m = Mapping([&](const auto& batch, InvocationContext& ctx) {
    calls_.Add(batch, ctx);
    for (const StreamRecord& r : batch) {
      if (r.new_image.value("type", "") == "Poison") return Internal("poison");
    }
    std::lock_guard<std::mutex> lock(mu);
    for (const StreamRecord& r : batch) succeeded.push_back(r.sequence);
    return Status::OK();
  });
  m.batch_size = 8;
  m.bisect_on_error = true;
  m.max_retry_attempts = 0;
  ASSERT_TRUE(rt.AddStreamMapping(std::move(m)).ok());
  ASSERT_TRUE(rt.Start().ok());

  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 8));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(succeeded, (std::vector<int64_t>{1, 2, 3, 4, 5, 7, 8}));
  }
  // Sequence 6 is the poison (num 5). [1..8] fails; [1..4] ok; [5..8] fails; [5,6]
  // fails; [5] ok; [6] fails alone, is out of retries and skipped; [7,8] ok.
  std::vector<Invocation> calls = calls_.Get();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.front().sequences.size(), 8u);
  EXPECT_EQ(calls.back().sequences, (std::vector<int64_t>{7, 8}));
  auto failed = rt.history().ListFailed(t0, clock_.NowMicros() + 1);
  ASSERT_TRUE(failed.ok());
  ASSERT_EQ(failed->size(), 1u);
  EXPECT_EQ((*failed)[0].partition_key, "effects:" + std::to_string(shard) + ":6");
  EXPECT_EQ(Checkpoint(shard), 8);
}

TEST_P(StreamMappingTest, CheckpointsSurviveARestart) {
  const int shard = ShardOf("s");
  {
    FunctionRuntime& rt = NewRuntime();
    ASSERT_TRUE(
        rt.AddStreamMapping(Mapping([&](const auto& batch, InvocationContext& ctx) {
            calls_.Add(batch, ctx);
            return Status::OK();
          }))
            .ok());
    ASSERT_TRUE(rt.Start().ok());
    for (int num = 0; num < 3; ++num) Insert("s", num);
    ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 3));
    rt.Stop();
  }
  OpenDatabase();  // a new process, as far as the database is concerned
  Calls second;
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddStreamMapping(Mapping([&](const auto& batch, InvocationContext& ctx) {
                  second.Add(batch, ctx);
                  return Status::OK();
                }))
                  .ok());
  Insert("s", 3);
  Insert("s", 4);
  ASSERT_TRUE(rt.Start().ok());
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 5));
  EXPECT_EQ(second.Delivered(shard), (std::vector<int64_t>{4, 5}));
}

TEST_P(StreamMappingTest, StartingAtLatestIgnoresEarlierRecords) {
  const int shard = ShardOf("s");
  Insert("s", 0);
  FunctionRuntime& rt = NewRuntime();
  StreamMapping m = Mapping([&](const auto& batch, InvocationContext& ctx) {
    calls_.Add(batch, ctx);
    return Status::OK();
  });
  m.starting_position = StreamMapping::StartingPosition::kLatest;
  ASSERT_TRUE(rt.AddStreamMapping(std::move(m)).ok());
  ASSERT_TRUE(rt.Start().ok());
  Insert("s", 1);
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 2));
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{2}));
}

TEST_P(StreamMappingTest, DuplicateDeliveryIsCaughtByTheHistory) {
  faults_.Arm(FaultPoint::kRuntimeStreamDuplicate, {FaultKind::kDuplicate, -1});
  const int shard = ShardOf("s");
  Calls unguarded;
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddStreamMapping(Recording()).ok());
  StreamMapping raw = Mapping([&](const auto& batch, InvocationContext& ctx) {
    unguarded.Add(batch, ctx);
    return Status::OK();
  });
  raw.name = "no-history";
  raw.keep_history = false;
  ASSERT_TRUE(rt.AddStreamMapping(std::move(raw)).ok());
  ASSERT_TRUE(rt.Start().ok());
  Insert("s", 0);
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 1));
  ASSERT_TRUE(events_.WaitForCheckpoint("no-history", shard, 1));
  EXPECT_GE(faults_.FiredCount(FaultPoint::kRuntimeStreamDuplicate), 2);
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{1}));
  EXPECT_EQ(unguarded.Delivered(shard), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(rt.Stats()[0].duplicates, 1);
}

TEST_P(StreamMappingTest, CrashBeforeCheckpointRedeliversButDoesNotRerun) {
  faults_.Arm(FaultPoint::kRuntimeAfterHandlerBeforeCheckpoint, {});
  const int shard = ShardOf("s");
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddStreamMapping(Recording()).ok());
  ASSERT_TRUE(rt.Start().ok());
  Insert("s", 0);
  ASSERT_TRUE(events_.WaitFor([&](const auto& events) {
    for (const auto& e : events) {
      if (e.kind == RuntimeEvent::Kind::kBatchFailed) return true;
    }
    return false;
  }));
  EXPECT_EQ(Checkpoint(shard), 0);
  clock_.AdvanceSeconds(1);  // the retry: history says succeeded, the handler is skipped
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 1));
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{1}));
  EXPECT_EQ(Checkpoint(shard), 1);
}

// Kill -9 inside the handler leaves the batch's history rows
// `started`. The restarted runtime delivers the batch at once (the dead invocation is
// not running anywhere) instead of backing off until its 900 s budget passes while
// every sheet of the shard waits.
TEST_P(StreamMappingTest, StartedRowsOfADeadProcessAreRerunAtOnceAfterARestart) {
  const int shard = ShardOf("s");
  Insert("s", 0);
  {
    // The previous process began the record's work and died inside the handler.
    FunctionRuntime dead(runtime_db(), &clock_, &faults_);
    auto claim = dead.history().Begin(
        {"effects:" + std::to_string(shard) + ":1", "effects", "dead-invocation", ""},
        kDefaultTimeBudgetMicros);
    ASSERT_TRUE(claim.ok() && claim->outcome == BeginOutcome::kProceed);
  }
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddStreamMapping(Recording()).ok());
  ASSERT_TRUE(rt.Start().ok());
  // No clock move at all: the first attempt runs it.
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 1));
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{1}));
  EXPECT_EQ(rt.Stats()[0].abandoned, 1);
  EXPECT_TRUE(events_.WaitFor([](const std::vector<RuntimeEvent>& events) {
    for (const auto& e : events) {
      if (e.kind == RuntimeEvent::Kind::kBatchFailed) return false;
    }
    return true;
  })) << "no attempt failed as 'running elsewhere'";
}

// POST /v1/admin/jobs/replay (Replay) handles a `started` row whose
// invocation died (no outcome row, and no live invocation of that id) like a failed
// one: it runs the record again and writes its outcome; a second replay finds nothing.
// A started row of an invocation that is still running is left to it.
TEST_P(StreamMappingTest, ReplayRerunsTheRecordOfADeadInvocationsStartedRow) {
  const int64_t t0 = clock_.NowMicros();
  const int shard = ShardOf("s");
  Insert("s", 0);
  Insert("s", 1);
  const std::string dead_key = "effects:" + std::to_string(shard) + ":1";
  const std::string live_key = "effects:" + std::to_string(shard) + ":2";
  FunctionRuntime& rt = NewRuntime();
  StreamMapping m = Mapping([&](const auto& batch, InvocationContext& ctx) {
    calls_.Add(batch, ctx);
    return Status::OK();
  });
  // The mapping's own deliveries start after these records: only Replay runs them.
  m.starting_position = StreamMapping::StartingPosition::kLatest;
  ASSERT_TRUE(rt.AddStreamMapping(std::move(m)).ok());
  ASSERT_TRUE(rt.Start().ok());
  {
    // A previous process began record 1's work and died in the handler.
    FunctionRuntime dead(runtime_db(), &clock_, &faults_);
    auto claim = dead.history().Begin({dead_key, "effects", "dead-invocation", ""},
                                      kDefaultTimeBudgetMicros);
    ASSERT_TRUE(claim.ok() && claim->outcome == BeginOutcome::kProceed);
  }
  // Record 2's work is under way in this process (a stand-in live invocation).
  LiveInvocation running(&rt.live_invocations(), "live-invocation");
  auto live_claim = rt.history().Begin({live_key, "effects", "live-invocation", ""},
                                       kDefaultTimeBudgetMicros);
  ASSERT_TRUE(live_claim.ok() && live_claim->outcome == BeginOutcome::kProceed);
  clock_.AdvanceSeconds(1);  // long before the 900 s budget would call either dead

  auto abandoned = rt.ListAbandoned(t0, clock_.NowMicros() + 1, 10);
  ASSERT_TRUE(abandoned.ok()) << abandoned.status().ToString();
  ASSERT_EQ(abandoned->size(), 1u);
  EXPECT_EQ((*abandoned)[0].partition_key, dead_key);

  auto replayed = rt.Replay(t0, clock_.NowMicros() + 1, 100);
  ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
  ASSERT_EQ(replayed->size(), 1u);
  EXPECT_EQ((*replayed)[0].key, dead_key);
  EXPECT_EQ((*replayed)[0].outcome, "succeeded") << (*replayed)[0].detail;
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{1}));
  auto rows = rt.history().List(dead_key);
  ASSERT_TRUE(rows.ok());
  ASSERT_FALSE(rows->empty());
  EXPECT_EQ(rows->back().status, ExecStatus::kSucceeded);

  replayed = rt.Replay(t0, clock_.NowMicros() + 1, 100);
  ASSERT_TRUE(replayed.ok());
  EXPECT_TRUE(replayed->empty()) << "nothing abandoned is left";
  EXPECT_EQ(calls_.Delivered(shard).size(), 1u);
}

TEST_P(StreamMappingTest, ShardsRunInParallelAndStopDrainsTheInFlightBatch) {
  auto [slow, fast] = SheetsInTwoShards();
  const int slow_shard = ShardOf(slow), fast_shard = ShardOf(fast);
  StreamGate gate;
  FunctionRuntime& rt = NewRuntime(/*workers=*/2);
  ASSERT_TRUE(rt.AddStreamMapping(Mapping([&](const auto& batch, InvocationContext& ctx) {
                  if (batch.front().shard == slow_shard) gate.Arrive();
                  calls_.Add(batch, ctx);
                  return Status::OK();
                }))
                  .ok());
  ASSERT_TRUE(rt.Start().ok());
  Insert(slow, 0);
  ASSERT_TRUE(gate.WaitForArrivals(1));
  Insert(fast, 0);  // handled while the slow shard's handler is still running
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", fast_shard, 1));

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    rt.Stop();
    stopped = true;
  });
  // Stop cannot return while a handler runs; it must wait for it.
  EXPECT_FALSE(stopped.load());
  gate.Open();
  stopper.join();
  EXPECT_EQ(calls_.Delivered(slow_shard), (std::vector<int64_t>{1}));
  EXPECT_EQ(Checkpoint(slow_shard), 1) << "the drained batch completed its checkpoint";
  const size_t before = calls_.Get().size();
  Insert(slow, 1);  // nothing runs any more
  EXPECT_EQ(calls_.Get().size(), before);
  EXPECT_EQ(Checkpoint(slow_shard), 1);
}

TEST_P(StreamMappingTest, PrunedRecordsAreReportedLostAndSkipped) {
  const int shard = ShardOf("s");
  Insert("s", 0);
  Insert("s", 1);
  clock_.AdvanceSeconds(25 * 3600);
  ASSERT_EQ(*feed_->Prune(), 2);
  Insert("s", 2);
  FunctionRuntime& rt = NewRuntime();
  ASSERT_TRUE(rt.AddStreamMapping(Recording()).ok());
  ASSERT_TRUE(rt.Start().ok());
  ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, 3));
  EXPECT_EQ(calls_.Delivered(shard), (std::vector<int64_t>{3}));
  EXPECT_EQ(events_.Count(RuntimeEvent::Kind::kRecordsLost, shard), 1);
}

TEST_P(StreamMappingTest, RejectsBadMappings) {
  FunctionRuntime& rt = NewRuntime();
  StreamMapping no_feed = Mapping([](const auto&, auto&) { return Status::OK(); });
  no_feed.feed = nullptr;
  EXPECT_EQ(rt.AddStreamMapping(no_feed).code(), StatusCode::kInvalidArgument);
  StreamMapping big = Mapping([](const auto&, auto&) { return Status::OK(); });
  big.batch_size = 0;
  EXPECT_EQ(rt.AddStreamMapping(big).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(
      rt.AddStreamMapping(Mapping([](const auto&, auto&) { return Status::OK(); })).ok());
  EXPECT_EQ(rt.AddStreamMapping(Mapping([](const auto&, auto&) { return Status::OK(); }))
                .code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(rt.Start().ok());
  EXPECT_EQ(rt.Start().code(), StatusCode::kFailedPrecondition);
}

// Two runtimes (nodes) on one PostgreSQL database: one consumer per shard at a time,
// the shards shared between them (claim rounds every 10 s of the clock), and a node that
// stops hands its shards to the other, which goes on from the saved checkpoints. Every
// record is delivered once: never run by both (no duplicate found in the history, no
// batch refused as running elsewhere).
TEST_P(StreamMappingTest, TwoNodesShareTheShardsAndHandThemOverOneConsumerEach) {
  if (GetParam() != testing::Backend::kPostgres) {
    GTEST_SKIP() << "a SQLite file has one process";
  }
  std::map<int, std::string> sheet_of;  // a sheet in each shard
  for (int i = 0; sheet_of.size() < 4 && i < 1000; ++i) {
    const std::string sheet = "sheet-" + std::to_string(i);
    sheet_of.emplace(ShardOf(sheet), sheet);
  }
  ASSERT_EQ(sheet_of.size(), 4u);
  int64_t num = 0;
  std::map<int, int64_t> newest;  // shard -> its newest sequence
  auto insert_round = [&] {
    for (const auto& [shard, sheet] : sheet_of) {
      Insert(sheet, num++);
      ++newest[shard];
    }
  };
  auto all_done = [&] {
    for (const auto& [shard, sequence] : newest) {
      if (Checkpoint(shard) < sequence) return false;
    }
    return true;
  };

  FunctionRuntime& node1 = NewRuntime();
  ASSERT_TRUE(node1.AddStreamMapping(Recording()).ok());
  insert_round();
  ASSERT_TRUE(node1.Start().ok());
  for (const auto& [shard, sequence] : newest) {
    ASSERT_TRUE(events_.WaitForCheckpoint("effects", shard, sequence));
  }

  PostgresDatabase::Options options;
  options.conninfo = db_->conninfo();
  options.clock = &clock_;
  auto db2 = PostgresDatabase::Open(options);
  ASSERT_TRUE(db2.ok()) << db2.status().ToString();
  ChangeFeed feed2(db2->get(), &clock_);
  Calls calls2;
  FunctionRuntime::Options runtime2_options;
  runtime2_options.prune_interval_micros = 0;
  auto node2 =
      std::make_unique<FunctionRuntime>(db2->get(), &clock_, nullptr, runtime2_options);
  StreamMapping m2;
  m2.name = "effects";
  m2.feed = &feed2;
  m2.handler = [&](const std::vector<StreamRecord>& batch, InvocationContext& ctx) {
    calls2.Add(batch, ctx);
    return Status::OK();
  };
  ASSERT_TRUE(node2->AddStreamMapping(std::move(m2)).ok());
  ASSERT_TRUE(node2->Start().ok());

  // Node 1 gives up what exceeds its share (2 of 4) at a round, node 2 takes it at one
  // of its own: records meanwhile wait for the next round, so time moves on until
  // node 2 has worked and everything is done.
  bool shared = false;
  for (int round = 0; round < 12 && !shared; ++round) {
    clock_.AdvanceSeconds(10);
    insert_round();
    shared = testing::Eventually(all_done, 3) && !calls2.Get().empty();
  }
  ASSERT_TRUE(shared) << "node 2 never consumed a shard";
  std::set<int> node1_shards, node2_shards;
  for (const Invocation& c : calls_.Get()) node1_shards.insert(c.shard);
  for (const Invocation& c : calls2.Get()) node2_shards.insert(c.shard);
  EXPECT_FALSE(node1_shards.empty());

  // Node 1 stops: its claims go with its lease, and node 2 takes every shard at its
  // next round, from node 1's checkpoints.
  node1.Stop();
  const size_t node2_calls_before = calls2.Get().size();
  clock_.AdvanceSeconds(10);
  insert_round();
  ASSERT_TRUE(testing::Eventually(all_done, 30)) << "node 2 did not take node 1's shards";
  std::set<int> taken;
  const std::vector<Invocation> after = calls2.Get();
  for (size_t i = node2_calls_before; i < after.size(); ++i) taken.insert(after[i].shard);
  EXPECT_EQ(taken.size(), 4u);

  for (const auto& [shard, sequence] : newest) {
    std::vector<int64_t> delivered = calls_.Delivered(shard);
    for (int64_t seq : calls2.Delivered(shard)) delivered.push_back(seq);
    std::sort(delivered.begin(), delivered.end());
    std::vector<int64_t> expected;
    for (int64_t seq = 1; seq <= sequence; ++seq) expected.push_back(seq);
    EXPECT_EQ(delivered, expected) << "shard " << shard << ": each record once";
  }
  for (const MappingStats& stats : node1.Stats()) {
    EXPECT_EQ(stats.duplicates, 0) << "node 1 ran a record node 2 had run";
    EXPECT_EQ(stats.failures, 0) << "node 1 met node 2 running its batch";
  }
  for (const MappingStats& stats : node2->Stats()) {
    EXPECT_EQ(stats.duplicates, 0) << "node 2 ran a record node 1 had run";
    EXPECT_EQ(stats.failures, 0) << "node 2 met node 1 running its batch";
  }
  node2->Stop();
}

INSTANTIATE_TEST_SUITE_P(Sqlite, StreamMappingTest,
                         ::testing::Values(testing::Backend::kSqlite));
INSTANTIATE_TEST_SUITE_P(Postgres, StreamMappingTest,
                         ::testing::Values(testing::Backend::kPostgres));

}  // namespace
}  // namespace sheetlog
