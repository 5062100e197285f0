// emulator/queue throughput: Send, Receive and Delete per second on a real SQLite file
// (WAL, synchronous=NORMAL, the default durability), with an empty queue and with
// 100,000 visible messages waiting ahead of the ones being worked on.
//
//   build/<dir>/queue_bench [--benchmark_min_time=2]
//
// Each iteration of BM_SendReceiveDelete is one message's life: Send, Receive(1),
// Delete(receipt), each its own write transaction; the counters give each operation's
// rate from the time spent in it. With a backlog, Receive takes the earliest visible
// message (a backlog one) and Send adds one at the end, so the backlog stays at its size.
// Record results in bench/README.md with the date and machine.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>

#include "emulator/env/clock.h"
#include "emulator/env/uuid.h"
#include "emulator/queue/queue.h"
#include "emulator/sqlite/database.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

using Steady = std::chrono::steady_clock;

struct Fixture {
  testing::TempDir dir;
  std::unique_ptr<Database> db;
  std::unique_ptr<QueueService> queues;

  explicit Fixture(int64_t backlog) {
    Database::Options options;
    options.path = dir.File("sheetlog.db");
    options.sync = SyncMode::kNormal;
    db = std::move(Database::Open(options)).value();
    queues = std::make_unique<QueueService>(db.get(), SystemClock::Default());
    QueueOptions q;
    q.name = "jobs";
    (void)queues->CreateQueue(q);
    // The backlog goes in with one transaction: only its presence is being measured.
    int64_t now = SystemClock::Default()->NowMicros();
    (void)db->Write([&](SqliteConnection& c) -> Status {
      for (int64_t i = 0; i < backlog; ++i) {
        ASSIGN_OR_RETURN(
            Statement s,
            c.Prepare("INSERT INTO queue_message (id, queue, body, sent_micros, "
                      "visible_at_micros) VALUES (?1, 'jobs', ?2, ?3, ?3)"));
        s.Bind(1, NewRandomUuid()).BindBlob(2, "backlog message body").Bind(3, now);
        RETURN_IF_ERROR(s.Run());
      }
      return Status::OK();
    });
  }
};

double Seconds(Steady::duration d) { return std::chrono::duration<double>(d).count(); }

void BM_SendReceiveDelete(benchmark::State& state) {
  Fixture f(state.range(0));
  const std::string body(200, 'b');  // about a snapshot job's size
  Steady::duration send{}, receive{}, remove{};
  for (auto _ : state) {
    auto t0 = Steady::now();
    auto id = f.queues->Send("jobs", body);
    auto t1 = Steady::now();
    auto got = f.queues->Receive("jobs", 1);
    auto t2 = Steady::now();
    if (!id.ok() || !got.ok() || got->size() != 1) {
      state.SkipWithError("send or receive failed");
      break;
    }
    Status deleted = f.queues->Delete("jobs", (*got)[0].receipt_handle);
    auto t3 = Steady::now();
    if (!deleted.ok()) {
      state.SkipWithError("delete failed");
      break;
    }
    send += t1 - t0;
    receive += t2 - t1;
    remove += t3 - t2;
  }
  double n = static_cast<double>(state.iterations());
  state.counters["send/s"] = n / Seconds(send);
  state.counters["receive/s"] = n / Seconds(receive);
  state.counters["delete/s"] = n / Seconds(remove);
  state.counters["messages/s"] = benchmark::Counter(n, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SendReceiveDelete)
    ->Arg(0)
    ->Arg(100000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Batches of 10: SendBatch, Receive(10), 10 Deletes.
void BM_BatchOf10(benchmark::State& state) {
  Fixture f(state.range(0));
  const std::vector<std::string> bodies(10, std::string(200, 'b'));
  for (auto _ : state) {
    auto ids = f.queues->SendBatch("jobs", bodies);
    auto got = f.queues->Receive("jobs", 10);
    if (!ids.ok() || !got.ok() || got->size() != 10) {
      state.SkipWithError("send or receive failed");
      break;
    }
    for (const ReceivedMessage& m : *got) {
      if (!f.queues->Delete("jobs", m.receipt_handle).ok()) {
        state.SkipWithError("delete failed");
        return;
      }
    }
  }
  state.counters["messages/s"] = benchmark::Counter(
      10.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BatchOf10)
    ->Arg(0)
    ->Arg(100000)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// Stats (the admin endpoint's per-queue numbers) over the backlog.
void BM_Stats(benchmark::State& state) {
  Fixture f(state.range(0));
  for (auto _ : state) {
    auto stats = f.queues->Stats("jobs");
    if (!stats.ok()) {
      state.SkipWithError("stats failed");
      break;
    }
    benchmark::DoNotOptimize(stats->visible);
  }
}
BENCHMARK(BM_Stats)->Arg(0)->Arg(100000)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace sheetlog

BENCHMARK_MAIN();
