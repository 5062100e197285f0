// POST /v1/sheets/{id}/fork in the real binary, on both table stores and both blob
// stores: a fork has its source's cells and time travel up to `at` and a future of its
// own; it copies only the entries since the newest snapshot at or before `at` and
// shares that snapshot's objects, which the source's truncation, retention, the
// lifecycle sweep and the purge of the deleted source all leave in place; refused
// forks and a crash midway leave nothing behind; verify finds nothing wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/json_text.h"
#include "tests/support/api_client.h"
#include "tests/support/command.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

constexpr int64_t kDay = 24 * 3600;

class ForkHttpTest : public ApiTest {
 protected:
  void SetUp() override {
    StartServer(ServerOptions(dir_.path(), {"--clock", "manual", "--enable-faults"}));
  }

  // POST .../fork with `body`, expecting 201: the new sheet.
  json Fork(const std::string& source, const json& body = json::object()) {
    JsonResponse r = Post(*client_, "/v1/sheets/" + source + "/fork", body);
    EXPECT_EQ(r.status, 201) << r.raw;
    return r.body;
  }

  json Sheet(const std::string& id) {
    JsonResponse r = Get(*client_, "/v1/sheets/" + id);
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body;
  }

  // The cells of A1:E3 at `at` (nullopt: the head), or the error answer.
  JsonResponse CellsAt(const std::string& id, std::optional<int64_t> at = std::nullopt) {
    std::string path = "/v1/sheets/" + id + "/cells?range=A1:E3";
    if (at) path += "&at=" + std::to_string(*at);
    return Get(*client_, path);
  }

  json Rows(const std::string& id, std::optional<int64_t> at = std::nullopt) {
    JsonResponse r = CellsAt(id, at);
    EXPECT_EQ(r.status, 200) << "at " << (at ? std::to_string(*at) : "head") << ": "
                             << r.raw;
    return r.body["rows"];
  }

  int64_t NextSeq(const std::string& id) { return Sheet(id)["next_seq"].get<int64_t>(); }

  int64_t SheetCount() {
    JsonResponse r = Get(*client_, "/v1/sheets?limit=1000");
    EXPECT_EQ(r.status, 200) << r.raw;
    return static_cast<int64_t>(r.body["sheets"].size());
  }

  // The snapshot root of Snapshot entry `seq` (completed).
  std::string RootOf(const std::string& id, int64_t seq) {
    JsonResponse r =
        Get(*client_, "/v1/sheets/" + id + "/entries/" + std::to_string(seq));
    EXPECT_EQ(r.status, 200) << r.raw;
    EXPECT_TRUE(r.body["snapshot_root"].is_string()) << r.raw;
    return r.body["snapshot_root"].is_string()
               ? r.body["snapshot_root"].get<std::string>()
               : "";
  }

  int BlobStatus(const std::string& key) {
    return Request(*client_, "HEAD", "/v1/blobs/" + key).status;
  }

  void ExpectVerifyClean() {
    JsonResponse verified = Get(*client_, "/v1/admin/verify?stall_after_s=0");
    ASSERT_EQ(verified.status, 200) << verified.raw;
    EXPECT_EQ(verified.body["ok"], true) << verified.raw;
  }

  // The source every case starts from (snapshot_every 0: snapshots only when taken):
  //   0 Snapshot (the empty sheet), 1 A1=1, 2 B1=2, 3 Snapshot, 4 A1=10, 5 C1=3,
  //   6 Snapshot, 7 D1=4, 8 B1=null
  // with both taken snapshots completed.
  void MakeSource() {
    source_ = CreateSheet(*client_, 0);
    ASSERT_FALSE(source_.empty());
    ASSERT_EQ(SetCell(*client_, source_, "A1", 1), 1);
    ASSERT_EQ(SetCell(*client_, source_, "B1", 2), 2);
    ASSERT_EQ(TakeSnapshot(*client_, source_), 3);
    ASSERT_EQ(SetCell(*client_, source_, "A1", 10), 4);
    ASSERT_EQ(SetCell(*client_, source_, "C1", 3), 5);
    ASSERT_EQ(TakeSnapshot(*client_, source_), 6);
    ASSERT_EQ(SetCell(*client_, source_, "D1", 4), 7);
    ASSERT_EQ(SetCell(*client_, source_, "B1", nullptr), 8);
    ASSERT_TRUE(WaitForSnapshots(*server_, *client_, source_, {.advance_clock_s = 6}));
  }

  // Cells of `fork` equal those of `source` at every seq in [from, to].
  void ExpectSameHistory(const std::string& fork, const std::string& source, int64_t from,
                         int64_t to) {
    for (int64_t s = from; s <= to; ++s) {
      EXPECT_EQ(Rows(fork, s), Rows(source, s)) << "at seq " << s;
    }
  }

  std::string source_;
};

TEST_F(ForkHttpTest, AtTheHeadHasTheSameCellsHistoryAndEntriesFromTheSharedSnapshot) {
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  json fork = Fork(source_, {{"name", "what-if"}});
  ASSERT_TRUE(fork["id"].is_string()) << fork.dump();
  const std::string id = fork["id"];
  EXPECT_EQ(fork["name"], "what-if");
  EXPECT_EQ(fork["fork_of"], source_);
  EXPECT_EQ(fork["next_seq"], 9);
  // Only the entries since the newest snapshot were copied: the fork starts there.
  EXPECT_EQ(fork["first_seq"], 6);
  EXPECT_EQ(Sheet(id)["fork_of"], source_);
  EXPECT_EQ(Rows(id), ParseJson("[[10, null, 3, 4, null], [null, null, null, null, null],"
                                " [null, null, null, null, null]]"));
  // Time travel reaches back through the source, seq by seq.
  ExpectSameHistory(id, source_, 0, 8);
  // The shared snapshot is the source's own objects.
  EXPECT_EQ(RootOf(id, 6), RootOf(source_, 6));
  // The copied entries are the source's, seq for seq.
  std::vector<json> copied = ReadAllEntries(*client_, id);
  std::vector<json> original = ReadAllEntries(*client_, source_);
  ASSERT_EQ(copied.size(), 3u);
  for (const json& e : copied) {
    const json& o = original[e["seq"].get<size_t>()];
    EXPECT_EQ(e["type"], o["type"]) << e.dump();
    EXPECT_EQ(e["body"], o["body"]) << e.dump();
  }
  JsonResponse before = Get(*client_, "/v1/sheets/" + id + "/entries?from=2");
  EXPECT_EQ(before.status, 410) << before.raw;
  EXPECT_EQ(before.body["error"]["first_seq"], 6) << before.raw;
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + id + "/load").status, 200);
  ASSERT_NO_FATAL_FAILURE(ExpectVerifyClean());
}

TEST_F(ForkHttpTest, AppendsToTheForkAndTheSourceAreIndependent) {
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  const std::string id = Fork(source_)["id"];
  ASSERT_EQ(SetCell(*client_, id, "E1", "fork"), 9);
  ASSERT_EQ(SetCell(*client_, source_, "E2", "source"), 9);
  ASSERT_EQ(SetCell(*client_, id, "A1", "fork"), 10);
  EXPECT_EQ(Rows(id)[0], ParseJson(R"(["fork", null, 3, 4, "fork"])"));
  EXPECT_EQ(Rows(id)[1], ParseJson("[null, null, null, null, null]"));
  EXPECT_EQ(Rows(source_)[0], ParseJson("[10, null, 3, 4, null]"));
  EXPECT_EQ(Rows(source_)[1], ParseJson(R"([null, null, null, null, "source"])"));
  EXPECT_EQ(NextSeq(id), 11);
  EXPECT_EQ(NextSeq(source_), 10);
  // The pasts are still one.
  ExpectSameHistory(id, source_, 0, 8);
  // The fork's own snapshots are its own objects.
  const int64_t snap = TakeSnapshot(*client_, id);
  ASSERT_TRUE(WaitForSnapshot(*server_, *client_, id, snap, {.advance_clock_s = 6}));
  EXPECT_EQ(RootOf(id, snap).rfind("snapshots/" + id + "/", 0), 0u) << RootOf(id, snap);
  ASSERT_NO_FATAL_FAILURE(ExpectVerifyClean());
}

TEST_F(ForkHttpTest, AtAnOlderSeqHasTheSourcesCellsAndHistoryUpToIt) {
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  // at: the seq forked at; first: where the fork's copy starts (the newest completed
  // snapshot at or before it, else the start of the log).
  struct Case {
    int64_t at;
    int64_t first;
  };
  for (const Case& c :
       {Case{0, 0}, Case{1, 0}, Case{3, 3}, Case{4, 3}, Case{6, 6}, Case{7, 6}}) {
    SCOPED_TRACE("at " + std::to_string(c.at));
    json fork = Fork(source_, {{"at", c.at}});
    ASSERT_TRUE(fork["id"].is_string()) << fork.dump();
    const std::string id = fork["id"];
    EXPECT_EQ(fork["next_seq"], c.at + 1);
    EXPECT_EQ(fork["first_seq"], c.first);
    ExpectSameHistory(id, source_, 0, c.at);
    EXPECT_EQ(Rows(id), Rows(source_, c.at));
    // Past the fork's head: the fork does not see the source's later entries.
    JsonResponse past = CellsAt(id, c.at + 1);
    EXPECT_EQ(past.status, 400) << past.raw;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectVerifyClean());
}

TEST_F(ForkHttpTest, AForkOfAForkReachesBackThroughBoth) {
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  const std::string first = Fork(source_, {{"at", 7}})["id"];
  ASSERT_EQ(SetCell(*client_, first, "B2", 7), 8);
  ASSERT_EQ(TakeSnapshot(*client_, first), 9);
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, first, {.advance_clock_s = 6}));
  ASSERT_EQ(SetCell(*client_, first, "C2", 8), 10);
  ASSERT_EQ(SetCell(*client_, first, "D2", 9), 11);

  json second = Fork(first, {{"at", 10}, {"name", "second"}});
  const std::string id = second["id"];
  EXPECT_EQ(second["fork_of"], first);
  EXPECT_EQ(second["first_seq"], 9);
  EXPECT_EQ(second["next_seq"], 11);
  // Seqs 9 and 10 from its own copy, 6..8 through the first fork, 0..5 through the
  // source.
  ExpectSameHistory(id, first, 0, 10);
  ExpectSameHistory(id, source_, 0, 7);
  ASSERT_EQ(SetCell(*client_, id, "E3", "second"), 11);
  EXPECT_EQ(Rows(first)[2], ParseJson("[null, null, null, null, null]"));
  EXPECT_EQ(Rows(id)[1], ParseJson("[null, 7, 8, null, null]"));
  ASSERT_NO_FATAL_FAILURE(ExpectVerifyClean());
}

TEST_F(ForkHttpTest, TheSourcesTruncationSweepAndDeletionLeaveWhatTheForkShares) {
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  const std::string root3 = RootOf(source_, 3);
  const std::string root6 = RootOf(source_, 6);
  const std::string id = Fork(source_)["id"];
  const json cells = Rows(id);
  std::vector<json> history;
  for (int64_t s = 0; s <= 8; ++s) history.push_back(Rows(id, s));

  // An exact truncation of the source at its head releases both snapshots it drops:
  // the one the fork shares stays, the other goes.
  JsonResponse cut =
      Post(*client_, "/v1/sheets/" + source_ + "/truncate", {{"before_seq", 9}});
  ASSERT_EQ(cut.status, 200) << cut.raw;
  EXPECT_EQ(BlobStatus(root3), 404);
  EXPECT_EQ(BlobStatus(root6), 200);
  // The lifecycle sweep, now and long after.
  ASSERT_EQ(Post(*client_, "/v1/admin/sweep", json::object()).status, 200);
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, 4 * kDay));
  ASSERT_EQ(Post(*client_, "/v1/admin/sweep", json::object()).status, 200);
  EXPECT_EQ(BlobStatus(root6), 200);
  EXPECT_EQ(Rows(id), cells);
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + id + "/load").status, 200);
  // The fork's own range still reads; before it, the source answers as it does now.
  for (int64_t s = 5; s <= 8; ++s) EXPECT_EQ(Rows(id, s), history[s]) << "at " << s;
  EXPECT_EQ(CellsAt(id, 2).status, 410);
  EXPECT_EQ(CellsAt(id, 2).status, CellsAt(source_, 2).status);
  ASSERT_NO_FATAL_FAILURE(ExpectVerifyClean());

  // A snapshot the source takes after the fork is its alone: the purge of the deleted
  // source removes it and leaves the shared one.
  const int64_t later = TakeSnapshot(*client_, source_);
  ASSERT_TRUE(
      WaitForSnapshot(*server_, *client_, source_, later, {.advance_clock_s = 6}));
  const std::string own = RootOf(source_, later);
  ASSERT_EQ(Request(*client_, "DELETE", "/v1/sheets/" + source_).status, 204);
  ASSERT_TRUE(Eventually([&] { return BlobStatus(own) == 404; })) << "server log:\n"
                                                                  << server_->Log();
  EXPECT_EQ(BlobStatus(root6), 200);
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, 4 * kDay));
  ASSERT_EQ(Post(*client_, "/v1/admin/sweep", json::object()).status, 200);
  EXPECT_EQ(BlobStatus(root6), 200);
  EXPECT_EQ(Rows(id), cells);
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + id + "/load").status, 200);
  EXPECT_EQ(CellsAt(id, 2).status, 410);
  ASSERT_EQ(SetCell(*client_, id, "E1", 5), 9);
  ASSERT_NO_FATAL_FAILURE(ExpectVerifyClean());
}

TEST_F(ForkHttpTest, RefusedForksChangeNothing) {
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  const int64_t sheets = SheetCount();
  const int64_t entries = CountInTableStore(dir_.path(), "SELECT COUNT(*) FROM entry");
  const int64_t segments = CountInTableStore(dir_.path(), "SELECT COUNT(*) FROM segment");
  const std::string fork = "/v1/sheets/" + source_ + "/fork";

  JsonResponse r = Post(*client_, "/v1/sheets/00000000-0000-4000-8000-000000000000/fork",
                        json::object());
  EXPECT_EQ(r.status, 404) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "NotFound") << r.raw;

  r = Post(*client_, fork, {{"at", 9}});
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "RangeError") << r.raw;
  EXPECT_EQ(r.body["error"]["next_seq"], 9) << r.raw;
  EXPECT_EQ(r.body["error"]["first_seq"], 0) << r.raw;
  EXPECT_NE(r.body["error"]["message"].get<std::string>().find("0, 8"), std::string::npos)
      << r.raw;

  r = Post(*client_, fork, {{"at", -1}});
  EXPECT_EQ(r.status, 400) << r.raw;
  r = Request(*client_, "POST", fork, "{\"at\": ");
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "ValidationError") << r.raw;
  r = Post(*client_, fork, {{"at", "3"}});
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "ValidationError") << r.raw;
  r = Post(*client_, fork, {{"seq", 3}});
  EXPECT_EQ(r.status, 400) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "ValidationError") << r.raw;

  // A fault just before the fork's last write: the transaction takes everything back.
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "log.fork.before_sheet", "error", 1));
  r = Post(*client_, fork, json::object());
  EXPECT_GE(r.status, 500) << r.raw;

  EXPECT_EQ(SheetCount(), sheets);
  EXPECT_EQ(CountInTableStore(dir_.path(), "SELECT COUNT(*) FROM entry"), entries);
  EXPECT_EQ(CountInTableStore(dir_.path(), "SELECT COUNT(*) FROM segment"), segments);

  // In the truncated range: 410 with the first retained seq.
  JsonResponse cut =
      Post(*client_, "/v1/sheets/" + source_ + "/truncate", {{"before_seq", 4}});
  ASSERT_EQ(cut.status, 200) << cut.raw;
  const int64_t entries_after_cut =
      CountInTableStore(dir_.path(), "SELECT COUNT(*) FROM entry");
  r = Post(*client_, fork, {{"at", 2}});
  EXPECT_EQ(r.status, 410) << r.raw;
  EXPECT_EQ(r.body["error"]["code"], "Gone") << r.raw;
  EXPECT_EQ(r.body["error"]["first_seq"], 4) << r.raw;
  EXPECT_EQ(SheetCount(), sheets);
  EXPECT_EQ(CountInTableStore(dir_.path(), "SELECT COUNT(*) FROM entry"),
            entries_after_cut);
  // At the cut itself the fork starts from the truncation's base.
  json at_cut = Fork(source_, {{"at", 4}});
  EXPECT_EQ(at_cut["first_seq"], 4) << at_cut.dump();
  EXPECT_EQ(Rows(at_cut["id"]), Rows(source_, 4));
  ASSERT_NO_FATAL_FAILURE(ExpectVerifyClean());
}

TEST_F(ForkHttpTest, TheCommandLineForksOverHttp) {
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  const std::string server =
      " --server http://127.0.0.1:" + std::to_string(server_->port());
  CommandResult r = RunCommand(std::string(SHEETLOG_BINARY) + " fork " + source_ +
                               " --at 4 --name cli" + server);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  EXPECT_EQ(Sheet(id)["name"], "cli");
  EXPECT_EQ(Sheet(id)["fork_of"], source_);
  EXPECT_EQ(Rows(id), Rows(source_, 4));
  // Refused: the server's message, exit 2, nothing made.
  const int64_t sheets = SheetCount();
  r = RunCommand(std::string(SHEETLOG_BINARY) + " fork " + source_ + " --at 99" + server);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("outside"), std::string::npos) << r.err;
  r = RunCommand(std::string(SHEETLOG_BINARY) + " fork " + source_ + " --at x" + server);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(SheetCount(), sheets);
}

TEST_F(ForkHttpTest, AKillDuringTheForkLeavesNoFork) {
  ASSERT_NO_FATAL_FAILURE(MakeSource());
  const int64_t sheets = SheetCount();
  const int64_t entries = CountInTableStore(dir_.path(), "SELECT COUNT(*) FROM entry");
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "log.fork.before_sheet", "crash", 1));
  (void)Post(*client_, "/v1/sheets/" + source_ + "/fork", json::object());
  ASSERT_TRUE(server_->WaitForExit()) << server_->Log();
  StartServer(ServerOptions(dir_.path(), {"--clock", "manual", "--enable-faults"}));
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(SheetCount(), sheets);
  EXPECT_EQ(CountInTableStore(dir_.path(), "SELECT COUNT(*) FROM entry"), entries);
  // And the same fork afterwards is whole.
  const std::string id = Fork(source_)["id"];
  EXPECT_EQ(Rows(id), Rows(source_));
  ASSERT_NO_FATAL_FAILURE(ExpectVerifyClean());
}

// The background retention of seed 003 on the source: it drops whole segments behind
// a completed snapshot and deletes their snapshots' objects, but not the one a fork
// shares.
class ForkRetentionHttpTest : public ForkHttpTest {
 protected:
  void SetUp() override {
    StartServer(ServerOptions(
        dir_.path(), {"--clock", "manual", "--enable-faults", "--retain-segments", "1",
                      "--retention-period", std::to_string(kDay)}));
  }

  void NewSegment(const std::string& id) {
    JsonResponse r = Post(*client_, "/v1/sheets/" + id + "/segments", json::object());
    ASSERT_EQ(r.status, 201) << r.raw;
  }
};

TEST_F(ForkRetentionHttpTest, RetentionOnTheSourceKeepsTheForksSnapshot) {
  source_ = CreateSheet(*client_, 0);
  // Segment 0: 0 Snapshot, 1 A1, 2 B1, 3 EndSegment; segment 1: 4 Snapshot, 5 A1,
  // 6 EndSegment; segment 2: 7 Snapshot, 8 C1.
  ASSERT_EQ(SetCell(*client_, source_, "A1", 1), 1);
  ASSERT_EQ(SetCell(*client_, source_, "B1", 2), 2);
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, source_, {.advance_clock_s = 6}));
  ASSERT_NO_FATAL_FAILURE(NewSegment(source_));
  ASSERT_EQ(SetCell(*client_, source_, "A1", 10), 5);
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, source_, {.advance_clock_s = 6}));
  ASSERT_NO_FATAL_FAILURE(NewSegment(source_));
  ASSERT_EQ(SetCell(*client_, source_, "C1", 3), 8);
  ASSERT_TRUE(WaitForSnapshots(*server_, *client_, source_, {.advance_clock_s = 6}));

  json fork = Fork(source_, {{"at", 5}});
  const std::string id = fork["id"];
  EXPECT_EQ(fork["first_seq"], 4);
  const std::string shared = RootOf(source_, 4);
  const json cells = Rows(id);
  EXPECT_EQ(cells, Rows(source_, 5));
  // A fork at an EndSegment takes the next segment's Snapshot entry along (same
  // cells): its head is not an EndSegment, so appends find their segment.
  json at_end = Fork(source_, {{"at", 6}});
  EXPECT_EQ(at_end["next_seq"], 8);
  EXPECT_EQ(Rows(at_end["id"]), Rows(source_, 6));
  ASSERT_EQ(SetCell(*client_, at_end["id"], "D1", 4), 8);

  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, kDay));
  ASSERT_TRUE(Eventually([&] { return Sheet(source_)["first_seq"] == 7; }))
      << Sheet(source_).dump(2) << "\nserver log:\n"
      << server_->Log();
  EXPECT_EQ(BlobStatus(shared), 200);
  EXPECT_EQ(Rows(id), cells);
  EXPECT_EQ(Rows(id, 5), cells);
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + id + "/load").status, 200);
  ASSERT_EQ(SetCell(*client_, id, "E1", 5), 6);
  ASSERT_NO_FATAL_FAILURE(ExpectVerifyClean());
}

}  // namespace
}  // namespace sheetlog::testing
