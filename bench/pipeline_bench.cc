// The snapshot pipeline end to end, over HTTP against the real binary: how long from
// appending a Snapshot entry to its root being on the entry, and how fast
// GET .../cells answers from a snapshot plus the entries after it.
//
//   build/<dir>/pipeline_bench
//
// 1. A sheet of 10^5 cells (10 SetCells entries of 100 x 100), then POST .../snapshots
//    and poll GET /v1/sheets/{id} until last_snapshot reaches it: change feed -> queue
//    -> worker -> build -> completion, all in the server. Then the same after 100 more
//    single-cell entries (the incremental case).
// 2. A sheet of 10^6 cells (100 such entries), its snapshot, then 100 SetCell entries
//    after it; 200 random 20 x 100 windows read with GET .../cells (keep-alive client).
// Record results in bench/README.md with the date and machine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void Require(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "pipeline_bench: %s\n", what.c_str());
    std::exit(1);
  }
}

std::string NewSheet(httplib::Client& client) {
  JsonResponse r = Post(client, "/v1/sheets", {{"snapshot_every", 0}});
  Require(r.status == 201, "create sheet: " + r.raw);
  return r.body["id"];
}

void Append(httplib::Client& client, const std::string& sheet, const json& entry) {
  JsonResponse r = Post(client, "/v1/sheets/" + sheet + "/entries", entry);
  Require(r.status == 201, "append: " + r.raw.substr(0, 300));
}

// Rows first_row .. first_row+99, columns A..CV: numbers and short strings.
void AppendBlock(httplib::Client& client, const std::string& sheet, int64_t first_row) {
  json rows = json::array();
  for (int r = 0; r < 100; ++r) {
    json row = json::array();
    for (int c = 0; c < 100; ++c) {
      if (c % 3 == 0) {
        row.push_back("s" + std::to_string(first_row + r) + "_" + std::to_string(c));
      } else {
        row.push_back((first_row + r) * 1000 + c);
      }
    }
    rows.push_back(std::move(row));
  }
  Append(client, sheet,
         {{"type", "SetCells"},
          {"body", {{"at", "A" + std::to_string(first_row)}, {"rows", rows}}}});
}

// Appends a Snapshot entry and waits until it is complete; returns the milliseconds.
double SnapshotMillis(httplib::Client& client, const std::string& sheet) {
  const auto start = Clock::now();
  JsonResponse r = Post(client, "/v1/sheets/" + sheet + "/snapshots", json::object());
  Require(r.status == 201, "snapshot: " + r.raw);
  const int64_t seq = r.body["seq"];
  while (true) {
    JsonResponse info = Get(client, "/v1/sheets/" + sheet);
    const json& last = info.body["last_snapshot"];
    if (last.is_object() && last["seq"].get<int64_t>() >= seq) break;
    Require(MillisSince(start) < 600000, "snapshot did not complete in 10 minutes");
  }
  return MillisSince(start);
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

int Main() {
  TempDir dir;
  ServerProcess server{ServerOptions(dir.path())};
  Require(server.Start(), "server: " + server.error());
  httplib::Client client = server.Client();
  client.set_keep_alive(true);

  // 1. Snapshot latency for a 10^5-cell sheet.
  std::string small = NewSheet(client);
  SnapshotMillis(client, small);  // entry 0's is already on its way; wait it out
  for (int b = 0; b < 10; ++b) AppendBlock(client, small, 1 + b * 100);
  const double full_ms = SnapshotMillis(client, small);
  for (int i = 0; i < 100; ++i) {
    Append(client, small,
           {{"type", "SetCell"},
            {"body", {{"ref", "B" + std::to_string(i * 7 + 3)}, {"value", i}}}});
  }
  const double incremental_ms = SnapshotMillis(client, small);
  std::printf(
      "10^5 cells: append Snapshot -> complete %.1f ms (from empty), %.1f ms "
      "(previous snapshot + 100 entries)\n",
      full_ms, incremental_ms);

  // 2. cells latency on 10^6 cells with 100 entries after the snapshot.
  std::string big = NewSheet(client);
  const auto load_start = Clock::now();
  for (int b = 0; b < 100; ++b) AppendBlock(client, big, 1 + b * 100);
  const double load_ms = MillisSince(load_start);
  const double big_ms = SnapshotMillis(client, big);
  for (int i = 0; i < 100; ++i) {
    Append(client, big,
           {{"type", "SetCell"},
            {"body", {{"ref", "C" + std::to_string(i * 97 + 5)}, {"value", -i}}}});
  }
  std::mt19937_64 rng(42);
  std::vector<double> millis;
  size_t cells = 0;
  for (int i = 0; i < 200; ++i) {
    const int64_t row = std::uniform_int_distribution<int64_t>(1, 10000 - 99)(rng);
    const int64_t col = std::uniform_int_distribution<int64_t>(1, 100 - 19)(rng);
    auto column = [](int64_t c) {
      std::string name;
      for (; c > 0; c = (c - 1) / 26) name.insert(name.begin(), char('A' + (c - 1) % 26));
      return name;
    };
    const std::string range = column(col) + std::to_string(row) + ":" + column(col + 19) +
                              std::to_string(row + 99);
    const auto start = Clock::now();
    JsonResponse r = Get(client, "/v1/sheets/" + big + "/cells?range=" + range);
    millis.push_back(MillisSince(start));
    Require(r.status == 200, "cells: " + r.raw.substr(0, 300));
    cells += r.body["rows"].size() * r.body["rows"][0].size();
  }
  std::printf(
      "10^6 cells: 100 appends of 10^4 cells %.0f ms; snapshot %.0f ms; "
      "GET cells 20x100 with 100 entries after the snapshot: p50 %.2f ms, "
      "p99 %.2f ms (%zu positions per read)\n",
      load_ms, big_ms, Percentile(millis, 0.5), Percentile(millis, 0.99),
      cells / millis.size());
  server.Stop();
  return 0;
}

}  // namespace
}  // namespace sheetlog::testing

int main() { return sheetlog::testing::Main(); }
