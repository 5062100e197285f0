// Blob store throughput: puts and gets per second for 1 KiB and 1 MiB objects with fsync
// on and off, and the cost of the whole-store operations at 100k objects (a listing
// page, opening the store with its recovery walk, a lifecycle sweep that deletes
// nothing).
//
//   build/release/blob_bench [--benchmark_filter=Put] [--benchmark_min_time=2s]
//
// Results go in bench/README.md with the date and machine.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <string>

#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/clock.h"
#include "tests/support/temp_dir.h"

namespace {

using sheetlog::BlobListOptions;
using sheetlog::BlobStore;
using sheetlog::BlobStoreOptions;
using sheetlog::SystemClock;
using sheetlog::testing::TempDir;

std::unique_ptr<BlobStore> Open(const std::string& root, bool sync) {
  BlobStoreOptions options;
  options.root = root;
  options.sync = sync;
  auto store = DirectoryBlobStore::Open(options, SystemClock::Default());
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    std::abort();
  }
  return std::move(store).value();
}

// Keys cycle over 1000 names, so after the first round every put is an overwrite
// (the common case for snapshot chunks written twice by duplicate invocations).
void BM_Put(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const bool sync = state.range(1) != 0;
  TempDir dir;
  auto store = Open(dir.File("blobs"), sync);
  const std::string body(size, 'x');
  int64_t i = 0;
  for (auto _ : state) {
    auto info = store->Put("bench/k" + std::to_string(i++ % 1000), body);
    if (!info.ok()) state.SkipWithError(info.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
  state.SetLabel(sync ? "fsync on" : "fsync off");
}
BENCHMARK(BM_Put)
    ->ArgNames({"bytes", "sync"})
    ->Args({1024, 0})
    ->Args({1024, 1})
    ->Args({1 << 20, 0})
    ->Args({1 << 20, 1})
    ->UseRealTime();

void BM_Get(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  TempDir dir;
  auto store = Open(dir.File("blobs"), false);
  const std::string body(size, 'x');
  for (int i = 0; i < 100; ++i) (void)store->Put("bench/k" + std::to_string(i), body);
  int64_t i = 0;
  for (auto _ : state) {
    auto data = store->Get("bench/k" + std::to_string(i++ % 100));
    if (!data.ok() || data->size() != size) state.SkipWithError("get failed");
    benchmark::DoNotOptimize(data);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(size));
}
BENCHMARK(BM_Get)->ArgNames({"bytes"})->Arg(1024)->Arg(1 << 20)->UseRealTime();

// 100k small objects under 100 directories ("d<NN>/<NNNNNN>"), built once.
class Store100k {
 public:
  static Store100k& Get() {
    static Store100k instance;
    return instance;
  }
  std::string root() const { return dir_.File("blobs"); }

 private:
  Store100k() {
    auto store = Open(root(), false);
    char key[32];
    for (int i = 0; i < 100000; ++i) {
      std::snprintf(key, sizeof key, "d%02d/%06d", i % 100, i);
      (void)store->Put(key, "small body", {"", {{"auto-delete", "false"}}});
    }
  }
  TempDir dir_;
};

void BM_ListPage100k(benchmark::State& state) {
  auto store = Open(Store100k::Get().root(), false);
  const bool delimited = state.range(0) != 0;
  int64_t i = 0;
  for (auto _ : state) {
    BlobListOptions options;
    options.delimiter = delimited ? "/" : "";
    options.limit = 1000;
    if (!delimited) {
      // One directory's keys, a different directory each time.
      char prefix[8];
      std::snprintf(prefix, sizeof prefix, "d%02d/", static_cast<int>(i % 100));
      options.prefix = prefix;
    }
    ++i;
    auto page = store->List(options);
    if (!page.ok()) state.SkipWithError(page.status().ToString().c_str());
    benchmark::DoNotOptimize(page);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(delimited ? "root, delimiter /: 100 prefixes"
                           : "prefix dNN/: 1000 of its keys");
}
BENCHMARK(BM_ListPage100k)->ArgNames({"delimited"})->Arg(0)->Arg(1)->UseRealTime();

void BM_Open100k(benchmark::State& state) {
  const std::string root = Store100k::Get().root();
  for (auto _ : state) {
    auto store = Open(root, false);
    if (store->Stats().objects != 100000) state.SkipWithError("wrong object count");
  }
}
BENCHMARK(BM_Open100k)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SweepNothing100k(benchmark::State& state) {
  auto store = Open(Store100k::Get().root(), false);
  for (auto _ : state) {
    auto report = store->Sweep(sheetlog::LifecycleRule{}, {});
    if (!report.ok() || report->examined != 100000) state.SkipWithError("sweep failed");
  }
}
BENCHMARK(BM_SweepNothing100k)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
