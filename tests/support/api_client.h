// The JSON API (../shared/design/api.md) as the integration tests call it: one
// definition of the requests most of them make, so that a test reads as what it does
// (CreateSheet, SetCell, WaitForSnapshots) and a change of the contract is made here
// once.
//
// A helper that expects a status checks it: any other status records a fatal test
// failure naming the request and the server's answer (so
// ASSERT_NO_FATAL_FAILURE(helper(...)) stops a test there) and returns an empty value
// ("", -1, null). Tests of what the API answers to bad requests call Request/Post
// (server_process.h) and assert on the answer themselves.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/server_process.h"
#include "tests/support/sse_client.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {

// The fixture most HTTP tests build on: a directory, the real binary serving (on it, or
// in memory) once StartServer is called, and a client of it. Members are destroyed in
// reverse: the client, the server (killed if still running), then the directory.
class ApiTest : public ::testing::Test {
 protected:
  // Starts a server with `options` (a running one is killed first) and connects
  // client_ to it. A server that does not come up is a fatal failure naming its log.
  void StartServer(const ServerOptions& options);

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<httplib::Client> client_;
};

// The path and query of a URL the server handed out: "http://host:port/p?q" -> "/p?q";
// a path is returned as it is.
std::string PathOf(const std::string& url);

// POST /v1/sheets with `body` (201): the new sheet's id.
std::string CreateSheet(httplib::Client& client, const nlohmann::json& body);
// A sheet created with `snapshot_every` (0, the default here: no automatic snapshots).
std::string CreateSheet(httplib::Client& client, int snapshot_every = 0);

// POST /v1/sheets/{sheet}/entries with `entry` ({"type", "body", ...}) as it is, the
// answer unchecked.
JsonResponse PostEntry(httplib::Client& client, const std::string& sheet,
                       const nlohmann::json& entry);
// Appends an entry of `type` with `body` (201): its seq.
int64_t Append(httplib::Client& client, const std::string& sheet, const std::string& type,
               const nlohmann::json& body);
// Appends SetCell {ref, value} (201): its seq.
int64_t SetCell(httplib::Client& client, const std::string& sheet, const std::string& ref,
                const nlohmann::json& value);

// Every entry of `sheet`, read from=start in pages of `page_size` (each answered 200),
// each page from the seq after the last one read.
std::vector<nlohmann::json> ReadAllEntries(httplib::Client& client,
                                           const std::string& sheet,
                                           int page_size = 1000);

// POST /v1/sheets/{sheet}/snapshots (201): the new Snapshot entry's seq.
int64_t TakeSnapshot(httplib::Client& client, const std::string& sheet);
// GET /v1/sheets/{sheet}/snapshots (200): the list of its Snapshot entries.
nlohmann::json Snapshots(httplib::Client& client, const std::string& sheet);
// One look, no wait: the sheet has at least `at_least` Snapshot entries and every one is
// completed. False (and no test failure) if the list cannot be read.
bool AllSnapshotsComplete(httplib::Client& client, const std::string& sheet,
                          size_t at_least = 0);

// The tags of blob `key` (GET /v1/blobs/{key}?tagging: {"auto-delete": "true"} while an
// upload may still be swept); null if the answer is not 200.
nlohmann::json BlobTags(httplib::Client& client, const std::string& key);

// POST /v1/admin/clock (200): a --clock manual server's clock moves `seconds` ahead.
void AdvanceClock(httplib::Client& client, int64_t seconds);
// POST /v1/admin/faults (200): arms `point` of an --enable-faults server with `kind`
// ("error", "crash", "disk-full", ...) for `count` hits (-1: every hit).
void ArmFault(httplib::Client& client, const std::string& point,
              const std::string& kind = "error", int count = 1);
// The value of `series` (a metric name with its labels, as /metrics prints it:
// `sheetlog_head_view_reads{how="hit"}`) in /metrics; 0 if it is not there.
int64_t MetricSample(httplib::Client& client, const std::string& series);
// The snapshot worker's failed invocations so far (the
// sheetlog_function_failures{mapping="snapshot-worker"} sample of /metrics; 0 before
// the first).
int64_t SnapshotWorkerFailures(httplib::Client& client);

// Waits for the server's background work (the snapshot pipeline, side effects, purges,
// sweeps) by watching the pipeline's own reports: GET /v1/admin/events, where the
// server publishes every snapshot outcome, job failure and change of queue depths, is
// opened when the watch is made, so nothing published after that is missed. Until()
// checks a condition, then checks it again as soon as the stream brings anything;
// since not all a test waits for is such an event (a purge, a sweep, a metric), it
// also checks again after a backoff without news: 1 ms, doubling to 100 ms. Over TLS
// (which this raw stream does not speak) only the backoff remains.
class PipelineWatch {
 public:
  explicit PipelineWatch(const ServerProcess& server);

  // Until `condition` holds or `real_seconds` of real time pass. A timeout fails with
  // how long it waited, how many checks ran and, given `last_seen`, what it returns
  // (called once, after the last check).
  ::testing::AssertionResult Until(const std::function<bool()>& condition,
                                   const std::function<std::string()>& last_seen = {},
                                   int real_seconds = 60);

 private:
  std::unique_ptr<SseClient> stream_;  // null over TLS
};

struct SnapshotWait {
  // Also wait until the sheet has at least this many Snapshot entries.
  size_t at_least = 0;
  // > 0, for a --clock manual server: after each look that finds a snapshot unfinished,
  // move the clock this far if no handler is running (AdvanceClockWhenIdle): a snapshot
  // that found its predecessor pending defers itself for 5 s of clock time, and a
  // failed one is received again only after its visibility timeout (60 s).
  int64_t advance_clock_s = 0;
  int real_seconds = 60;
};

// Waits (PipelineWatch) until Snapshot entry `seq` of `sheet` is completed (others may
// not be). A timeout fails as WaitForSnapshots's does.
::testing::AssertionResult WaitForSnapshot(const ServerProcess& server,
                                           httplib::Client& client,
                                           const std::string& sheet, int64_t seq,
                                           const SnapshotWait& wait = {});

// Waits (PipelineWatch) until every Snapshot entry of `sheet` is completed. A timeout
// fails with the sheet's snapshots, the pending snapshots and the queues as last seen.
::testing::AssertionResult WaitForSnapshots(const ServerProcess& server,
                                            httplib::Client& client,
                                            const std::string& sheet,
                                            const SnapshotWait& wait = {});

}  // namespace sheetlog::testing
