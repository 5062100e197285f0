// EventLog::Fork and the holds forks put on blobs (HeldBlobs, DeletableBlobs), against
// the tables: what a fork copies, where it starts, what it holds, and that a refused
// or failed fork writes nothing.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "emulator/env/faults.h"
#include "src/log/event_log.h"
#include "src/log/sheet_blobs.h"
#include "src/log/tables.h"
#include "src/snapshot/sheet_view.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

class EventLogForkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenTestDatabase(dir_.File("sheetlog.db"), &clock_);
    ASSERT_NE(db_, nullptr);
    log_ = std::make_unique<EventLog>(db_.get(), &clock_, &faults_, EventLog::Options{});
  }

  int64_t Append(const std::string& sheet, const std::string& type = "Note",
                 std::optional<std::string> external = std::nullopt) {
    AppendRequest request;
    request.sheet_id = sheet;
    request.type = type;
    request.body = "{}";
    request.external = std::move(external);
    request.allow_reserved = type == kSnapshotType;
    Result<AppendResult> appended = log_->AddEntry(request, nullptr);
    EXPECT_OK(appended);
    return appended.ok() ? appended->entry.seq : -1;
  }

  // Appends a Snapshot entry and completes it with root "snapshots/<sheet>/root-<seq>".
  int64_t Snapshot(const std::string& sheet) {
    const int64_t seq = Append(sheet, kSnapshotType);
    Result<EntryRecord> entry = log_->GetEntry(sheet, seq, nullptr);
    EXPECT_OK(entry);
    EXPECT_OK(log_->CompleteSnapshot(sheet, entry->segment, entry->num,
                                     RootKey(sheet, seq), nullptr));
    return seq;
  }

  static std::string RootKey(const std::string& sheet, int64_t seq) {
    return "snapshots/" + sheet + "/root-" + std::to_string(seq);
  }

  Result<SheetInfo> Fork(const std::string& source, std::optional<int64_t> at) {
    EventLog::ForkRequest request;
    request.source_id = source;
    request.at = at;
    request.name = "fork";
    request.snapshot_objects = [](const std::string& root) {
      return Result<std::vector<std::string>>(std::vector<std::string>{root + "/chunk"});
    };
    return log_->Fork(request, nullptr);
  }

  std::vector<EntryRecord> Entries(const std::string& sheet, int64_t from) {
    Result<ReadRange> range = log_->Read(sheet, from, std::nullopt, 100000, nullptr);
    EXPECT_OK(range);
    return range.ok() ? range->entries : std::vector<EntryRecord>{};
  }

  int64_t SheetCount() {
    Result<std::vector<SheetInfo>> sheets = log_->ListSheets("", 1000, nullptr);
    EXPECT_OK(sheets);
    return sheets.ok() ? static_cast<int64_t>(sheets->size()) : -1;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  FaultInjector faults_{&clock_};
  std::unique_ptr<Database> db_;
  std::unique_ptr<EventLog> log_;
};

TEST(DeletableBlobsTest, OnlyTheSheetsOwnKeysThatNoForkHolds) {
  const std::set<std::string> held = {"snapshots/a/held", "entries/a/held"};
  EXPECT_EQ(
      DeletableBlobs(
          {"snapshots/a/r1", "snapshots/a/held", "entries/a/held", "entries/a/e1",
           "snapshots/b/r2", "archives/a/s.jsonl", "clientkey", "snapshots/ab/r3"},
          "a", held),
      (std::vector<std::string>{"snapshots/a/r1", "entries/a/e1", "archives/a/s.jsonl"}));
  EXPECT_TRUE(DeletableBlobs({}, "a", held).empty());
}

TEST_F(EventLogForkTest, StartsAtTheNewestCompletedSnapshotAndCopiesWhatFollows) {
  Result<SheetInfo> source = log_->CreateLog("src", 0, 10000, nullptr);
  ASSERT_OK(source);
  const std::string id = source->id;
  Append(id);                                     // 1
  Append(id, "Note", "entries/" + id + "/big");   // 2
  ASSERT_EQ(Snapshot(id), 3);                     // 3
  Append(id, "Note", "entries/" + id + "/big2");  // 4
  Append(id);                                     // 5
  ASSERT_EQ(Append(id, kSnapshotType), 6);        // 6: not completed

  Result<SheetInfo> fork = Fork(id, std::nullopt);
  ASSERT_OK(fork);
  EXPECT_EQ(fork->fork_of, id);
  EXPECT_EQ(fork->first_seq, 3);
  EXPECT_EQ(fork->base_root, RootKey(id, 3));
  EXPECT_EQ(std::set<std::string>(fork->shared_blobs.begin(), fork->shared_blobs.end()),
            (std::set<std::string>{RootKey(id, 3), RootKey(id, 3) + "/chunk",
                                   "entries/" + id + "/big2"}));
  Result<SheetInfo> stored = log_->GetSheet(fork->id, nullptr);
  ASSERT_OK(stored);
  EXPECT_EQ(stored->fork_of, id);
  EXPECT_EQ(stored->shared_blobs, fork->shared_blobs);
  EXPECT_EQ(stored->first_seq, 3);
  EXPECT_EQ(stored->fork_seq, 3);

  std::vector<EntryRecord> copied = Entries(fork->id, 3);
  std::vector<EntryRecord> original = Entries(id, 3);
  ASSERT_EQ(copied.size(), 4u);
  ASSERT_EQ(copied.size(), original.size());
  for (size_t i = 0; i < copied.size(); ++i) {
    EXPECT_EQ(copied[i].seq, original[i].seq);
    EXPECT_EQ(copied[i].num, original[i].num);
    EXPECT_EQ(copied[i].type, original[i].type);
    EXPECT_EQ(copied[i].external, original[i].external);
    EXPECT_EQ(copied[i].snapshot_root, original[i].snapshot_root);
  }
  Result<std::vector<SegmentInfo>> segments = log_->ListSegments(fork->id, nullptr);
  ASSERT_OK(segments);
  ASSERT_EQ(segments->size(), 1u);
  EXPECT_EQ((*segments)[0].last_snapshot, 3);
  Result<int64_t> next = log_->NextSeq(fork->id, nullptr);
  ASSERT_OK(next);
  EXPECT_EQ(*next, 7);

  // Its own future, and the source's is untouched.
  EXPECT_EQ(Append(fork->id), 7);
  EXPECT_EQ(Append(fork->id), 8);
  Result<int64_t> source_next = log_->NextSeq(id, nullptr);
  ASSERT_OK(source_next);
  EXPECT_EQ(*source_next, 7);

  Result<std::set<std::string>> held = log_->HeldBlobs(nullptr);
  ASSERT_OK(held);
  EXPECT_EQ(held->count(RootKey(id, 3)), 1u);
  EXPECT_EQ(held->count("entries/" + id + "/big2"), 1u);
  EXPECT_EQ(held->count("entries/" + id + "/big"), 0u);
}

TEST_F(EventLogForkTest, HistoryBeforeTheForkIsTheSourcesUntilTheForkTruncates) {
  Result<SheetInfo> source = log_->CreateLog("src", 0, 10000, nullptr);
  ASSERT_OK(source);
  const std::string id = source->id;
  Append(id);                  // 1
  Append(id);                  // 2
  ASSERT_EQ(Snapshot(id), 3);  // 3
  Append(id);                  // 4
  Result<SheetInfo> fork = Fork(id, std::nullopt);
  ASSERT_OK(fork);
  ASSERT_EQ(fork->first_seq, 3);
  Append(fork->id);  // 5
  Append(fork->id);  // 6

  // Before first_seq - 1: the source's history, entry for entry.
  Result<SheetHistory> early = ReadSheetHistory(log_.get(), fork->id, 1, nullptr);
  ASSERT_OK(early);
  Result<SheetHistory> in_source = ReadSheetHistory(log_.get(), id, 1, nullptr);
  ASSERT_OK(in_source);
  EXPECT_EQ(early->snapshot_root, in_source->snapshot_root);
  ASSERT_EQ(early->entries.size(), in_source->entries.size());
  for (size_t i = 0; i < early->entries.size(); ++i) {
    EXPECT_EQ(early->entries[i].seq, in_source->entries[i].seq);
  }
  // At first_seq - 1 and after: the fork's own base and entries.
  Result<SheetHistory> at_base = ReadSheetHistory(log_.get(), fork->id, 2, nullptr);
  ASSERT_OK(at_base);
  EXPECT_EQ(at_base->snapshot_seq, 3);
  EXPECT_EQ(at_base->snapshot_root, RootKey(id, 3));
  EXPECT_TRUE(at_base->entries.empty());
  Result<SheetHistory> head = ReadSheetHistory(log_.get(), fork->id, 6, nullptr);
  ASSERT_OK(head);
  EXPECT_EQ(head->entries.size(), 3u);  // 4, 5, 6

  // Once the fork truncates its own log, what lies before is Gone, not the source's.
  ASSERT_OK(log_->TruncateExact(fork->id, 6, "snapshots/" + fork->id + "/base", nullptr,
                                nullptr));
  EXPECT_EQ(ReadSheetHistory(log_.get(), fork->id, 4, nullptr).status().code(),
            StatusCode::kGone);
  EXPECT_EQ(ReadSheetHistory(log_.get(), fork->id, 1, nullptr).status().code(),
            StatusCode::kGone);
}

TEST_F(EventLogForkTest, AForkOfAForkHoldsWhatItsSourceHeld) {
  Result<SheetInfo> source = log_->CreateLog("src", 0, 10000, nullptr);
  ASSERT_OK(source);
  const std::string id = source->id;
  Append(id);
  ASSERT_EQ(Snapshot(id), 2);
  Append(id);
  Result<SheetInfo> first = Fork(id, std::nullopt);
  ASSERT_OK(first);
  Append(first->id);                  // 4
  ASSERT_EQ(Snapshot(first->id), 5);  // 5
  Append(first->id);                  // 6
  Result<SheetInfo> second = Fork(first->id, 6);
  ASSERT_OK(second);
  EXPECT_EQ(second->first_seq, 5);
  EXPECT_EQ(second->fork_of, first->id);
  std::set<std::string> shared(second->shared_blobs.begin(), second->shared_blobs.end());
  EXPECT_EQ(shared.count(RootKey(first->id, 5)), 1u);
  EXPECT_EQ(shared.count(RootKey(id, 2)), 1u);  // the first fork's hold, carried on
}

TEST_F(EventLogForkTest, RefusedForksWriteNothing) {
  Result<SheetInfo> source = log_->CreateLog("src", 0, 10000, nullptr);
  ASSERT_OK(source);
  const std::string id = source->id;
  for (int i = 0; i < 5; ++i) Append(id);  // 1..5
  const int64_t sheets = SheetCount();

  EXPECT_TRUE(
      Fork("00000000-0000-4000-8000-000000000000", std::nullopt).status().IsNotFound());
  EXPECT_EQ(Fork(id, 6).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(Fork(id, -1).status().code(), StatusCode::kOutOfRange);
  faults_.Arm(FaultPoint::kLogForkBeforeSheet, {});
  EXPECT_FALSE(Fork(id, std::nullopt).ok());
  EXPECT_EQ(SheetCount(), sheets);

  // A truncated range is Gone; at the cut the fork starts from the truncation's base.
  ASSERT_OK(log_->TruncateExact(id, 3, "snapshots/" + id + "/base", nullptr, nullptr));
  EXPECT_EQ(Fork(id, 2).status().code(), StatusCode::kGone);
  EXPECT_EQ(SheetCount(), sheets);
  Result<SheetInfo> at_cut = Fork(id, 3);
  ASSERT_OK(at_cut);
  EXPECT_EQ(at_cut->first_seq, 3);
  EXPECT_EQ(at_cut->base_root, "snapshots/" + id + "/base");
  EXPECT_EQ(Entries(at_cut->id, 3).size(), 1u);
}

TEST_F(EventLogForkTest, AtAnEndSegmentTheNextSegmentsSnapshotEntryComesAlong) {
  Result<SheetInfo> source = log_->CreateLog("src", 0, 10000, nullptr);
  ASSERT_OK(source);
  const std::string id = source->id;
  Append(id);                                      // 1
  ASSERT_EQ(Snapshot(id), 2);                      // 2
  ASSERT_OK(log_->CreateNewSegment(id, nullptr));  // 3 EndSegment, 4 Snapshot
  Append(id);                                      // 5
  Result<EntryRecord> end = log_->GetEntry(id, 3, nullptr);
  ASSERT_OK(end);
  ASSERT_EQ(end->type, kEndSegmentType);

  Result<SheetInfo> fork = Fork(id, 3);
  ASSERT_OK(fork);
  EXPECT_EQ(fork->first_seq, 2);
  Result<int64_t> next = log_->NextSeq(fork->id, nullptr);
  ASSERT_OK(next);
  EXPECT_EQ(*next, 5);
  EXPECT_EQ(Append(fork->id), 5);
  Result<std::vector<SegmentInfo>> segments = log_->ListSegments(fork->id, nullptr);
  ASSERT_OK(segments);
  ASSERT_EQ(segments->size(), 2u);
  EXPECT_EQ((*segments)[1].first_seq, 4);
}

}  // namespace
}  // namespace sheetlog
