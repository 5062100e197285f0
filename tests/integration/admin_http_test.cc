// api.md "Operations" over real HTTP: inspecting queues, the change feed, pending
// snapshots and failed jobs, and repairing lost side effects (dead-letter redrive and
// seed 000's manual fallback, reprocess). The clock is manual: time moves only when the
// test says so.
#include <gtest/gtest.h>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class AdminHttpTest : public ApiTest {
 protected:
  void SetUp() override {
    StartServer(ServerOptions(dir_.path(), {"--clock", "manual", "--enable-faults"}));
  }

  json Queue(const std::string& name) {
    JsonResponse r = Get(*client_, "/v1/admin/queues");
    EXPECT_EQ(r.status, 200) << r.raw;
    for (const json& q : r.body["queues"]) {
      if (q["name"] == name) return q;
    }
    ADD_FAILURE() << "no queue " << name << " in " << r.raw;
    return json::object();
  }

  // A new sheet without automatic snapshots, with A1 = value (seq 1).
  std::string SheetWithOneCell(int value) {
    const std::string id = CreateSheet(*client_);
    SetCell(*client_, id, "A1", value);
    return id;
  }

  // With snapshot.before_complete armed: each receive of the one snapshot message
  // fails; past the visibility timeout (and the stale timeout of the pending entry the
  // failed attempt left) the next receive tries again, until the tenth receive moves it
  // to the dead-letter queue. The clock moves only after each failure is recorded: moving
  // it while a handler runs would let a second consumer receive the message meanwhile.
  // `before`: the failure count read before the snapshot entry was appended (the first
  // attempt may fail before this is called).
  void FailSnapshotJobUntilDeadLettered(int64_t before) {
    PipelineWatch watch(*server_);
    for (int64_t failures = 1; failures <= 10; ++failures) {
      ASSERT_TRUE(watch.Until([&] {
        return SnapshotWorkerFailures(*client_) >= before + failures;
      })) << Queue("snapshots").dump();
      ASSERT_TRUE(Eventually([&] { return AdvanceClockWhenIdle(*client_, 61); }));
    }
    ASSERT_TRUE(watch.Until([&] { return Queue("snapshots")["dead_letter_depth"] == 1; }))
        << Queue("snapshots").dump();
  }
};

TEST_F(AdminHttpTest, QueuesAndFeedAreVisible) {
  json snapshots = Queue("snapshots");
  EXPECT_EQ(snapshots["visibility_timeout_s"], 60);
  EXPECT_TRUE(snapshots["dead_letter_queue"].is_string());
  EXPECT_EQ(snapshots["dead_letter_depth"], 0);
  JsonResponse feed = Get(*client_, "/v1/admin/feed");
  ASSERT_EQ(feed.status, 200) << feed.raw;
  EXPECT_EQ(feed.body["stream"], "entry");
  EXPECT_FALSE(feed.body["shards"].empty());
  EXPECT_EQ(Get(*client_, "/v1/admin/queues/nope/dead-letters").status, 404);
  EXPECT_EQ(Get(*client_, "/v1/admin/jobs?status=succeeded").status, 400);
  EXPECT_EQ(Get(*client_, "/v1/admin/jobs?since=yesterday").status, 400);
  EXPECT_EQ(Post(*client_, "/v1/admin/reprocess", json::object()).status, 400);
  EXPECT_EQ(Post(*client_, "/v1/admin/reprocess", {{"since", "2026-13-45"}}).status, 400);
  // Started without --allow-reset.
  EXPECT_EQ(Post(*client_, "/v1/admin/reset", json::object()).status, 403);
}

// Every snapshot attempt fails until its message is dead-lettered; then the failures
// are visible (jobs, dead letters, pending snapshots), and redrive plus reprocess
// finish the work once the fault is gone.
TEST_F(AdminHttpTest, DeadLetteredSnapshotsAreInspectedRedrivenAndReprocessed) {
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "snapshot.before_complete", "error", -1));
  const int64_t failures_before = SnapshotWorkerFailures(*client_);
  const std::string id = SheetWithOneCell(1);
  ASSERT_NO_FATAL_FAILURE(FailSnapshotJobUntilDeadLettered(failures_before));

  JsonResponse jobs = Get(*client_, "/v1/admin/jobs?status=failed&since=1970-01-01");
  ASSERT_EQ(jobs.status, 200) << jobs.raw;
  ASSERT_FALSE(jobs.body["jobs"].empty()) << jobs.raw;
  EXPECT_NE(
      jobs.body["jobs"][0]["error"].get<std::string>().find("snapshot.before_complete"),
      std::string::npos)
      << jobs.raw;
  JsonResponse letters = Get(*client_, "/v1/admin/queues/snapshots/dead-letters");
  ASSERT_EQ(letters.status, 200) << letters.raw;
  ASSERT_EQ(letters.body["messages"].size(), 1u);
  EXPECT_NE(letters.body["messages"][0]["body"].get<std::string>().find(id),
            std::string::npos);
  EXPECT_NE(letters.body["messages"][0]["last_error"].get<std::string>().find("fault"),
            std::string::npos)
      << letters.raw;
  JsonResponse pending = Get(*client_, "/v1/admin/pending-snapshots");
  ASSERT_EQ(pending.status, 200);
  ASSERT_EQ(pending.body["pending_snapshots"].size(), 1u);
  EXPECT_EQ(pending.body["pending_snapshots"][0]["sheet"], id);
  EXPECT_FALSE(AllSnapshotsComplete(*client_, id));

  ASSERT_EQ(Request(*client_, "DELETE", "/v1/admin/faults").status, 204);
  JsonResponse redrive =
      Post(*client_, "/v1/admin/queues/snapshots/redrive", json::object());
  ASSERT_EQ(redrive.status, 200) << redrive.raw;
  EXPECT_EQ(redrive.body["moved"], 1);
  // Reprocess finds the one Snapshot entry without a root and enqueues it again (a
  // duplicate of the redriven message, which the worker absorbs).
  JsonResponse reprocess = Post(*client_, "/v1/admin/reprocess",
                                {{"since", "1970-01-01T00:00:00Z"}, {"sheet", id}});
  ASSERT_EQ(reprocess.status, 200) << reprocess.raw;
  EXPECT_EQ(reprocess.body["snapshots_enqueued"], 1);
  EXPECT_EQ(reprocess.body["entries"], 2);
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, id, {.advance_clock_s = 61}));
  // The worker writes the root before it deletes the pending entry: wait for both.
  EXPECT_TRUE(Eventually([&] {
    return Get(*client_, "/v1/admin/pending-snapshots").body["pending_snapshots"].empty();
  }));
  // Nothing left to do: a second reprocess enqueues nothing.
  reprocess = Post(*client_, "/v1/admin/reprocess", {{"since", "1970-01-01"}});
  EXPECT_EQ(reprocess.body["snapshots_enqueued"], 0) << reprocess.raw;
  EXPECT_EQ(reprocess.body["blobs_untagged"], 0);
}

// Seed 002's replay over HTTP: the snapshot job whose runs failed until it was
// dead-lettered is redriven (only it: the sheet's other, successful jobs are not
// touched) and completes; a second replay finds nothing failed.
TEST_F(AdminHttpTest, JobsReplayRerunsOnlyTheFailedJobs) {
  const std::string healthy = CreateSheet(*client_);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, healthy));
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "snapshot.before_complete", "error", -1));
  const int64_t failures_before = SnapshotWorkerFailures(*client_);
  const std::string id = SheetWithOneCell(1);
  ASSERT_NO_FATAL_FAILURE(FailSnapshotJobUntilDeadLettered(failures_before));
  ASSERT_EQ(Request(*client_, "DELETE", "/v1/admin/faults").status, 204);

  EXPECT_EQ(Post(*client_, "/v1/admin/jobs/replay", json::object()).status, 400);
  EXPECT_EQ(Post(*client_, "/v1/admin/jobs/replay", {{"since", "soon"}}).status, 400);
  EXPECT_EQ(Post(*client_, "/v1/admin/jobs/replay",
                 {{"since", "2026-02-01"}, {"until", "2026-01-01"}})
                .status,
            400);
  JsonResponse replay =
      Post(*client_, "/v1/admin/jobs/replay", {{"since", "1970-01-01T00:00:00Z"}});
  ASSERT_EQ(replay.status, 200) << replay.raw;
  ASSERT_EQ(replay.body["jobs"].size(), 1u) << replay.raw;
  EXPECT_EQ(replay.body["jobs"][0]["source"], "snapshot-worker");
  EXPECT_EQ(replay.body["jobs"][0]["outcome"], "redriven") << replay.raw;
  EXPECT_EQ(replay.body["redriven"], 1);
  EXPECT_EQ(Queue("snapshots")["dead_letter_depth"], 0);
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, id, {.advance_clock_s = 61}));
  replay = Post(*client_, "/v1/admin/jobs/replay", {{"since", "1970-01-01"}});
  ASSERT_EQ(replay.status, 200) << replay.raw;
  EXPECT_TRUE(replay.body["jobs"].empty()) << replay.raw;
}

// Seed 000's manual fallback for the case it was written for: the change-feed handler
// is down (every invocation fails) until the stream records expire, so no snapshot
// job is ever sent and the snapshots are never made; reprocess makes them.
TEST_F(AdminHttpTest, SnapshotsLostWithExpiredStreamRecordsAreMadeByReprocess) {
  // The pipeline's self-healing would give these day-old Snapshot entries their jobs
  // by itself (src/effects/snapshot_healing.h): off here, where the manual fallback
  // is the subject.
  ASSERT_NO_FATAL_FAILURE(StartServer(ServerOptions(
      dir_.path(), {"--clock", "manual", "--enable-faults", "--heal-period", "0"})));
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "runtime.before_handler", "error", -1));
  const std::string id = SheetWithOneCell(7);
  ASSERT_EQ(Post(*client_, "/v1/sheets/" + id + "/snapshots", json::object()).status,
            201);
  // Past the feed's 24 h retention the records are gone: skipped for their age (listed
  // as failed jobs) or pruned before the handler read them.
  auto skipped_for_age = [&] {
    int64_t skipped = 0;
    const JsonResponse jobs = Get(*client_, "/v1/admin/jobs?since=1970-01-01");
    for (const json& job : jobs.body["jobs"]) {
      skipped += job["source"] == "entry-effects" &&
                 job["error"].get<std::string>().find("exceeds the maximum") !=
                     std::string::npos;
    }
    return skipped;
  };
  auto retained_records = [&] {
    int64_t retained = 0;
    const JsonResponse feed = Get(*client_, "/v1/admin/feed");
    for (const json& shard : feed.body["shards"])
      retained += shard["retained"].get<int64_t>();
    return retained;
  };
  ASSERT_TRUE(Eventually([&] {
    AdvanceClockWhenIdle(*client_, 24 * 3600 + 1);
    return skipped_for_age() >= 1 && retained_records() == 0;
  })) << Get(*client_, "/v1/admin/feed").raw;
  ASSERT_EQ(Request(*client_, "DELETE", "/v1/admin/faults").status, 204);
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, 3600));
  // No job was ever sent: nothing will make the snapshots.
  json snapshots = Queue("snapshots");
  EXPECT_EQ(snapshots["visible"].get<int64_t>() + snapshots["in_flight"].get<int64_t>(),
            0);
  EXPECT_FALSE(AllSnapshotsComplete(*client_, id));

  JsonResponse reprocess =
      Post(*client_, "/v1/admin/reprocess", {{"since", "1970-01-01"}, {"sheet", id}});
  ASSERT_EQ(reprocess.status, 200) << reprocess.raw;
  EXPECT_EQ(reprocess.body["snapshots_enqueued"], 2) << reprocess.raw;
  // The second snapshot defers behind the first.
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, id, {.advance_clock_s = 6}));
  JsonResponse cells = Get(*client_, "/v1/sheets/" + id + "/cells?range=A1:A1&at=2");
  ASSERT_EQ(cells.status, 200) << cells.raw;
  EXPECT_EQ(cells.headers.find("X-Snapshot-Seq")->second, "2");
  EXPECT_EQ(cells.body["rows"][0][0], 7);
}

// A queue message deleted by a fault before its work leaves a Snapshot entry
// that nothing will ever build; reprocess finds it and the pipeline completes it.
TEST_F(AdminHttpTest, SnapshotMessageLostBeforeItsWorkIsRepairedByReprocess) {
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "snapshot.message_lost"));
  const std::string id = SheetWithOneCell(7);
  // The one message (entry 0's snapshot) is received and deleted with nothing done.
  ASSERT_TRUE(Eventually([&] {
    json q = Queue("snapshots");
    json armed = Get(*client_, "/v1/admin/faults").body["armed"];
    return q["visible"] == 0 && q["in_flight"] == 0 && q["delayed"] == 0 &&
           armed.size() == 1 && armed[0]["fired"] == 1;
  })) << Queue("snapshots").dump();
  JsonResponse list = Get(*client_, "/v1/sheets/" + id + "/snapshots");
  ASSERT_EQ(list.body["snapshots"].size(), 1u);
  EXPECT_EQ(list.body["snapshots"][0]["state"], "queued") << "no worker will build it";

  JsonResponse reprocess = Post(*client_, "/v1/admin/reprocess",
                                {{"since", "1970-01-01T00:00:00Z"}, {"sheet", id}});
  ASSERT_EQ(reprocess.status, 200) << reprocess.raw;
  EXPECT_EQ(reprocess.body["snapshots_enqueued"], 1);
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, id));
}

// A misspelled point would never fire and leave a test passing without testing
// anything: arming or disarming a point that is not in emulator/env/fault_points.h is a
// 400 naming it, and nothing is armed.
TEST_F(AdminHttpTest, ArmingAnUnknownFaultPointIsRefused) {
  JsonResponse armed =
      Post(*client_, "/v1/admin/faults", {{"point", "snapshot.before_compete"}});
  EXPECT_EQ(armed.status, 400) << armed.raw;
  EXPECT_EQ(armed.body["error"]["code"], "ValidationError");
  EXPECT_NE(armed.body["error"]["message"].get<std::string>().find(
                "unknown fault point 'snapshot.before_compete'"),
            std::string::npos)
      << armed.raw;
  EXPECT_EQ(Get(*client_, "/v1/admin/faults").body["armed"].size(), 0u);
  EXPECT_EQ(Request(*client_, "DELETE", "/v1/admin/faults?point=no.such.point").status,
            400);
}

}  // namespace
}  // namespace sheetlog::testing
