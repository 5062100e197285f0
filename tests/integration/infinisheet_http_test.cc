// Over real HTTP against the real binary: what infinisheet's EventLog and
// BlobStore contracts need from the API (api.md "Entry metadata and live updates" and
// the Entries/Blob sections): `complete`/`next`, exact truncation, entry metadata,
// the append reply, continuation tokens bound to their listing, infinisheet's own
// SetCellValueAndFormat, no server-inserted entries with snapshot_every 0, and entry
// lists with external bodies inline (bounded per page).
#include <gtest/gtest.h>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/spreadsheet_tools.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class InfinisheetHttpTest : public ApiTest {
 protected:
  void SetUp() override { StartServer(ServerOptions::InMemory()); }

  // Appends `count` Note entries, checking each reply.
  void AppendNotes(const std::string& sheet, int count) {
    for (int i = 0; i < count; ++i) {
      JsonResponse r =
          PostEntry(*client_, sheet, {{"type", "Note"}, {"body", {{"i", i}}}});
      ASSERT_EQ(r.status, 201) << r.raw;
    }
  }

  JsonResponse Entries(const std::string& sheet, const std::string& query) {
    return Get(*client_, "/v1/sheets/" + sheet + "/entries?" + query);
  }

  JsonResponse Patch(const std::string& sheet, int64_t seq, const json& body) {
    return Request(*client_, "PATCH",
                   "/v1/sheets/" + sheet + "/entries/" + std::to_string(seq),
                   body.dump());
  }

  JsonResponse Truncate(const std::string& sheet, int64_t before_seq) {
    return Post(*client_, "/v1/sheets/" + sheet + "/truncate",
                {{"before_seq", before_seq}});
  }

  JsonResponse Cells(const std::string& sheet, const std::string& query) {
    return Get(*client_, "/v1/sheets/" + sheet + "/cells?" + query);
  }
};

// `complete` means "nothing more exists in [from, to) now"; `next` says where
// the next page starts.
TEST_F(InfinisheetHttpTest, CompleteWhenToLiesBeyondTheHeadAndNextSaysWhereToGoOn) {
  const std::string sheet = CreateSheet(*client_);
  JsonResponse empty = Entries(sheet, "from=1&to=6");
  ASSERT_EQ(empty.status, 200) << empty.raw;
  EXPECT_EQ(empty.body["entries"].size(), 0u);
  EXPECT_EQ(empty.body["complete"], true);
  EXPECT_EQ(empty.body["next"], 1);

  AppendNotes(sheet, 15);
  JsonResponse tail = Entries(sheet, "from=11&to=21");
  ASSERT_EQ(tail.status, 200) << tail.raw;
  EXPECT_EQ(tail.body["entries"].size(), 5u);
  EXPECT_EQ(tail.body["complete"], true);
  EXPECT_EQ(tail.body["next"], 16);

  JsonResponse page = Entries(sheet, "from=1&limit=10");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.body["complete"], false);
  EXPECT_EQ(page.body["next"], 11);
  JsonResponse rest = Entries(sheet, "from=" + page.body["next"].dump() + "&limit=10");
  EXPECT_EQ(rest.body["entries"].size(), 5u);
  EXPECT_EQ(rest.body["complete"], true);
}

// A truncation point outside the retained log is a RangeError, changing
// nothing.
TEST_F(InfinisheetHttpTest, TruncateOutsideTheLogIsARangeError) {
  const std::string sheet = CreateSheet(*client_);
  AppendNotes(sheet, 5);  // seqs 0..5, next 6
  JsonResponse beyond = Truncate(sheet, 7);
  EXPECT_EQ(beyond.status, 400) << beyond.raw;
  EXPECT_EQ(beyond.body["error"]["code"], "RangeError");
  ASSERT_EQ(Truncate(sheet, 3).status, 200);
  JsonResponse below = Truncate(sheet, 2);
  EXPECT_EQ(below.status, 400) << below.raw;
  EXPECT_EQ(below.body["error"]["code"], "RangeError");
  JsonResponse info = Get(*client_, "/v1/sheets/" + sheet);
  EXPECT_EQ(info.body["first_seq"], 3);
  EXPECT_EQ(info.body["next_seq"], 6);
  EXPECT_EQ(Truncate(sheet, 3).status, 200) << "at first_seq: nothing to do";
  EXPECT_EQ(Truncate(sheet, 6).status, 200) << "at the next seq: everything goes";
}

// Exact truncation inside a segment; cells at and after the cut read as
// before, the sheet verifies, and appends and loads go on.
TEST_F(InfinisheetHttpTest, ExactTruncationKeepsTheStateAtTheCut) {
  const std::string sheet = CreateSheet(*client_);
  for (int i = 1; i <= 6; ++i) {
    ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "A" + std::to_string(i), i));
  }
  ASSERT_EQ(
      PostEntry(*client_, sheet, {{"type", "DeleteRows"}, {"body", {{"at", 1}}}}).status,
      201);
  // seqs: 0 Snapshot, 1-6 SetCell, 7 DeleteRows.
  JsonResponse at_cut_before = Cells(sheet, "range=A1:A6&at=4");
  JsonResponse head_before = Cells(sheet, "range=A1:A6");
  ASSERT_EQ(at_cut_before.status, 200) << at_cut_before.raw;

  JsonResponse cut = Truncate(sheet, 4);
  ASSERT_EQ(cut.status, 200) << cut.raw;
  EXPECT_EQ(cut.body["first_seq"], 4);
  EXPECT_EQ(cut.body["dropped_entries"], 4);
  JsonResponse gone = Entries(sheet, "from=3");
  EXPECT_EQ(gone.status, 410) << gone.raw;
  EXPECT_EQ(gone.body["error"]["first_seq"], 4);
  JsonResponse start = Entries(sheet, "from=start");
  ASSERT_EQ(start.status, 200);
  ASSERT_EQ(start.body["entries"].size(), 4u);
  EXPECT_EQ(start.body["entries"][0]["seq"], 4);

  JsonResponse at_cut = Cells(sheet, "range=A1:A6&at=4");
  ASSERT_EQ(at_cut.status, 200) << at_cut.raw;
  EXPECT_EQ(at_cut.body["rows"], at_cut_before.body["rows"]);
  EXPECT_EQ(at_cut.body["rows"], json::parse("[[1],[2],[3],[4],[null],[null]]"));
  EXPECT_EQ(Cells(sheet, "range=A1:A6&at=3").body["rows"],
            json::parse("[[1],[2],[3],[null],[null],[null]]"))
      << "just before the cut is the base itself";
  EXPECT_EQ(Cells(sheet, "range=A1:A6&at=2").status, 410);
  JsonResponse head = Cells(sheet, "range=A1:A6");
  EXPECT_EQ(head.body["rows"], head_before.body["rows"]);

  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "B1", 9));
  JsonResponse load = Get(*client_, "/v1/sheets/" + sheet + "/load");
  ASSERT_EQ(load.status, 200) << load.raw;
  EXPECT_EQ(load.body["snapshot"]["seq"], 4);
  EXPECT_EQ(load.body["entries"].size(), 5u);
  EXPECT_EQ(load.body["next_seq"], 9);

  // Everything: the log is empty and appends continue at the next seq.
  ASSERT_EQ(Truncate(sheet, 9).status, 200);
  JsonResponse none = Entries(sheet, "from=start");
  ASSERT_EQ(none.status, 200) << none.raw;
  EXPECT_EQ(none.body["from"], 9);
  EXPECT_EQ(none.body["entries"].size(), 0u);
  EXPECT_EQ(none.body["complete"], true);
  EXPECT_EQ(Cells(sheet, "range=B1").body["rows"], json::parse("[[9]]"));
  JsonResponse next =
      PostEntry(*client_, sheet, {{"type", "Note"}, {"body", 1}, {"expect_seq", 9}});
  EXPECT_EQ(next.status, 201) << next.raw;

  JsonResponse verify = Post(*client_, "/v1/admin/verify", json{{"sheet", sheet}});
  ASSERT_EQ(verify.status, 200) << verify.raw;
  EXPECT_EQ(verify.body["ok"], true) << verify.body.dump();
}

// A snapshot after an exact cut is built from the cut's base and the entries after it
// (the entries before are gone); verify compares it with a replay from the base.
TEST_F(InfinisheetHttpTest, SnapshotsAfterAnExactCutBuildFromItsBase) {
  const std::string sheet = CreateSheet(*client_);
  for (int i = 1; i <= 4; ++i) {
    ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "A" + std::to_string(i), i));
  }
  ASSERT_EQ(Truncate(sheet, 3).status, 200);  // seqs 3, 4 (A3, A4) stay
  ASSERT_EQ(PostEntry(*client_, sheet, {{"type", "InsertRows"}, {"body", {{"after", 0}}}})
                .status,
            201);
  const int64_t snapshot = TakeSnapshot(*client_, sheet);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForSnapshot(*server_, *client_, sheet, snapshot));
  JsonResponse cells = Cells(sheet, "range=A1:A5&at=" + std::to_string(snapshot));
  ASSERT_EQ(cells.status, 200) << cells.raw;
  EXPECT_EQ(cells.headers.find("X-Snapshot-Seq")->second, std::to_string(snapshot));
  EXPECT_EQ(cells.body["rows"], json::parse("[[null],[1],[2],[3],[4]]"));
  JsonResponse verify = Post(*client_, "/v1/admin/verify", json{{"sheet", sheet}});
  ASSERT_EQ(verify.status, 200) << verify.raw;
  EXPECT_EQ(verify.body["ok"], true) << verify.body.dump();
  EXPECT_GE(verify.body["snapshots_compared"].get<int>(), 1) << verify.body.dump();
}

// Reads at the head after a cut that released the snapshot a loaded view started from
// (the server keeps hot sheets loaded) still answer.
TEST_F(InfinisheetHttpTest, HeadReadsAfterACutThatReleasedTheirSnapshot) {
  const std::string sheet = CreateSheet(*client_);
  for (int i = 1; i <= 3; ++i) {
    ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "A" + std::to_string(i), i));
  }
  const int64_t snapshot = TakeSnapshot(*client_, sheet);  // seq 4
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForSnapshot(*server_, *client_, sheet, snapshot));
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "A4", 4));  // seq 5
  JsonResponse before = Cells(sheet, "range=A1:A4");  // loads the head from seq 4
  ASSERT_EQ(before.status, 200) << before.raw;
  ASSERT_EQ(Truncate(sheet, 5).status, 200);  // drops seq 4 and its snapshot
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "B1", 5));
  JsonResponse after = Cells(sheet, "range=A1:A4");
  ASSERT_EQ(after.status, 200) << after.raw;
  EXPECT_EQ(after.body["rows"], before.body["rows"]);
}

// Deleting a sheet takes its truncation base with it.
TEST_F(InfinisheetHttpTest, DeletingATruncatedSheetDeletesItsBase) {
  const std::string sheet = CreateSheet(*client_);
  // Entry 0's snapshot first, so no background build writes after the delete.
  ASSERT_TRUE(WaitForSnapshot(*server_, *client_, sheet, 0));
  ASSERT_NO_FATAL_FAILURE(SetCell(*client_, sheet, "A1", 1));
  ASSERT_EQ(Truncate(sheet, 2).status, 200);
  const std::string listing = "/v1/blobs?prefix=snapshots/" + sheet + "/";
  ASSERT_FALSE(Get(*client_, listing).body["keys"].empty()) << "the base exists";
  ASSERT_EQ(Request(*client_, "DELETE", "/v1/sheets/" + sheet).status, 204);
  // The objects are purged in the background once the delete is answered.
  JsonResponse left;
  EXPECT_TRUE(Eventually([&] {
    left = Get(*client_, listing);
    return left.status == 200 && left.body["keys"].empty();
  })) << left.raw;
}

// GET /v1/sheets/{id} names the same last snapshot as entry reads and
// from=snapshot (it named the server's snapshot 0 while they pointed at a newer
// client-set one).
TEST_F(InfinisheetHttpTest, SheetReadAndEntryReadsNameTheSameLastSnapshot) {
  const std::string sheet = CreateSheet(*client_);
  AppendNotes(sheet, 4);  // seqs 1..4
  ASSERT_TRUE(Eventually([&] {
    return Get(*client_, "/v1/sheets/" + sheet).body["last_snapshot"].is_object();
  })) << "entry 0's snapshot completes";
  ASSERT_EQ(Patch(sheet, 3, {{"snapshot", "snap-3"}}).status, 200);
  JsonResponse entries = Entries(sheet, "from=snapshot");
  ASSERT_EQ(entries.status, 200) << entries.raw;
  JsonResponse info = Get(*client_, "/v1/sheets/" + sheet);
  ASSERT_EQ(info.status, 200) << info.raw;
  EXPECT_EQ(info.body["last_snapshot"], entries.body["last_snapshot"]) << info.raw;
  EXPECT_EQ(info.body["last_snapshot"],
            json({{"seq", 3}, {"root", nullptr}, {"snapshot", "snap-3"}}));
  EXPECT_EQ(entries.body["from"], 3);
}

// Metadata on entries (PATCH and with an append), returned on every
// read; from=snapshot and last_snapshot count client-set snapshots; the append reply
// carries next_seq and last_snapshot.
TEST_F(InfinisheetHttpTest, EntryMetadataAndTheAppendReply) {
  const std::string sheet = CreateSheet(*client_);
  JsonResponse first = PostEntry(*client_, sheet, {{"type", "Note"}, {"body", 0}});
  ASSERT_EQ(first.status, 201) << first.raw;
  EXPECT_EQ(first.body["next_seq"], 2);
  EXPECT_TRUE(first.body["last_snapshot"].is_null() ||
              first.body["last_snapshot"]["seq"] == 0)
      << "only the server's entry 0 may be a snapshot yet: " << first.raw;
  AppendNotes(sheet, 9);  // seqs 1..10

  JsonResponse bad_field = Patch(sheet, 5, {{"colour", "red"}});
  EXPECT_EQ(bad_field.status, 400) << bad_field.raw;
  JsonResponse bad_type = Patch(sheet, 5, {{"snapshot", 7}});
  EXPECT_EQ(bad_type.status, 400) << bad_type.raw;
  JsonResponse beyond = Patch(sheet, 11, {{"snapshot", "s"}});
  EXPECT_EQ(beyond.status, 400) << beyond.raw;
  EXPECT_EQ(beyond.body["error"]["code"], "RangeError");

  JsonResponse patched = Patch(sheet, 5, {{"snapshot", "snap-5"}, {"history", "h"}});
  ASSERT_EQ(patched.status, 200) << patched.raw;
  EXPECT_EQ(patched.body["seq"], 5);
  EXPECT_EQ(patched.body["snapshot"], "snap-5");
  EXPECT_EQ(patched.body["history"], "h");
  EXPECT_FALSE(patched.body.contains("pending")) << "never set: absent";
  JsonResponse cleared = Patch(sheet, 5, {{"history", nullptr}, {"pending", "wf"}});
  ASSERT_EQ(cleared.status, 200);
  EXPECT_EQ(cleared.body["snapshot"], "snap-5");
  EXPECT_TRUE(cleared.body.contains("history") && cleared.body["history"].is_null());
  EXPECT_EQ(cleared.body["pending"], "wf");

  JsonResponse one = Get(*client_, "/v1/sheets/" + sheet + "/entries/5");
  EXPECT_EQ(one.body["snapshot"], "snap-5");
  JsonResponse from_snapshot = Entries(sheet, "from=snapshot");
  ASSERT_EQ(from_snapshot.status, 200) << from_snapshot.raw;
  EXPECT_EQ(from_snapshot.body["from"], 5);
  EXPECT_EQ(from_snapshot.body["entries"].size(), 6u);
  EXPECT_EQ(from_snapshot.body["entries"][0]["pending"], "wf");
  EXPECT_EQ(from_snapshot.body["last_snapshot"]["seq"], 5);
  EXPECT_EQ(from_snapshot.body["last_snapshot"]["snapshot"], "snap-5");
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet).body["next_seq"], 11)
      << "metadata is not an entry";

  JsonResponse with_meta = PostEntry(
      *client_, sheet,
      {{"type", "Note"}, {"body", 11}, {"snapshot", "snap-11"}, {"expect_seq", 11}});
  ASSERT_EQ(with_meta.status, 201) << with_meta.raw;
  EXPECT_EQ(with_meta.body["next_seq"], 12);
  EXPECT_EQ(with_meta.body["last_snapshot"]["seq"], 11);
  EXPECT_EQ(with_meta.body["last_snapshot"]["snapshot"], "snap-11");
  JsonResponse conflict =
      PostEntry(*client_, sheet, {{"type", "Note"}, {"body", 1}, {"expect_seq", 3}});
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(conflict.body["error"]["next_seq"], 12);
  EXPECT_EQ(
      PostEntry(*client_, sheet, {{"type", "Note"}, {"body", 1}, {"history", 3}}).status,
      400);
}

// A listing continuation token is refused for another prefix.
TEST_F(InfinisheetHttpTest, ContinuationTokenIsBoundToItsPrefix) {
  for (const std::string dir : {"a", "b"}) {
    for (int i = 0; i < 3; ++i) {
      auto put = client_->Put("/v1/blobs/" + dir + "/" + std::to_string(i), "x",
                              "application/octet-stream");
      ASSERT_TRUE(put);
      ASSERT_EQ(put->status, 200) << put->body;
    }
  }
  JsonResponse first = Get(*client_, "/v1/blobs?prefix=a/&delimiter=/&limit=1");
  ASSERT_EQ(first.status, 200) << first.raw;
  const std::string token = first.body["continuation"].get<std::string>();
  JsonResponse wrong =
      Get(*client_, "/v1/blobs?prefix=b/&delimiter=/&continuation=" + token);
  EXPECT_EQ(wrong.status, 400) << wrong.raw;
  EXPECT_EQ(wrong.body["error"]["code"], "ValidationError");
  EXPECT_NE(wrong.body["error"]["message"].get<std::string>().find("another listing"),
            std::string::npos);
  JsonResponse right =
      Get(*client_, "/v1/blobs?prefix=a/&delimiter=/&continuation=" + token);
  ASSERT_EQ(right.status, 200) << right.raw;
  EXPECT_EQ(right.body["keys"].size(), 2u);
}

// Infinisheet's own SetCellValueAndFormat entries, every shape it writes,
// through appends, cells reads, snapshots and CSV export.
TEST_F(InfinisheetHttpTest, InfinisheetSetCellValueAndFormatShapes) {
  const std::string sheet = CreateSheet(*client_);
  const json error = {{"type", "CellError"}, {"value", "#DIV/0!"}};
  for (json body : {json{{"row", 0}, {"column", 0}, {"value", 1.5}},
                    json{{"row", 0}, {"column", 1}, {"value", error}},
                    json{{"row", 0}, {"column", 2}, {"value", "x"}, {"format", "@"}},
                    json{{"row", 0}, {"column", 3}, {"value", true}},
                    json{{"row", 0}, {"column", 4}, {"value", "gone"}},
                    json{{"row", 0}, {"column", 4}},  // undefined: clears
                    // infinisheet's CellData with its format explicitly null.
                    json{{"row", 0}, {"column", 5}, {"value", 2}, {"format", nullptr}}}) {
    JsonResponse r =
        PostEntry(*client_, sheet, {{"type", "SetCellValueAndFormat"}, {"body", body}});
    ASSERT_EQ(r.status, 201) << body.dump() << " " << r.raw;
  }
  JsonResponse bad =
      PostEntry(*client_, sheet,
                {{"type", "SetCellValueAndFormat"},
                 {"body",
                  {{"row", 0},
                   {"column", 0},
                   {"value", {{"type", "CellError"}, {"value", "#OOPS"}}}}}});
  EXPECT_EQ(bad.status, 400) << bad.raw;
  const json expected = json::array({json::array({1.5, error, "x", true, nullptr, 2})});
  JsonResponse cells = Cells(sheet, "range=A1:F1");
  ASSERT_EQ(cells.status, 200) << cells.raw;
  EXPECT_EQ(cells.body["rows"], expected);
  // The same after a snapshot holds them.
  const int64_t snapshot = TakeSnapshot(*client_, sheet);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForSnapshot(*server_, *client_, sheet, snapshot));
  // At the snapshot's seq (not the head, which a server may serve from a view it
  // keeps): the read starts from the snapshot.
  JsonResponse from_snapshot = Cells(sheet, "range=A1:F1&at=" + std::to_string(snapshot));
  EXPECT_EQ(from_snapshot.body["rows"], expected);
  EXPECT_EQ(from_snapshot.headers.find("X-Snapshot-Seq")->second,
            std::to_string(snapshot));
  auto csv = client_->Get("/v1/sheets/" + sheet + "/export?format=csv");
  ASSERT_TRUE(csv);
  EXPECT_EQ(csv->body, "1.5,#DIV/0!,x,TRUE,,2\r\n");
  // XLSX: what openpyxl reads back; the CellError is its text, the cleared cell absent.
  if (!HaveOpenpyxl()) GTEST_SKIP() << "python3-openpyxl is not installed";
  auto xlsx = client_->Get("/v1/sheets/" + sheet + "/export?format=xlsx");
  ASSERT_TRUE(xlsx);
  ASSERT_EQ(xlsx->status, 200) << xlsx->body;
  TempDir dir;
  WriteFileBytes(dir.File("out.xlsx"), xlsx->body);
  std::string read_error;
  json read = OpenpyxlRead(dir.File("out.xlsx"), "", &read_error);
  ASSERT_EQ(read_error, "");
  EXPECT_EQ(read["A1"]["value"], 1.5);
  EXPECT_EQ(read["B1"]["value"], "#DIV/0!");
  EXPECT_EQ(read["C1"]["value"], "x");
  EXPECT_EQ(read["D1"]["value"], true);
  EXPECT_FALSE(read.contains("E1")) << read.dump();
  EXPECT_EQ(read["F1"]["value"], 2);
  EXPECT_EQ(read.size(), 5u) << read.dump();
}

// With snapshot_every 0 the server inserts no entry after entry 0, even
// past segment_entries once entry 0's snapshot is complete.
TEST_F(InfinisheetHttpTest, SnapshotEveryZeroSheetsGetNoServerEntries) {
  const std::string sheet =
      CreateSheet(*client_, json{{"snapshot_every", 0}, {"segment_entries", 4}});
  ASSERT_TRUE(WaitForSnapshot(*server_, *client_, sheet, 0));
  for (int seq = 1; seq <= 10; ++seq) {
    JsonResponse r = PostEntry(*client_, sheet,
                               {{"type", "Note"}, {"body", seq}, {"expect_seq", seq}});
    ASSERT_EQ(r.status, 201) << r.raw;
    EXPECT_EQ(r.body["next_seq"], seq + 1);
  }
  JsonResponse all = Entries(sheet, "from=1");
  ASSERT_EQ(all.body["entries"].size(), 10u);
  for (const json& e : all.body["entries"]) EXPECT_EQ(e["type"], "Note");
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet).body["segments"].size(), 1u);
}

// GET .../entries?body=inline (the TypeScript client always asks for it): bodies kept
// in the blob store come inline, at most 4 MiB of them per page; the entry that would
// pass that starts the next page, and a body over 4 MiB by itself stays a reference.
TEST_F(InfinisheetHttpTest, EntryListInlinesExternalBodiesBoundedPerPage) {
  // Room for a 5 MB append; the test's own server.
  ServerProcess server(ServerOptions::InMemory({"--max-request", "6000000"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  JsonResponse created = Post(client, "/v1/sheets", {{"snapshot_every", 0}});
  ASSERT_EQ(created.status, 201) << created.raw;
  const std::string entries = "/v1/sheets/" + created.body.value("id", "") + "/entries";
  ASSERT_EQ(Post(client, entries, {{"type", "Note"}, {"body", "small"}}).status, 201);
  // Seqs 2..6: 1 MB each, stored externally (over the 16 KiB inline limit).
  for (int i = 0; i < 5; ++i) {
    JsonResponse r = Post(client, entries,
                          {{"type", "Note"}, {"body", std::string(1000000, 'a' + i)}});
    ASSERT_EQ(r.status, 201) << r.raw;
    ASSERT_FALSE(r.body["external"].is_null()) << r.raw;
  }
  // Seq 7: 5 MB, over the page budget by itself.
  JsonResponse huge =
      Post(client, entries, {{"type", "Note"}, {"body", std::string(5000000, 'z')}});
  ASSERT_EQ(huge.status, 201) << huge.raw;

  // Without ?body=inline nothing changes: external bodies are null.
  JsonResponse plain = Get(client, entries + "?from=1");
  ASSERT_EQ(plain.status, 200) << plain.raw.substr(0, 500);
  ASSERT_EQ(plain.body["entries"].size(), 7u);
  EXPECT_EQ(plain.body["entries"][0]["body"], "small");
  EXPECT_TRUE(plain.body["entries"][1]["body"].is_null());
  EXPECT_EQ(plain.body["complete"], true);

  // Four 1 MB bodies fit in 4 MiB, the fifth does not: the page ends before it.
  JsonResponse first = Get(client, entries + "?from=1&body=inline");
  ASSERT_EQ(first.status, 200) << first.raw.substr(0, 500);
  ASSERT_EQ(first.body["entries"].size(), 5u);
  EXPECT_EQ(first.body["complete"], false);
  EXPECT_EQ(first.body["next"], 6);
  EXPECT_EQ(first.body["entries"][0]["body"], "small");
  for (int i = 0; i < 4; ++i) {
    const json& e = first.body["entries"][i + 1];
    EXPECT_EQ(e["seq"], i + 2);
    EXPECT_EQ(e["body"], std::string(1000000, 'a' + i)) << "seq " << i + 2;
    EXPECT_FALSE(e["external"].is_null());  // still names the object
  }
  // The next page starts with it; the 5 MB body stays a reference.
  JsonResponse second = Get(client, entries + "?from=6&body=inline");
  ASSERT_EQ(second.status, 200) << second.raw.substr(0, 500);
  ASSERT_EQ(second.body["entries"].size(), 2u);
  EXPECT_EQ(second.body["complete"], true);
  EXPECT_EQ(second.body["next"], 8);
  EXPECT_EQ(second.body["entries"][0]["body"], std::string(1000000, 'e'));
  EXPECT_TRUE(second.body["entries"][1]["body"].is_null());
  EXPECT_EQ(second.body["entries"][1]["external"]["size"], 5000002);
  // A page bounded by `to` and `limit` as before.
  JsonResponse bounded = Get(client, entries + "?from=2&to=4&body=inline");
  ASSERT_EQ(bounded.body["entries"].size(), 2u);
  EXPECT_EQ(bounded.body["complete"], true);
  EXPECT_EQ(bounded.body["next"], 4);
}

}  // namespace
}  // namespace sheetlog::testing
