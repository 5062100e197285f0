// api.md "Spreadsheet" over real HTTP against the real binary: the snapshot pipeline
// end to end (policy -> change feed -> queue -> worker -> completed root), and the
// routes that read the sheet (cells at any seq, CSV export, the snapshot list).
#include <gtest/gtest.h>

#include <algorithm>

#include "emulator/json_text.h"
#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class SpreadsheetHttpTest : public ApiTest {
 protected:
  void SetUp() override { StartServer(ServerOptions(dir_.path())); }

  JsonResponse Cells(const std::string& sheet, const std::string& query) {
    return Get(*client_, "/v1/sheets/" + sheet + "/cells?" + query);
  }
};

TEST_F(SpreadsheetHttpTest, SnapshotPolicyRunsThePipelineToCompletedRoots) {
  const std::string sheet = CreateSheet(*client_, /*snapshot_every=*/10);
  for (int i = 1; i <= 25; ++i) {
    Append(*client_, sheet, "SetCell", {{"ref", "A" + std::to_string(i)}, {"value", i}});
  }
  // Entry 0 plus one Snapshot entry per 10 appends.
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, sheet, {.at_least = 3}));
  json list = Snapshots(*client_, sheet);
  for (const json& s : list) {
    EXPECT_TRUE(s["root"].is_string()) << s.dump();
    EXPECT_TRUE(s["pending"].is_null()) << "a completed snapshot has no pending entry";
    // The manifest URL is a presigned GET that works without the token (the server's
    // route, or on S3 the store's own URL).
    const std::string url = s["manifest_url"].get<std::string>();
    EXPECT_EQ(RequestUrl(*client_, "GET", url).status, 200) << url;
  }
  JsonResponse load = Get(*client_, "/v1/sheets/" + sheet + "/load");
  ASSERT_EQ(load.status, 200);
  EXPECT_EQ(load.body["snapshot"]["seq"], list.back()["seq"]);
  JsonResponse info = Get(*client_, "/v1/sheets/" + sheet);
  EXPECT_EQ(info.body["pending_snapshots"], 0);
}

TEST_F(SpreadsheetHttpTest, CellsAtTheHeadAndAtEarlierSeqs) {
  const std::string sheet = CreateSheet(*client_, /*snapshot_every=*/4);
  int64_t after_first =
      Append(*client_, sheet, "SetCells", {{"at", "A1"}, {"rows", {{1, "x", true}}}});
  for (int i = 0; i < 6; ++i) {
    Append(*client_, sheet, "SetCell",
           {{"ref", "B" + std::to_string(i + 2)}, {"value", i * 1.5}});
  }
  int64_t before_insert =
      Append(*client_, sheet, "SetCell", {{"ref", "C3"}, {"value", "=A1+1"}});
  Append(*client_, sheet, "InsertRows", {{"after", 0}, {"count", 1}});
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, sheet, {.at_least = 2}));

  JsonResponse head = Cells(sheet, "range=A1:C4");
  ASSERT_EQ(head.status, 200) << head.raw;
  EXPECT_EQ(head.body["range"], "A1:C4");
  EXPECT_EQ(head.body["rows"], ParseJson(R"([[null, null, null],
                                                [1, "x", true],
                                                [null, 0, null],
                                                [null, 1.5, "=A1+1"]])"));
  ASSERT_EQ(head.headers.count("X-Snapshot-Seq"), 1u);
  EXPECT_NE(head.headers.find("X-Snapshot-Seq")->second, "none")
      << "the head is read from a snapshot plus the entries after it";

  JsonResponse early = Cells(sheet, "range=A1:C2&at=" + std::to_string(after_first));
  ASSERT_EQ(early.status, 200) << early.raw;
  EXPECT_EQ(early.body["at_seq"], after_first);
  EXPECT_EQ(early.body["rows"], ParseJson(R"([[1, "x", true], [null, null, null]])"));

  JsonResponse mid = Cells(sheet, "range=C3&at=" + std::to_string(before_insert));
  EXPECT_EQ(mid.body["rows"], ParseJson(R"([["=A1+1"]])"));
}

TEST_F(SpreadsheetHttpTest, CellsRefusesBadRequestsWithClearErrors) {
  const std::string sheet = CreateSheet(*client_, 0);
  Append(*client_, sheet, "SetCell", {{"ref", "A1"}, {"value", 1}});
  struct Case {
    std::string query;
    int status;
    std::string code;
  } cases[] = {
      {"", 400, "ValidationError"},
      {"range=1A", 400, "ValidationError"},
      {"range=A1:ZZZ100000", 400, "ValidationError"},  // too many cells at once
      {"range=A1&at=x", 400, "ValidationError"},
      {"range=A1&at=-1", 400, "RangeError"},
      {"range=A1&at=99", 400, "RangeError"},
  };
  for (const Case& c : cases) {
    JsonResponse r = Cells(sheet, c.query);
    EXPECT_EQ(r.status, c.status) << c.query << ": " << r.raw;
    EXPECT_EQ(r.body["error"]["code"], c.code) << c.query;
    EXPECT_FALSE(r.body["error"]["message"].get<std::string>().empty());
  }
  EXPECT_EQ(
      Get(*client_, "/v1/sheets/00000000-0000-4000-8000-000000000000/cells?range=A1")
          .status,
      404);
}

TEST_F(SpreadsheetHttpTest, ExportStreamsTheUsedRangeAsCsv) {
  const std::string sheet = CreateSheet(*client_, /*snapshot_every=*/3);
  Append(*client_, sheet, "SetCells",
         {{"cells",
           {{"A1", "name"},
            {"B1", "note"},
            {"A2", "a, b"},
            {"B2", "say \"hi\""},
            {"A3", 2.5},
            {"B3", false},
            {"C4", "line1\nline2"}}}});
  Append(*client_, sheet, "SetCell", {{"ref", "A5"}, {"value", 7}});
  Append(*client_, sheet, "DeleteRows", {{"at", 5}});
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, sheet, {.at_least = 2}));
  Append(*client_, sheet, "SetCell", {{"ref", "B5"}, {"value", " padded "}});

  auto r = client_->Get("/v1/sheets/" + sheet + "/export?format=csv");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/csv; charset=utf-8");
  EXPECT_EQ(r->body,
            "name,note,\r\n"
            "\"a, b\",\"say \"\"hi\"\"\",\r\n"
            "2.5,FALSE,\r\n"
            ",,\"line1\nline2\"\r\n"
            ",\" padded \",\r\n");

  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet + "/export?format=ods").status, 400);
  const std::string empty = CreateSheet(*client_, 0);
  auto none = client_->Get("/v1/sheets/" + empty + "/export");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 200);
  EXPECT_EQ(none->body, "");
}

TEST_F(SpreadsheetHttpTest, TruncateDropsOldSegmentsAndTheSheetReadsTheSame) {
  const std::string sheet = CreateSheet(*client_, 0);
  for (int i = 1; i <= 3; ++i) {
    Append(*client_, sheet, "SetCell", {{"ref", "A" + std::to_string(i)}, {"value", i}});
  }
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, sheet, {.at_least = 1}));
  JsonResponse segment =
      Post(*client_, "/v1/sheets/" + sheet + "/segments", json::object());
  ASSERT_EQ(segment.status, 201) << segment.raw;
  ASSERT_EQ(segment.body["first_seq"], 5);  // 0 Snapshot, 1-3, 4 EndSegment
  Append(*client_, sheet, "SetCell", {{"ref", "A4"}, {"value", 4}});
  Append(*client_, sheet, "DeleteRows", {{"at", 1}});
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, sheet, {.at_least = 2}));
  JsonResponse before = Cells(sheet, "range=A1:A5");
  ASSERT_EQ(before.status, 200);

  const std::string truncate = "/v1/sheets/" + sheet + "/truncate";
  EXPECT_EQ(Post(*client_, truncate, {{"before_seq", "5"}}).status, 400);
  EXPECT_EQ(Post(*client_, truncate, {{"before_seq", 5}, {"achive", true}}).status, 400);
  EXPECT_EQ(Post(*client_, truncate, json::object()).status, 400);
  JsonResponse r = Post(*client_, truncate, {{"before_seq", 5}, {"archive", true}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["first_seq"], 5);
  EXPECT_EQ(r.body["dropped_segments"], json::array({0}));
  ASSERT_EQ(r.body["archives"].size(), 1u);

  JsonResponse gone = Get(*client_, "/v1/sheets/" + sheet + "/entries?from=0");
  EXPECT_EQ(gone.status, 410) << gone.raw;
  EXPECT_EQ(gone.body["error"]["first_seq"], 5);
  JsonResponse after = Cells(sheet, "range=A1:A5");
  ASSERT_EQ(after.status, 200) << after.raw;
  EXPECT_EQ(after.body["rows"], before.body["rows"]);
  EXPECT_EQ(after.body["rows"], ParseJson("[[2], [3], [4], [null], [null]]"));
  JsonResponse early = Cells(sheet, "range=A1&at=2");
  EXPECT_EQ(early.status, 410) << early.raw;
  EXPECT_EQ(early.body["error"]["first_seq"], 5);
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet + "/load").status, 200);
  auto archive = client_->Get("/v1/blobs/" + r.body["archives"][0].get<std::string>());
  ASSERT_TRUE(archive);
  EXPECT_EQ(archive->status, 200);
  EXPECT_EQ(std::count(archive->body.begin(), archive->body.end(), '\n'), 5);
}

}  // namespace
}  // namespace sheetlog::testing
