// Integration-test harness: runs the real sheetlog binary on a free loopback port and
// talks to it over HTTP. Nothing is mocked: the binary, its SQLite file and its blob
// directory are the ones users run.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sheetlog::testing {

struct ServerOptions {
  ServerOptions() = default;
  explicit ServerOptions(std::string dir, std::vector<std::string> extra_flags = {},
                         std::string bearer_token = "")
      : data_dir(std::move(dir)),
        extra(std::move(extra_flags)),
        token(std::move(bearer_token)) {}
  static ServerOptions InMemory(std::vector<std::string> extra_flags = {}) {
    ServerOptions o("", std::move(extra_flags));
    o.in_memory = true;
    return o;
  }

  std::string data_dir;  // required unless in_memory
  bool in_memory = false;
  std::vector<std::string> extra;  // more `serve` flags
  std::string token;
  // Set: the server is reached over HTTPS, trusting this certificate authority (PEM),
  // for the readiness check and Client(); the caller passes --tls-cert/--tls-key.
  std::string tls_ca_file;
  // Environment variables set (or replaced) for the server, e.g. ASAN_OPTIONS.
  std::vector<std::pair<std::string, std::string>> env;
};

// True in the S3 run of the integration subset (SHEETLOG_TEST_BLOBS=s3, set by ctest
// for the "S3." cases): every ServerProcess then serves its blobs from the shared test
// S3 server (`--blobs s3://...`, a bucket per data directory). Cases guard what holds
// only for the directory store (files under <data dir>/blobs, presigned URLs served by
// the server) with it.
bool BlobsOnS3();

// True in the PostgreSQL run of the integration subset (SHEETLOG_TEST_STORE=postgres, set
// by ctest for the "Postgres." cases): every ServerProcess then keeps its tables on the
// shared test PostgreSQL server (`--store ...`, a database per data directory, so a
// restarted server finds its sheets again). Cases guard what holds only on SQLite
// (the sheetlog.db file, `sheetlog backup`) with it.
bool StoreOnPostgres();

// The first column of the first row of `sql` (a SELECT COUNT(*) ...) on the table store
// of the server that ran on `data_dir`: its sheetlog.db, or its PostgreSQL database in
// the PostgreSQL run. -1 (the failure recorded) if it cannot be read.
int64_t CountInTableStore(const std::string& data_dir, const std::string& sql);

class ServerProcess {
 public:
  explicit ServerProcess(ServerOptions options);
  ~ServerProcess();  // SIGKILL if still running

  // Starts the binary and waits (bounded by real time) until /readyz answers 200.
  // Returns false (with the server's stderr in error()) if it does not come up.
  bool Start();
  // SIGTERM and wait; returns the exit status (as from waitpid) or -1.
  int Stop();
  // SIGKILL and wait: a crash.
  void Kill();
  bool running() const { return pid_ > 0; }
  // True once the process has ended by itself (a crash fault, an exit); reaps it.
  bool Exited();
  // Blocks until the process ends by itself (a crash fault, an exit), at most
  // `real_seconds` of real time, and reaps it: the wait is on the process (a pidfd
  // poll()ed for its exit), not a loop of checks. False if it still runs then.
  bool WaitForExit(int real_seconds = 30);

  int port() const { return port_; }
  const ServerOptions& options() const { return options_; }
  pid_t pid() const { return pid_; }
  const std::string& error() const { return error_; }
  // A new client for this server (keep-alive capable), with the token if any.
  httplib::Client Client() const;
  // The server's stderr so far.
  std::string Log() const;
  // The server's peak resident memory so far (VmHWM, kB), or -1.
  int64_t PeakRssKb() const;

 private:
  ServerOptions options_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_path_;
  std::string port_file_;
  std::string error_;
};

// A JSON response: status, body (parsed; null if not JSON) and headers.
struct JsonResponse {
  int status = 0;
  nlohmann::json body;
  httplib::Headers headers;
  std::string raw;
};

JsonResponse Request(httplib::Client& client, const std::string& method,
                     const std::string& path, const std::string& body = "",
                     const httplib::Headers& headers = {});
// `method` on a URL the server handed out: a path (the server's own presigned route) is
// requested from `server`, an absolute URL (an S3 store's presigned URL) from its origin,
// without the server's token.
JsonResponse RequestUrl(httplib::Client& server, const std::string& method,
                        const std::string& url, const std::string& body = "");

// Re-evaluates `condition` until it holds or `real_seconds` of real time pass: for
// waiting on work in the background where looking again is the only outside view of
// it (a request over loopback, a log file, a stat in-process). Between checks it
// waits: 1 ms, doubling to 100 ms (the first checks come quickly when the work is
// quick; a slow check is not repeated back to back on a loaded machine). Nothing is
// measured: the backoff paces the checks, the deadline only bounds a hang. A timeout
// fails with how long it waited, how many checks ran and, given `last_seen`, what it
// returns (called once, after the last check). For the snapshot pipeline and other
// work the server reports on GET /v1/admin/events, PipelineWatch (api_client.h) wakes
// on those reports instead.
::testing::AssertionResult Eventually(const std::function<bool()>& condition,
                                      int real_seconds = 30);
::testing::AssertionResult Eventually(const std::function<bool()>& condition,
                                      const std::function<std::string()>& last_seen,
                                      int real_seconds = 30);
// The same, with `wait_at_most(backoff)` between checks: it returns after at most
// `backoff`, earlier when what it watches has news.
::testing::AssertionResult Eventually(
    const std::function<bool()>& condition, const std::function<std::string()>& last_seen,
    int real_seconds, const std::function<void(std::chrono::milliseconds)>& wait_at_most);

// Advances a --clock manual server's clock by `seconds` if no handler is running (every
// sheetlog_function_running gauge of /metrics is 0); returns whether it did. For the
// polling loops that move time until background work finishes: moving time while a
// handler runs can pass its message's visibility timeout, so that a second consumer
// takes the message and, repeated, dead-letters work that was only slow.
bool AdvanceClockWhenIdle(httplib::Client& client, int64_t seconds);

inline JsonResponse Get(httplib::Client& c, const std::string& path) {
  return Request(c, "GET", path);
}
inline JsonResponse Post(httplib::Client& c, const std::string& path,
                         const nlohmann::json& body) {
  return Request(c, "POST", path, body.dump());
}

}  // namespace sheetlog::testing
