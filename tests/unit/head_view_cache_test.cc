// HeadViewCache: a loaded sheet carried forward over new entries reads exactly what a
// view opened from the snapshot reads, a read with nothing new touches no entries, and
// memory stays bounded (sheets evicted, views reopened past their entry budget).
#include "src/snapshot/head_view_cache.h"

#include <gtest/gtest.h>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "src/log/tables.h"
#include "src/sheet/a1.h"
#include "src/snapshot/sheet_plan.h"
#include "tests/support/blob_fixture.h"
#include "tests/support/random_edits.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

class HeadViewCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenTestDatabase(dir_.File("sheetlog.db"), &clock_);
    ASSERT_NE(db_, nullptr);
    log_ = std::make_unique<EventLog>(db_.get(), &clock_, &faults_, EventLog::Options{});
    blobs_ = testing::OpenTestBlobStore(dir_.File("blobs"), &clock_);
  }

  std::string NewSheet() {
    auto sheet = log_->CreateLog("test", 0, 100000, nullptr);
    EXPECT_OK(sheet);
    return sheet.ok() ? sheet->id : "";
  }

  void AppendRandomEdits(const std::string& sheet, int count) {
    for (int i = 0; i < count; ++i) {
      SheetEdit edit = testing::RandomSmallEdit(rnd_, 30, 8);
      if (std::holds_alternative<ImportEdit>(edit)) continue;  // needs an upload
      if (auto* skipped = std::get_if<SkippedEdit>(&edit)) skipped->type = "Comment";
      AppendRequest request;
      request.sheet_id = sheet;
      request.type = std::string(EditTypeName(edit));
      request.body = EncodeEditBody(edit).dump();
      auto appended = log_->AddEntry(request, nullptr, nullptr);
      ASSERT_OK(appended);
    }
  }

  std::vector<PlacedCell> Read(const SheetView& view) {
    auto cells = view.Cells(*ParseRange("A1:J40"));
    EXPECT_OK(cells);
    return cells.ok() ? *cells : std::vector<PlacedCell>{};
  }

  // What a fresh view at the head reads: the reference the cache must match.
  std::vector<PlacedCell> ReadFresh(const std::string& sheet) {
    auto view = SheetView::Open(log_.get(), blobs_.get(), sheet, std::nullopt, nullptr);
    EXPECT_OK(view);
    return view.ok() ? Read(**view) : std::vector<PlacedCell>{};
  }

  std::shared_ptr<const SheetView> AtHead(HeadViewCache& cache,
                                          const std::string& sheet) {
    auto view = cache.AtHead(sheet, nullptr);
    EXPECT_OK(view);
    return view.ok() ? *view : nullptr;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  FaultInjector faults_{&clock_};
  testing::Random rnd_{20261123};
  std::unique_ptr<Database> db_;
  std::unique_ptr<EventLog> log_;
  std::unique_ptr<BlobStore> blobs_;
};

TEST_F(HeadViewCacheTest, CarriedForwardViewReadsWhatAFreshViewReads) {
  HeadViewCache cache(log_.get(), blobs_.get(), {});
  const std::string sheet = NewSheet();
  for (int round = 0; round < 40; ++round) {
    AppendRandomEdits(sheet, static_cast<int>(rnd_.In(0, 12)));
    std::shared_ptr<const SheetView> view = AtHead(cache, sheet);
    ASSERT_NE(view, nullptr);
    auto next_seq = log_->NextSeq(sheet, nullptr);
    ASSERT_OK(next_seq);
    EXPECT_EQ(view->at_seq(), *next_seq - 1);
    ASSERT_EQ(Read(*view), ReadFresh(sheet)) << "round " << round;
  }
  HeadViewCache::Counters counters = cache.counters();
  EXPECT_EQ(counters.opened, 1) << "only the first read opens the sheet";
  EXPECT_GT(counters.extended, 20);
  EXPECT_GT(counters.hits, 0) << "rounds with no new entry";
}

TEST_F(HeadViewCacheTest, ReadWithNothingNewSharesTheLoadedView) {
  HeadViewCache cache(log_.get(), blobs_.get(), {});
  const std::string sheet = NewSheet();
  AppendRandomEdits(sheet, 50);
  std::shared_ptr<const SheetView> first = AtHead(cache, sheet);
  std::shared_ptr<const SheetView> second = AtHead(cache, sheet);
  EXPECT_EQ(first.get(), second.get());
  // An older view stays valid for a reader still holding it.
  AppendRandomEdits(sheet, 5);
  std::shared_ptr<const SheetView> third = AtHead(cache, sheet);
  EXPECT_NE(third.get(), first.get());
  EXPECT_LT(first->at_seq(), third->at_seq());
  EXPECT_EQ(cache.counters().hits, 1);
}

TEST_F(HeadViewCacheTest, BoundedBySheetsAndByEntriesOverTheSnapshot) {
  HeadViewCache::Options options;
  options.max_sheets = 2;
  options.max_entries_applied = 30;
  HeadViewCache cache(log_.get(), blobs_.get(), options);
  const std::string a = NewSheet(), b = NewSheet(), c = NewSheet();
  for (const std::string& sheet : {a, b, c}) {
    AppendRandomEdits(sheet, 3);
    ASSERT_NE(AtHead(cache, sheet), nullptr);
  }
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.counters().evicted, 1);

  // Past its entry budget a view is reopened rather than carried further.
  AppendRandomEdits(c, 40);
  std::shared_ptr<const SheetView> view = AtHead(cache, c);
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(cache.counters().opened, 4);
  EXPECT_EQ(Read(*view), ReadFresh(c));
}

// What a reader does when its read of the loaded view finds a snapshot chunk gone
// (the integration test InfinisheetHttpTest.HeadReadsAfterACutThatReleasedTheirSnapshot
// makes that happen): the view is opened afresh at the head, not carried forward, and
// kept for the reads after it.
TEST_F(HeadViewCacheTest, ReopenOpensTheViewAfreshAtTheHeadAndKeepsIt) {
  HeadViewCache cache(log_.get(), blobs_.get(), {});
  const std::string sheet = NewSheet();
  AppendRandomEdits(sheet, 20);
  std::shared_ptr<const SheetView> loaded = AtHead(cache, sheet);
  ASSERT_NE(loaded, nullptr);
  AppendRandomEdits(sheet, 5);
  auto reopened = cache.Reopen(sheet, nullptr);
  ASSERT_OK(reopened);
  EXPECT_NE(reopened->get(), loaded.get());
  auto next_seq = log_->NextSeq(sheet, nullptr);
  ASSERT_OK(next_seq);
  EXPECT_EQ((*reopened)->at_seq(), *next_seq - 1);
  EXPECT_EQ(Read(**reopened), ReadFresh(sheet));
  HeadViewCache::Counters counters = cache.counters();
  EXPECT_EQ(counters.reopened, 1);
  EXPECT_EQ(counters.opened, 2);
  EXPECT_EQ(counters.extended, 0) << "not carried forward from the loaded view";
  EXPECT_EQ(AtHead(cache, sheet).get(), reopened->get());
  EXPECT_TRUE(cache.Reopen("00000000-0000-0000-0000-000000000000", nullptr)
                  .status()
                  .IsNotFound());
}

TEST_F(HeadViewCacheTest, DeletedSheetIsNotFoundAndForgotten) {
  HeadViewCache cache(log_.get(), blobs_.get(), {});
  const std::string sheet = NewSheet();
  ASSERT_NE(AtHead(cache, sheet), nullptr);
  ASSERT_EQ(cache.size(), 1u);
  ASSERT_OK(log_->DeleteSheet(sheet, nullptr));
  auto gone = cache.AtHead(sheet, nullptr);
  EXPECT_TRUE(gone.status().IsNotFound()) << gone.status().ToString();
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace sheetlog
