// Retention (seed 003) in the real binary: `--retain-segments 1` with
// a manual clock. The background worker drops only whole segments behind a completed
// snapshot (archiving them first with --retain-archive); reads of the dropped range
// answer 410 with first_seq; the sheet loads and reads the same cells afterwards, and
// verify still finds every invariant holding.
#include <gtest/gtest.h>

#include "emulator/json_text.h"
#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

constexpr int64_t kPeriod = 24 * 3600;  // --retention-period: far beyond the test's steps

class RetentionHttpTest : public ApiTest {
 protected:
  void SetUp() override {
    StartServer(ServerOptions(
        dir_.path(),
        {"--clock", "manual", "--enable-faults", "--retain-segments", "1",
         "--retain-archive", "--retention-period", std::to_string(kPeriod)}));
  }

  void NewSegment() {
    JsonResponse r = Post(*client_, "/v1/sheets/" + sheet_ + "/segments", json::object());
    ASSERT_EQ(r.status, 201) << r.raw;
  }

  json Sheet() {
    JsonResponse r = Get(*client_, "/v1/sheets/" + sheet_);
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body;
  }

  json Cells() {
    JsonResponse r = Get(*client_, "/v1/sheets/" + sheet_ + "/cells?range=A1:D1");
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body["rows"];
  }

  std::string sheet_;
};

TEST_F(RetentionHttpTest,
       DropsOnlySegmentsBehindACompletedSnapshotAndTheSheetStillLoads) {
  sheet_ = CreateSheet(*client_);
  ASSERT_FALSE(HasFatalFailure());
  // Segment 0: seq 0 Snapshot, 1 A1, 2 B1, 3 EndSegment.
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet_, "A1", 1));
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet_, "B1", 2));
  // Every snapshot completed (one that found an earlier one pending defers itself for
  // 5 s of clock time).
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, sheet_, {.advance_clock_s = 6}));
  ASSERT_NO_FATAL_FAILURE(NewSegment());
  // Segment 1: seq 4 Snapshot, 5 A1, 6 EndSegment.
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet_, "A1", 10));
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, sheet_, {.advance_clock_s = 6}));
  ASSERT_NO_FATAL_FAILURE(NewSegment());
  // Segment 2: seq 7 Snapshot, 8 C1, 9 EndSegment.
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet_, "C1", 3));
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, sheet_, {.advance_clock_s = 6}));
  // Segment 3's snapshot (seq 10) never completes while the fault is armed.
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "snapshot.before_complete", "error", -1));
  ASSERT_NO_FATAL_FAILURE(NewSegment());
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet_, "D1", 4));  // seq 11
  const json cells = Cells();
  ASSERT_EQ(cells, ParseJson("[[10, 2, 3, 4]]"));
  ASSERT_EQ(Sheet()["first_seq"], 0);

  // One retention period later the worker keeps only the newest segment's worth —
  // but segment 2 stays: no later segment has a completed snapshot to stand in for it.
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, kPeriod));
  ASSERT_TRUE(Eventually([&] { return Sheet()["first_seq"] == 7; }))
      << Sheet().dump(2) << "\nserver log:\n"
      << server_->Log();
  json segments = Sheet()["segments"];
  ASSERT_EQ(segments.size(), 4u) << segments.dump();
  EXPECT_TRUE(segments[0]["archive"].is_string()) << segments.dump();
  EXPECT_TRUE(segments[1]["archive"].is_string()) << segments.dump();
  EXPECT_TRUE(segments[2]["archive"].is_null()) << segments.dump();
  EXPECT_TRUE(segments[3]["archive"].is_null()) << segments.dump();
  EXPECT_EQ(
      Get(*client_, "/v1/blobs/" + segments[0]["archive"].get<std::string>()).status,
      200);
  JsonResponse gone = Get(*client_, "/v1/sheets/" + sheet_ + "/entries?from=0");
  EXPECT_EQ(gone.status, 410) << gone.raw;
  EXPECT_EQ(gone.body["error"]["first_seq"], 7) << gone.raw;
  EXPECT_EQ(Cells(), cells);
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet_ + "/load").status, 200);
  JsonResponse verified = Post(*client_, "/v1/admin/verify", {{"sheet", sheet_}});
  ASSERT_EQ(verified.status, 200);
  // The one thing wrong is the snapshot the armed fault keeps from completing, a day
  // old now: verify reports it as stalled, and nothing else.
  for (const json& v : verified.body["violations"]) {
    EXPECT_TRUE(v["invariant"] == "snapshot-stalled" || v["invariant"] == "dead-letter")
        << verified.raw;
    EXPECT_EQ(v["segment"], 3) << verified.raw;
  }
  JsonResponse unstalled =
      Get(*client_, "/v1/admin/verify?stall_after_s=0&sheet=" + sheet_);
  ASSERT_EQ(unstalled.status, 200);
  EXPECT_EQ(unstalled.body["ok"], true) << unstalled.raw;
  // The earliest retained snapshot (seq 7) is the base a rebuild starts from.
  JsonResponse rebuilt =
      Post(*client_, "/v1/admin/sheets/" + sheet_ + "/rebuild-snapshots", json::object());
  ASSERT_EQ(rebuilt.status, 200) << rebuilt.raw;
  EXPECT_EQ(rebuilt.body["base"], 1) << rebuilt.raw;
  EXPECT_EQ(rebuilt.body["failed"], 0) << rebuilt.raw;
  EXPECT_EQ(rebuilt.body["snapshots"][0]["seq"], 7) << rebuilt.raw;

  // Once segment 3's snapshot completes, the next run drops segment 2 as well.
  ASSERT_EQ(Request(*client_, "DELETE", "/v1/admin/faults").status, 204);
  ASSERT_TRUE(WaitForSnapshot(*server_, *client_, sheet_, 10, {.advance_clock_s = 61}));
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, kPeriod));
  ASSERT_TRUE(Eventually([&] { return Sheet()["first_seq"] == 10; }))
      << Sheet().dump(2) << "\nserver log:\n"
      << server_->Log();
  EXPECT_EQ(Cells(), cells);
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet_ + "/load").status, 200);
  verified = Post(*client_, "/v1/admin/verify", {{"sheet", sheet_}});
  EXPECT_EQ(verified.body["ok"], true) << verified.raw;
}

}  // namespace
}  // namespace sheetlog::testing
