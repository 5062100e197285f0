// emulator/stream + emulator/runtime: what the change feed costs a writer, how fast a
// stream mapping drains it, and what seed 002's execution history costs per record.
// Real SQLite file (WAL, synchronous=NORMAL, the default), SystemClock.
//
//   build/<dir>/stream_bench [--benchmark_min_time=2]
//
// BM_EntryInsert/<triggers>: one `entry` insert per Database::Write, with the stream
//   triggers (1) or with them detached (0): the writer's price for the outbox.
// BM_StreamDrain/<batch>/<history>: 2,000 entries over 16 segments are written first,
//   then a runtime with one stream mapping (4 workers) is started and timed until its
//   handler has seen all of them: records/s through read, history, handler, checkpoint.
// BM_StreamLatency: one entry written at a time while the runtime runs; the time from
//   the commit returning to the handler seeing the record (commit listener wake-up).
// BM_HistoryBeginFinish/<batch>: BeginBatch + FinishBatch for `batch` fresh keys.
// Record results in bench/README.md with the date and machine.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emulator/env/clock.h"
#include "emulator/runtime/function_runtime.h"
#include "emulator/sqlite/database.h"
#include "emulator/stream/change_feed.h"
#include "emulator/stream/stream_triggers.h"
#include "src/app/schema.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

using Steady = std::chrono::steady_clock;

struct Fixture {
  testing::TempDir dir;
  std::unique_ptr<Database> db;
  std::unique_ptr<ChangeFeed> feed;
  int64_t next = 0;

  Fixture() {
    Database::Options options;
    options.path = dir.File("sheetlog.db");
    options.sync = SyncMode::kNormal;
    db = std::move(OpenSheetlogDatabase(options)).value();
    feed = std::make_unique<ChangeFeed>(db.get(), SystemClock::Default());
  }

  Status Insert(int segments) {
    const int64_t n = next++;
    return db->Write([&](SqliteConnection& c) -> Status {
      ASSIGN_OR_RETURN(
          Statement s,
          c.Prepare("INSERT INTO entry (sheet_id, segment, num, seq, created, "
                    "type, version, body) VALUES (?, 0, ?, ?, 0, 'SetCell', 1, "
                    "'{\"ref\":\"B7\",\"value\":12.5}')"));
      s.Bind(1, "sheet-" + std::to_string(n % segments))
          .Bind(2, n / segments)
          .Bind(3, n / segments);
      return s.Run();
    });
  }
};

void BM_EntryInsert(benchmark::State& state) {
  Fixture f;
  if (state.range(0) == 0) {
    (void)f.db->Write([](SqliteConnection& c) { return DetachStream(c, "entry"); });
  }
  for (auto _ : state) {
    if (!f.Insert(16).ok()) state.SkipWithError("insert failed");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EntryInsert)->Arg(0)->Arg(1)->ArgNames({"triggers"});

// Waits (real time) until `count` records have been handled.
struct Counter {
  std::mutex mu;
  std::condition_variable cv;
  int64_t seen = 0;
  void Add(int64_t n) {
    std::lock_guard<std::mutex> lock(mu);
    seen += n;
    cv.notify_all();
  }
  void WaitFor(int64_t n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return seen >= n; });
  }
};

void BM_StreamDrain(benchmark::State& state) {
  constexpr int kRecords = 2000;
  for (auto _ : state) {
    state.PauseTiming();
    auto f = std::make_unique<Fixture>();
    for (int i = 0; i < kRecords; ++i) (void)f->Insert(16);
    Counter counter;
    FunctionRuntime::Options options;
    options.prune_interval_micros = 0;
    FunctionRuntime runtime(f->db.get(), SystemClock::Default(), nullptr, options);
    StreamMapping m;
    m.name = "bench";
    m.feed = f->feed.get();
    m.batch_size = static_cast<int>(state.range(0));
    m.keep_history = state.range(1) != 0;
    m.handler = [&](const std::vector<StreamRecord>& batch, InvocationContext&) {
      counter.Add(static_cast<int64_t>(batch.size()));
      return Status::OK();
    };
    (void)runtime.AddStreamMapping(std::move(m));
    state.ResumeTiming();
    (void)runtime.Start();
    counter.WaitFor(kRecords);
    state.PauseTiming();
    runtime.Stop();
    f.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}
BENCHMARK(BM_StreamDrain)
    ->Args({1, 1})
    ->Args({100, 0})
    ->Args({100, 1})
    ->ArgNames({"batch", "history"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_StreamLatency(benchmark::State& state) {
  Fixture f;
  Counter counter;
  FunctionRuntime::Options options;
  options.prune_interval_micros = 0;
  FunctionRuntime runtime(f.db.get(), SystemClock::Default(), nullptr, options);
  StreamMapping m;
  m.name = "bench";
  m.feed = f.feed.get();
  m.handler = [&](const std::vector<StreamRecord>& batch, InvocationContext&) {
    counter.Add(static_cast<int64_t>(batch.size()));
    return Status::OK();
  };
  (void)runtime.AddStreamMapping(std::move(m));
  (void)runtime.Start();
  std::vector<double> latencies;
  int64_t written = 0;
  for (auto _ : state) {
    (void)f.Insert(16);
    auto t0 = Steady::now();
    counter.WaitFor(++written);
    latencies.push_back(
        std::chrono::duration<double, std::micro>(Steady::now() - t0).count());
  }
  runtime.Stop();
  std::sort(latencies.begin(), latencies.end());
  if (!latencies.empty()) {
    state.counters["p50_us"] = latencies[latencies.size() / 2];
    state.counters["p99_us"] = latencies[latencies.size() * 99 / 100];
  }
}
BENCHMARK(BM_StreamLatency)->UseRealTime();

void BM_HistoryBeginFinish(benchmark::State& state) {
  Fixture f;
  ExecutionHistory history(f.db.get(), SystemClock::Default());
  const int batch = static_cast<int>(state.range(0));
  int64_t key = 0;
  for (auto _ : state) {
    std::vector<BeginRequest> requests;
    for (int i = 0; i < batch; ++i) {
      requests.push_back({"bench:" + std::to_string(key++), "bench", "inv", ""});
    }
    auto claims = history.BeginBatch(requests, kDefaultTimeBudgetMicros);
    if (!claims.ok()) {
      state.SkipWithError("begin failed");
      break;
    }
    std::vector<ExecutionHistory::Outcome> outcomes;
    for (const Claim& c : *claims) outcomes.push_back({&c, ExecStatus::kSucceeded, ""});
    if (!history.FinishBatch(outcomes).ok()) state.SkipWithError("finish failed");
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_HistoryBeginFinish)->Arg(1)->Arg(100)->ArgNames({"batch"});

}  // namespace
}  // namespace sheetlog

BENCHMARK_MAIN();
