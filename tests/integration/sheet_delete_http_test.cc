// Deleting a sheet leaves nothing behind, against the real binary:
// every object under the sheet's prefixes and its upload rows go with it, a kill -9 at
// any step of the purge is finished by the next start, and the objects of a snapshot
// build under way when the sheet is deleted go too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class SheetDeleteHttpTest : public ApiTest {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartServer()); }

  void StartServer() {
    ApiTest::StartServer(ServerOptions(
        dir_.path(), {"--clock", "manual", "--enable-faults", "--inline-limit", "100"}));
  }

  // Objects under the sheet's prefixes in all four server areas.
  std::vector<std::string> SheetObjects(const std::string& sheet) {
    std::vector<std::string> keys;
    for (const char* area : {"snapshots/", "archives/", "uploads/", "entries/"}) {
      JsonResponse r =
          Get(*client_, "/v1/blobs?prefix=" + std::string(area) + sheet + "/");
      EXPECT_EQ(r.status, 200) << r.raw;
      if (r.status != 200) continue;
      for (const json& k : r.body["keys"]) keys.push_back(k["key"]);
    }
    return keys;
  }

  // Moves the clock until `condition` holds (work in the background needs time).
  ::testing::AssertionResult EventuallyWithClock(const std::function<bool()>& condition) {
    return PipelineWatch(*server_).Until([&] {
      if (condition()) return true;
      AdvanceClockWhenIdle(*client_, 61);
      return false;
    });
  }

  // A sheet with something in every area a live sheet uses: completed snapshots, large
  // entries (entries/), a completed upload and an open one (uploads/), an archived
  // truncated segment (archives/).
  std::string PopulatedSheet() {
    const std::string sheet =
        CreateSheet(*client_, json{{"snapshot_every", 3}, {"segment_entries", 4}});
    const std::string entries = "/v1/sheets/" + sheet + "/entries";
    for (int i = 0; i < 10; ++i) {
      json body{{"ref", "A" + std::to_string(i + 1)}, {"value", i}};
      if (i % 3 == 0) body["format"] = std::string(200, 'f');  // over the inline limit
      EXPECT_EQ(Post(*client_, entries, {{"type", "SetCell"}, {"body", body}}).status,
                201);
    }
    for (int open = 0; open < 2; ++open) {
      JsonResponse upload =
          Post(*client_, "/v1/sheets/" + sheet + "/uploads", {{"type", "Attachment"}});
      EXPECT_EQ(upload.status, 201) << upload.raw;
      EXPECT_EQ(RequestUrl(*client_, "PUT", upload.body["url"], "payload").status, 200);
      if (open == 0) {
        EXPECT_EQ(Post(*client_,
                       "/v1/sheets/" + sheet + "/uploads/" +
                           upload.body["upload_id"].get<std::string>() + "/complete",
                       json::object())
                      .status,
                  201);
      }
    }
    // Snapshots complete, then the first segments are archived away. A segment rolls
    // over at an append made once its snapshot is complete, so when the builds are
    // slower than the appends above (a loaded machine, blobs on S3) those all come
    // before it: one more append each time the snapshots are done and the sheet still
    // has too few segments. On a timeout the sheet, its snapshots, the pending
    // snapshots and the queues say where it stopped.
    JsonResponse state;
    EXPECT_TRUE(EventuallyWithClock([&] {
      state = Get(*client_, "/v1/sheets/" + sheet);
      if (!state.body.is_object() || state.body["pending_snapshots"] != 0) return false;
      if (state.body["segments"].size() >= 3 &&
          state.body["segments"][1]["last_snapshot"].is_number()) {
        return true;
      }
      EXPECT_EQ(Post(*client_, entries, {{"type", "Note"}, {"body", "more"}}).status,
                201);
      return false;
    })) << "sheet: "
        << state.raw
        << "\nsnapshots: " << Get(*client_, "/v1/sheets/" + sheet + "/snapshots").raw
        << "\npending: " << Get(*client_, "/v1/admin/pending-snapshots").raw
        << "\nqueues: " << Get(*client_, "/v1/admin/queues").raw;
    JsonResponse truncated = Post(*client_, "/v1/sheets/" + sheet + "/truncate",
                                  {{"before_seq", 4}, {"archive", true}});
    EXPECT_EQ(truncated.status, 200) << truncated.raw;
    return sheet;
  }

  // Rows of the sheet left in `table` (read from the stopped server's file).
  int64_t RowsLeft(const std::string& table, const std::string& sheet) {
    return CountInTableStore(dir_.path(), "SELECT COUNT(*) FROM " + table +
                                              " WHERE sheet_id = '" + sheet + "'");
  }

  void ExpectVerifyClean() {
    JsonResponse verify;
    EXPECT_TRUE(EventuallyWithClock([&] {
      verify = Post(*client_, "/v1/admin/verify", json::object());
      return verify.status == 200 && verify.body["ok"] == true &&
             verify.body["pending"].empty();
    })) << verify.raw;
  }
};

TEST_F(SheetDeleteHttpTest, DeleteRemovesEveryObjectAndUploadRowOfTheSheet) {
  const std::string sheet = PopulatedSheet();
  const std::string other = PopulatedSheet();
  const std::vector<std::string> before = SheetObjects(sheet);
  ASSERT_GE(before.size(), 6u);
  // The other sheet's pipeline may still be writing (a snapshot the last append made
  // due): what it had must stay, whatever it adds meanwhile.
  const std::vector<std::string> other_before = SheetObjects(other);

  ASSERT_EQ(Request(*client_, "DELETE", "/v1/sheets/" + sheet).status, 204);
  // Gone for clients as soon as the DELETE is answered; the objects follow in the
  // background, without the clock moving.
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet).status, 404);
  EXPECT_TRUE(Eventually([&] { return SheetObjects(sheet).empty(); }))
      << SheetObjects(sheet).size() << " objects left";
  const std::vector<std::string> other_after = SheetObjects(other);
  for (const std::string& key : other_before) {  // nothing of another sheet
    EXPECT_NE(std::find(other_after.begin(), other_after.end(), key), other_after.end())
        << key << " of the other sheet went";
  }
  ExpectVerifyClean();

  server_->Kill();  // committed rows are in the WAL, which sqlite3 reads
  EXPECT_EQ(RowsLeft("upload", sheet), 0);
  EXPECT_EQ(RowsLeft("entry", sheet), 0);
  EXPECT_GT(RowsLeft("upload", other), 0);
}

TEST_F(SheetDeleteHttpTest, KillDuringTheDeleteIsFinishedByTheNextStart) {
  for (const char* point : {"sheet.purge.before", "sheet.purge.after_object"}) {
    SCOPED_TRACE(point);
    const std::string sheet = PopulatedSheet();
    ASSERT_GE(SheetObjects(sheet).size(), 6u);
    ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, point, "crash"));
    // The purge runs after the answer: the 204 may or may not reach us first.
    JsonResponse deleted = Request(*client_, "DELETE", "/v1/sheets/" + sheet);
    EXPECT_TRUE(deleted.status == 204 || deleted.status == -1) << deleted.raw;
    EXPECT_TRUE(server_->WaitForExit()) << "the server should have died at " << point;
    server_->Kill();
    ASSERT_NO_FATAL_FAILURE(StartServer());
    // Invisible at once (the rows went in one transaction), and the purge resumes by
    // itself at start.
    EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet).status, 404);
    EXPECT_TRUE(Eventually([&] { return SheetObjects(sheet).empty(); }))
        << SheetObjects(sheet).size() << " objects left";
    ExpectVerifyClean();
  }
}

TEST_F(SheetDeleteHttpTest, DeleteDuringASnapshotBuildLeavesNothing) {
  const std::string sheet = CreateSheet(*client_);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(EventuallyWithClock([&] {
    return Get(*client_, "/v1/sheets/" + sheet).body["last_snapshot"].is_object();
  }));
  const size_t completed_objects = SheetObjects(sheet).size();
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "B2", 7));
  // The build writes its chunks and root, then fails before completing (and keeps
  // failing): its objects exist and nothing references them, as mid-build.
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "snapshot.before_complete", "error", -1));
  ASSERT_NO_FATAL_FAILURE(TakeSnapshot(*client_, sheet));
  ASSERT_TRUE(Eventually([&] { return SheetObjects(sheet).size() > completed_objects; }))
      << SheetObjects(sheet).size();

  ASSERT_EQ(Request(*client_, "DELETE", "/v1/sheets/" + sheet).status, 204);
  EXPECT_TRUE(Eventually([&] { return SheetObjects(sheet).empty(); }))
      << SheetObjects(sheet).size() << " objects left";
  // The build's message comes back after its visibility timeout and finds no sheet.
  ASSERT_EQ(Request(*client_, "DELETE", "/v1/admin/faults").status, 204);
  for (int i = 0; i < 5; ++i) AdvanceClockWhenIdle(*client_, 61);
  EXPECT_EQ(SheetObjects(sheet), std::vector<std::string>{});
  ExpectVerifyClean();
}

}  // namespace
}  // namespace sheetlog::testing
