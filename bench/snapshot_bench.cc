// Snapshot build throughput and peak memory, and range-read latency.
//
//   build/<dir>/snapshot_bench [--sizes 100000,1000000,10000000]
//
// For each size N the bench runs two child processes (fresh, so each peak RSS is its
// own): `--prepare` writes a base snapshot of N cells (100 columns x N/100 rows; 60%
// numbers, 30% short strings, 10% formulas/booleans, some formatted) directly with the
// chunk encoder; `--build` then builds the next snapshot from it with SnapshotBuilder,
// as the worker does: previous snapshot + a delta of 1,000 scattered cell writes, 10
// rows inserted near the top (every later cell moves to another output stripe) and one
// column deleted. It reports cells/s and VmHWM (peak RSS) of the build process.
// `--range` opens a 10^6-cell snapshot and reads random 20 x 100 windows
// (ReadRange, and CellsInRange through a delta), reporting latency and chunks fetched.
//
// Prints a markdown table (copy it into bench/README.md with the date and machine).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/clock.h"
#include "src/snapshot/cells_at.h"
#include "src/snapshot/chunk_codec.h"
#include "src/snapshot/snapshot_builder.h"
#include "src/snapshot/snapshot_reader.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

using Steady = std::chrono::steady_clock;
constexpr int64_t kColumns = 100;
const SnapshotId kBaseId{"bench", 0, 0, 0};
const SnapshotId kNextId{"bench", 0, 100, 100};

double Seconds(Steady::time_point since) {
  return std::chrono::duration<double>(Steady::now() - since).count();
}

// "VmHWM:  12345 kB" -> MB.
double StatusMb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) {
      return std::stod(line.substr(std::strlen(field))) / 1024.0;
    }
  }
  return -1;
}

// User + system CPU seconds of this process so far: less sensitive than wall time to
// other work on a shared machine.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

std::unique_ptr<BlobStore> OpenStore(const std::string& dir) {
  BlobStoreOptions options;
  options.root = dir;
  options.sync = false;  // measure the snapshot code, not the disk's fsync
  auto store = DirectoryBlobStore::Open(options, SystemClock::Default());
  if (!store.ok()) {
    std::fprintf(stderr, "open store: %s\n", store.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(store).value();
}

Cell CellAt(int64_t row, int64_t col) {
  const uint64_t h =
      static_cast<uint64_t>(row) * 1000003u + static_cast<uint64_t>(col) * 7919u;
  Cell cell;
  switch (h % 10) {
    case 0:
    case 1:
    case 2:
      cell.value = CellValue::String("item-" + std::to_string(h % 100000));
      break;
    case 3:
      cell.value = CellValue::String("=A" + std::to_string(row) + "*2");
      break;
    case 4:
      cell.value = CellValue::Number(static_cast<double>(h % 1000) / 8.0);
      cell.format = "0.00";
      break;
    default:
      cell.value = CellValue::Number(static_cast<double>(h % 1000000));
      break;
  }
  return cell;
}

// Writes a snapshot of `cells` generated cells straight through the chunk encoder (the
// builder would need them all in a delta's overlay first).
int Prepare(int64_t cells, const std::string& dir) {
  auto store = OpenStore(dir);
  SnapshotManifest manifest;
  manifest.id = kBaseId;
  ChunkEncoder encoder(manifest.layout);
  auto flush = [&] {
    ChunkInfo chunk;
    chunk.key = SnapshotChunkKey(kBaseId, manifest.layout.Name(),
                                 static_cast<int64_t>(manifest.chunks.size()));
    chunk.cells = encoder.cells();
    std::string bytes = encoder.Finish(&chunk.tiles);
    chunk.bytes = static_cast<int64_t>(bytes.size());
    if (!store->Put(chunk.key, bytes).ok()) std::exit(1);
    manifest.chunks.push_back(std::move(chunk));
  };
  for (int64_t i = 0; i < cells; ++i) {
    PlacedCell cell{{i / kColumns + 1, i % kColumns + 1},
                    CellAt(i / kColumns + 1, i % kColumns + 1)};
    if (!encoder.TryAdd(cell)) {
      flush();
      encoder.TryAdd(cell);
    }
  }
  if (!encoder.empty()) flush();
  manifest.cells = cells;
  manifest.rows = (cells + kColumns - 1) / kColumns;
  manifest.cols = std::min<int64_t>(cells, kColumns);
  if (!store->Put(SnapshotRootKey(kBaseId), manifest.ToJson()).ok()) std::exit(1);
  std::printf("chunks=%zu\n", manifest.chunks.size());
  return 0;
}

SheetDelta BenchDelta(int64_t cells) {
  SheetDelta delta;
  std::mt19937_64 rng(42);
  const int64_t rows = cells / kColumns;
  delta.Apply(InsertRowsEdit{5, 10, {}});
  delta.Apply(DeleteColumnsEdit{7, 1});
  for (int i = 0; i < 1000; ++i) {
    CellRef ref{static_cast<int64_t>(rng() % rows) + 1,
                static_cast<int64_t>(rng() % kColumns) + 1};
    delta.Apply(SetCellEdit{ref, Cell{CellValue::Number(i), ""}});
  }
  return delta;
}

int Build(int64_t cells, const std::string& dir) {
  auto store = OpenStore(dir);
  SheetDelta delta = BenchDelta(cells);
  const double rss_before = StatusMb("VmRSS:");
  SnapshotBuilder builder(store.get(), kNextId, SnapshotRootKey(kBaseId),
                          std::move(delta), {});
  const auto start = Steady::now();
  const double cpu_start = CpuSeconds();
  int64_t chunks = 0;
  while (true) {
    auto done = builder.WriteNextChunk();
    if (!done.ok()) {
      std::fprintf(stderr, "build: %s\n", done.status().ToString().c_str());
      return 1;
    }
    (void)builder.Checkpoint().dump();  // what the worker persists after each chunk
    ++chunks;
    if (*done) break;
  }
  auto root = builder.Finish();
  const double seconds = Seconds(start);
  const double cpu = CpuSeconds() - cpu_start;
  if (!root.ok()) return 1;
  std::printf(
      "seconds=%.3f cpu=%.3f cells=%lld chunks=%lld bytes=%lld rss_before_mb=%.1f "
      "hwm_mb=%.1f\n",
      seconds, cpu, static_cast<long long>(builder.manifest().cells),
      static_cast<long long>(builder.manifest().chunks.size()),
      static_cast<long long>(store->Stats().bytes), rss_before, StatusMb("VmHWM:"));
  return 0;
}

int Range(const std::string& dir) {
  auto store = OpenStore(dir);
  auto start = Steady::now();
  auto reader = SnapshotReader::Open(store.get(), SnapshotRootKey(kBaseId));
  if (!reader.ok()) return 1;
  const double open_ms = Seconds(start) * 1000;
  const int64_t rows = (*reader)->manifest().rows;
  SheetDelta delta = BenchDelta((*reader)->manifest().cells);
  std::mt19937_64 rng(7);
  std::vector<double> read_ms, at_ms;
  int64_t fetched = 0, bytes = 0, got = 0;
  const int kRounds = 200;
  for (int i = 0; i < kRounds; ++i) {
    const int64_t r1 = static_cast<int64_t>(rng() % (rows - 20)) + 1;
    CellRange range{{r1, 1}, {r1 + 19, 100}};
    const int64_t f0 = (*reader)->chunks_fetched(), b0 = (*reader)->bytes_fetched();
    auto t = Steady::now();
    auto cells = (*reader)->ReadRange(range);
    read_ms.push_back(Seconds(t) * 1000);
    if (!cells.ok()) return 1;
    got += static_cast<int64_t>(cells->size());
    fetched += (*reader)->chunks_fetched() - f0;
    bytes += (*reader)->bytes_fetched() - b0;
    t = Steady::now();
    auto at = CellsInRange(reader->get(), delta, range);
    at_ms.push_back(Seconds(t) * 1000);
    if (!at.ok()) return 1;
  }
  std::sort(read_ms.begin(), read_ms.end());
  std::sort(at_ms.begin(), at_ms.end());
  std::printf(
      "open_ms=%.2f read_p50_ms=%.3f read_p99_ms=%.3f at_p50_ms=%.3f at_p99_ms=%.3f "
      "cells_per_read=%.0f chunks_per_read=%.2f kb_per_read=%.1f\n",
      open_ms, read_ms[kRounds / 2], read_ms[kRounds * 99 / 100], at_ms[kRounds / 2],
      at_ms[kRounds * 99 / 100], static_cast<double>(got) / kRounds,
      static_cast<double>(fetched) / kRounds, bytes / 1024.0 / kRounds);
  return 0;
}

// Runs this binary with `args` and returns its standard output.
std::string RunChild(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "child %s failed\n", args[1].c_str());
    std::exit(1);
  }
  return out;
}

double Field(const std::string& line, const std::string& name) {
  size_t at = line.find(name + "=");
  return at == std::string::npos ? -1 : std::stod(line.substr(at + name.size() + 1));
}

}  // namespace
}  // namespace sheetlog

int main(int argc, char** argv) {
  using namespace sheetlog;
  if (argc >= 4 && std::strcmp(argv[1], "--prepare") == 0)
    return Prepare(std::atoll(argv[2]), argv[3]);
  if (argc >= 4 && std::strcmp(argv[1], "--build") == 0)
    return Build(std::atoll(argv[2]), argv[3]);
  if (argc >= 3 && std::strcmp(argv[1], "--range") == 0) return Range(argv[2]);

  std::vector<int64_t> sizes{100000, 1000000, 10000000};
  if (argc >= 3 && std::strcmp(argv[1], "--sizes") == 0) {
    sizes.clear();
    std::stringstream list(argv[2]);
    std::string item;
    while (std::getline(list, item, ',')) sizes.push_back(std::atoll(item.c_str()));
  }
  std::printf(
      "| cells | chunks | snapshot MB | build s (wall) | build s (CPU) | cells/s (wall) "
      "| "
      "cells/s (CPU) | RSS before build MB | peak RSS (VmHWM) MB |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  std::string range_line;
  for (int64_t n : sizes) {
    testing::TempDir dir;
    const std::string store = dir.File("blobs");
    RunChild({"snapshot_bench", "--prepare", std::to_string(n), store});
    const std::string line =
        RunChild({"snapshot_bench", "--build", std::to_string(n), store});
    const double seconds = Field(line, "seconds");
    const double cpu = Field(line, "cpu");
    std::printf("| %lld | %.0f | %.1f | %.2f | %.2f | %.2fM | %.2fM | %.1f | %.1f |\n",
                static_cast<long long>(n), Field(line, "chunks"),
                Field(line, "bytes") / 2 / 1048576.0, seconds, cpu,
                Field(line, "cells") / seconds / 1e6, Field(line, "cells") / cpu / 1e6,
                Field(line, "rss_before_mb"), Field(line, "hwm_mb"));
    std::fflush(stdout);
    if (n == 1000000) range_line = RunChild({"snapshot_bench", "--range", store});
  }
  if (!range_line.empty()) {
    std::printf("\nRange 20 x 100 on the 10^6-cell snapshot (200 random windows):\n%s",
                range_line.c_str());
  }
  return 0;
}
