// Appends per second and latency over HTTP against the real binary, beside two
// baselines on the same machine: raw SQLite inserts, one transaction each, in WAL with
// synchronous=NORMAL and with synchronous=FULL.
//
//   build/release/append_bench [--seconds 3] [--clients 1,16]
//
// Prints a markdown table (copy it into bench/README.md with the date and machine).
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace {

using Clock = std::chrono::steady_clock;
using sheetlog::testing::ServerOptions;
using sheetlog::testing::ServerProcess;
using sheetlog::testing::TempDir;

struct Result {
  std::string name;
  int clients = 1;
  int64_t ops = 0;
  double seconds = 0;
  double p50_ms = 0, p99_ms = 0;
  double ops_per_second() const { return ops / seconds; }
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * v.size()));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

Result RawSqlite(const std::string& sync, double seconds) {
  TempDir dir;
  sqlite3* db = nullptr;
  sqlite3_open(dir.File("raw.db").c_str(), &db);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
  sqlite3_exec(db, ("PRAGMA synchronous=" + sync).c_str(), nullptr, nullptr, nullptr);
  sqlite3_exec(
      db,
      "CREATE TABLE entry (sheet_id TEXT, segment INTEGER, num INTEGER, seq INTEGER, "
      "created INTEGER, type TEXT, version INTEGER, body TEXT, "
      "PRIMARY KEY (sheet_id, segment, num)) WITHOUT ROWID",
      nullptr, nullptr, nullptr);
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO entry VALUES ('s', 0, ?, ?, 0, 'Note', 1, ?)", -1,
                     &insert, nullptr);
  Result r{"raw SQLite, 1 txn/insert, synchronous=" + sync, 1};
  std::vector<double> latencies;
  auto start = Clock::now();
  auto end = start + std::chrono::duration<double>(seconds);
  const std::string body = R"({"m":"0:0"})";
  while (Clock::now() < end) {
    auto t0 = Clock::now();
    sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
    sqlite3_bind_int64(insert, 1, r.ops);
    sqlite3_bind_int64(insert, 2, r.ops);
    sqlite3_bind_text(insert, 3, body.c_str(), -1, SQLITE_STATIC);
    sqlite3_step(insert);
    sqlite3_reset(insert);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    latencies.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    ++r.ops;
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.p50_ms = Percentile(latencies, 0.50);
  r.p99_ms = Percentile(latencies, 0.99);
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return r;
}

Result Http(const std::string& sync, int clients, double seconds) {
  TempDir dir;
  ServerProcess server(ServerOptions(dir.path(), {"--sync", sync}));
  if (!server.Start()) {
    std::fprintf(stderr, "server failed: %s\n", server.error().c_str());
    std::exit(1);
  }
  std::string sheet;
  {
    httplib::Client c = server.Client();
    auto r = sheetlog::testing::Post(c, "/v1/sheets", {{"snapshot_every", 0}});
    sheet = r.body["id"];
  }
  const std::string path = "/v1/sheets/" + sheet + "/entries";
  std::atomic<int64_t> ops{0};
  std::vector<std::vector<double>> latencies(clients);
  std::vector<std::thread> threads;
  auto start = Clock::now();
  auto end = start + std::chrono::duration<double>(seconds);
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client = server.Client();
      int i = 0;
      while (Clock::now() < end) {
        std::string body = R"({"type":"Note","body":{"m":")" + std::to_string(c) + ":" +
                           std::to_string(i++) + R"("}})";
        auto t0 = Clock::now();
        auto res = client.Post(path.c_str(), body, "application/json");
        if (!res || res->status != 201) {
          std::fprintf(stderr, "append failed\n");
          std::exit(1);
        }
        latencies[c].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        ops.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& t : threads) t.join();
  Result r{"HTTP appends, --sync=" + sync, clients};
  r.ops = ops.load();
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  r.p50_ms = Percentile(all, 0.50);
  r.p99_ms = Percentile(all, 0.99);
  server.Stop();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3;
  std::vector<int> client_counts = {1, 16};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--clients") == 0) {
      client_counts.clear();
      std::string list = argv[i + 1];
      size_t pos = 0;
      while (pos < list.size()) {
        size_t comma = list.find(',', pos);
        if (comma == std::string::npos) comma = list.size();
        client_counts.push_back(std::stoi(list.substr(pos, comma - pos)));
        pos = comma + 1;
      }
    }
  }
  std::vector<Result> results;
  results.push_back(RawSqlite("NORMAL", seconds));
  results.push_back(RawSqlite("FULL", seconds));
  for (const char* sync : {"normal", "full"}) {
    for (int clients : client_counts) results.push_back(Http(sync, clients, seconds));
  }
  std::printf(
      "| scenario | clients | appends/s | p50 ms | p99 ms |\n|---|---|---|---|---|\n");
  for (const Result& r : results) {
    std::printf("| %s | %d | %.0f | %.3f | %.3f |\n", r.name.c_str(), r.clients,
                r.ops_per_second(), r.p50_ms, r.p99_ms);
  }
  double raw_full = results[1].ops_per_second();
  for (const Result& r : results) {
    if (r.name == "HTTP appends, --sync=full") {
      std::printf(
          "\n--sync=full with %d clients: %.1fx the raw synchronous=FULL baseline\n",
          r.clients, r.ops_per_second() / raw_full);
    }
  }
  return 0;
}
