// Recovery over the real binary: the snapshot pipeline heals by itself after
// kill -9 (no operator: no reprocess, redrive or replay), a burst of snapshots drains
// without dead-lettering anything, and a pipeline that is not progressing shows in
// verify, the admin routes and /metrics.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

// The snapshot queue's visibility timeout (src/app/app.cc) and the worker's stale
// timeout (src/snapshot/worker.h): after a crash, a snapshot must complete within
// their sum plus one deferral of clock time.
constexpr int64_t kVisibilitySeconds = 60;
constexpr int64_t kStaleSeconds = 60;
constexpr int64_t kRecoveryBudgetSeconds = kVisibilitySeconds + kStaleSeconds + 10;

// Sets one of A1:A50 to `i`.
void AppendCell(httplib::Client& client, const std::string& sheet, int i) {
  SetCell(client, sheet, "A" + std::to_string(i % 50 + 1), i);
}

// Snapshot entries of the sheet by state ("completed", "building", ...).
std::map<std::string, int> SnapshotStates(httplib::Client& client,
                                          const std::string& sheet) {
  std::map<std::string, int> states;
  JsonResponse r = Get(client, "/v1/sheets/" + sheet + "/snapshots");
  EXPECT_EQ(r.status, 200) << r.raw;
  for (const json& s : r.body.value("snapshots", json::array())) {
    ++states[s.value("state", "?")];
  }
  return states;
}

int64_t DeadLetters(httplib::Client& client) {
  JsonResponse r = Get(client, "/v1/admin/queues");
  int64_t dead = 0;
  for (const json& q : r.body.value("queues", json::array())) {
    if (q.contains("dead_letter_depth") && q["dead_letter_depth"].is_number()) {
      dead += q["dead_letter_depth"].get<int64_t>();
    }
  }
  return dead;
}

// Moves the clock in `step`s (only while no handler runs) until every Snapshot entry
// of `sheet` is complete, at most `budget_seconds` of clock time. Returns the clock
// time used, or -1 with a description of what is stuck.
int64_t DrainSnapshots(httplib::Client& client, const std::string& sheet,
                       int64_t budget_seconds, int64_t step, std::string* stuck) {
  int64_t used = 0;
  const bool done = static_cast<bool>(Eventually(
      [&] {
        std::map<std::string, int> states = SnapshotStates(client, sheet);
        if (states.size() == 1 && states.count("completed")) return true;
        if (used < budget_seconds && AdvanceClockWhenIdle(client, step)) used += step;
        return false;
      },
      120));
  if (!done) {
    *stuck = "after " + std::to_string(used) + " s of clock: snapshots " +
             Get(client, "/v1/sheets/" + sheet + "/snapshots").raw + "\nqueues " +
             Get(client, "/v1/admin/queues").raw + "\npending " +
             Get(client, "/v1/admin/pending-snapshots").raw + "\njobs " +
             Get(client, "/v1/admin/jobs?status=abandoned").raw;
    return -1;
  }
  return used;
}

void ExpectVerifyClean(httplib::Client& client) {
  JsonResponse v = Get(client, "/v1/admin/verify");
  ASSERT_EQ(v.status, 200) << v.raw;
  EXPECT_TRUE(v.body.value("ok", false)) << v.raw;
}

// kill -9 in the middle of a snapshot build (the crash fault after a chunk): after
// the restart the snapshot completes within the visibility timeout plus the stale
// timeout, nothing is dead-lettered, and verify is clean.
TEST(PipelineRecoveryTest, SnapshotKilledMidBuildCompletesAfterRestartByItself) {
  TempDir dir;
  ServerOptions options(dir.path(), {"--clock", "manual", "--enable-faults"});
  ServerProcess server(options);
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheet(client, 0);
  std::string stuck;
  ASSERT_GE(DrainSnapshots(client, sheet, kRecoveryBudgetSeconds, 5, &stuck), 0) << stuck;
  for (int i = 0; i < 35; ++i) AppendCell(client, sheet, i);
  ASSERT_NO_FATAL_FAILURE(ArmFault(client, "snapshot.after_chunk", "crash"));
  ASSERT_NO_FATAL_FAILURE(TakeSnapshot(client, sheet));
  // The worker dies at its first checkpoint.
  ASSERT_TRUE(server.WaitForExit()) << "the crash fault did not fire";

  ServerProcess restarted(ServerOptions(dir.path(), {"--clock", "manual"}));
  ASSERT_TRUE(restarted.Start()) << restarted.error();
  httplib::Client after = restarted.Client();
  ASSERT_GE(DrainSnapshots(after, sheet, kRecoveryBudgetSeconds, 5, &stuck), 0) << stuck;
  EXPECT_EQ(DeadLetters(after), 0);
  ExpectVerifyClean(after);
}

// A burst of appends from 16 clients with snapshot_every 10 queues
// dozens of snapshots of one sheet; each waits behind the earlier ones. None is
// dead-lettered, and they drain within a bounded amount of clock time.
TEST(PipelineRecoveryTest, BurstOfSnapshotsDrainsWithoutDeadLetters) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheet(client, 10);
  std::vector<std::thread> writers;
  for (int w = 0; w < 16; ++w) {
    writers.emplace_back([&, w] {
      httplib::Client mine = server.Client();
      for (int i = 0; i < 20; ++i) AppendCell(mine, sheet, w * 100 + i);
    });
  }
  for (std::thread& t : writers) t.join();
  std::map<std::string, int> states = SnapshotStates(client, sheet);
  int total = 0;
  for (const auto& [state, count] : states) total += count;
  ASSERT_GE(total, 10) << "320 appends with snapshot_every 10";
  std::string stuck;
  // Each snapshot may wait one deferral (5 s) behind the one before it; completions
  // hand the next job over at once, so far less is needed in practice.
  const int64_t used = DrainSnapshots(client, sheet, 5 * total + 60, 5, &stuck);
  ASSERT_GE(used, 0) << stuck;
  EXPECT_EQ(DeadLetters(client), 0);
  ExpectVerifyClean(client);
}

// A snapshot that is not progressing (its message keeps failing) is
// reported by verify after the stall threshold, by /metrics, and its dead letter by
// verify once it is dead-lettered.
TEST(PipelineRecoveryTest, StalledSnapshotShowsInVerifyAndMetrics) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual", "--enable-faults"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  ASSERT_NO_FATAL_FAILURE(ArmFault(client, "snapshot.before_complete", "error", -1));
  const std::string sheet = CreateSheet(client, 0);
  ExpectVerifyClean(client);  // young: not stalled yet
  // Let it fail past the stall threshold (verify's stall_after_s) and until the
  // queue's redrive policy (10 receives) dead-letters it.
  int64_t moved = 0;
  ASSERT_TRUE(Eventually([&] {
    if (moved >= 700 && DeadLetters(client) == 1) return true;
    if (AdvanceClockWhenIdle(client, 61)) moved += 61;
    return false;
  })) << Get(client, "/v1/admin/queues").raw;
  JsonResponse v = Get(client, "/v1/admin/verify");
  ASSERT_EQ(v.status, 200);
  EXPECT_FALSE(v.body.value("ok", true)) << v.raw;
  std::set<std::string> invariants;
  for (const json& violation : v.body["violations"]) {
    invariants.insert(violation.value("invariant", ""));
  }
  EXPECT_TRUE(invariants.count("snapshot-stalled")) << v.raw;
  EXPECT_TRUE(invariants.count("dead-letter")) << "10 failed receives: " << v.raw;
  JsonResponse off = Get(client, "/v1/admin/verify?stall_after_s=0&sheet=" + sheet);
  for (const json& violation : off.body["violations"]) {
    EXPECT_NE(violation.value("invariant", ""), "snapshot-stalled") << off.raw;
  }
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("sheetlog_queue_dead_letter_depth{queue=\"snapshots\"} 1"),
            std::string::npos)
      << metrics->body.substr(0, 4000);
  EXPECT_NE(metrics->body.find("sheetlog_pending_snapshots_stale"), std::string::npos);
  EXPECT_NE(metrics->body.find("sheetlog_function_abandoned"), std::string::npos);
  EXPECT_EQ(Get(client, "/v1/admin/jobs?status=bogus").status, 400);
  EXPECT_EQ(Get(client, "/v1/admin/jobs?status=abandoned").status, 200);
}

// The same for the change feed: a shard whose entry-effects batch keeps failing (the
// error fault after a Snapshot entry's message is sent) holds back every sheet of the
// shard. The operator sees it in verify (feed-stalled, once the oldest unprocessed
// record is older than stall_after_s, with the failures and their error), in
// GET /v1/admin/feed (failed_attempts, last_error) and in /metrics
// (sheetlog_stream_failed_attempts, the same count); and it heals once the fault goes.
TEST(PipelineRecoveryTest, StalledChangeFeedShowsInVerifyAdminFeedAndMetrics) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual", "--enable-faults"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  ASSERT_NO_FATAL_FAILURE(ArmFault(client, "effects.after_snapshot_send", "error", -1));
  const std::string sheet = CreateSheet(client, 0);  // its Snapshot entry 0 fails
  // The shard's consumer in the admin view, once its batch has failed at least once.
  auto failing_consumer = [&]() -> json {
    JsonResponse feed = Get(client, "/v1/admin/feed");
    EXPECT_EQ(feed.status, 200) << feed.raw;
    for (const json& shard : feed.body.value("shards", json::array())) {
      for (const json& consumer : shard.value("consumers", json::array())) {
        if (consumer.value("consumer", "") == "entry-effects" &&
            consumer.value("failed_attempts", int64_t{0}) > 0) {
          json found = consumer;
          found["shard"] = shard["shard"];
          return found;
        }
      }
    }
    return nullptr;
  };
  ASSERT_TRUE(Eventually([&] { return !failing_consumer().is_null(); }))
      << Get(client, "/v1/admin/feed").raw;
  ExpectVerifyClean(client);  // young: not stalled yet
  // Past verify's default stall_after_s (600 s), the batch retrying meanwhile.
  int64_t moved = 0;
  ASSERT_TRUE(Eventually([&] {
    if (moved > 660) return true;
    if (AdvanceClockWhenIdle(client, 61)) moved += 61;
    return false;
  }));

  JsonResponse v = Get(client, "/v1/admin/verify");
  ASSERT_EQ(v.status, 200) << v.raw;
  EXPECT_FALSE(v.body.value("ok", true)) << v.raw;
  std::string stalled_detail;
  for (const json& violation : v.body["violations"]) {
    if (violation.value("invariant", "") == "feed-stalled") {
      stalled_detail = violation.value("detail", "");
    }
  }
  ASSERT_FALSE(stalled_detail.empty()) << v.raw;
  EXPECT_NE(stalled_detail.find("entry-effects"), std::string::npos) << stalled_detail;
  EXPECT_NE(stalled_detail.find("fault injected at effects.after_snapshot_send"),
            std::string::npos)
      << stalled_detail;

  // The clock stands still now: no retry runs between the two reads below.
  json consumer = failing_consumer();
  ASSERT_FALSE(consumer.is_null()) << Get(client, "/v1/admin/feed").raw;
  const int64_t failed_attempts = consumer["failed_attempts"].get<int64_t>();
  EXPECT_GE(failed_attempts, 2) << "retried while the clock moved: " << consumer.dump();
  EXPECT_NE(consumer.value("last_error", "")
                .find("fault injected at effects.after_snapshot_send"),
            std::string::npos)
      << consumer.dump();
  EXPECT_GE(consumer.value("lag_records", int64_t{0}), 1) << consumer.dump();
  httplib::Result metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  const std::string series =
      "sheetlog_stream_failed_attempts{mapping=\"entry-effects\",shard=\"" +
      std::to_string(consumer["shard"].get<int>()) + "\"} ";
  size_t at = metrics->body.find(series);
  ASSERT_NE(at, std::string::npos) << metrics->body.substr(0, 6000);
  EXPECT_EQ(std::stoll(metrics->body.substr(at + series.size())), failed_attempts)
      << metrics->body.substr(at, 120);

  // The fault goes: the next retry succeeds and the view clears.
  ASSERT_EQ(
      Request(client, "DELETE", "/v1/admin/faults?point=effects.after_snapshot_send", "")
          .status,
      204);
  ASSERT_TRUE(Eventually([&] {
    if (failing_consumer().is_null()) return true;
    AdvanceClockWhenIdle(client, 61);
    return false;
  })) << Get(client, "/v1/admin/feed").raw;
  std::string stuck;
  ASSERT_GE(DrainSnapshots(client, sheet, kRecoveryBudgetSeconds, 5, &stuck), 0) << stuck;
  ExpectVerifyClean(client);
}

}  // namespace
}  // namespace sheetlog::testing
