// SheetPurger and RecordSheetDeletion (src/log/sheet_deletion.h) on a real database and
// directory store with a manual clock.
#include "src/log/sheet_deletion.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/env/faults.h"
#include "emulator/sqlite/database.h"
#include "src/log/sheet_blobs.h"
#include "tests/support/blob_fixture.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

constexpr char kDeleted[] = "3f0c1f5e-1111-4222-8333-444455556666";
constexpr char kLive[] = "3f0c1f5e-aaaa-4bbb-8ccc-ddddeeeeffff";

class SheetDeletionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenTestDatabase(dir_.File("sheetlog.db"), /*clock=*/nullptr);
    ASSERT_NE(db_, nullptr);
    blobs_ = testing::OpenTestBlobStore(dir_.File("blobs"), &clock_);
    ASSERT_NE(blobs_, nullptr);
  }

  void PutEverywhere(const std::string& sheet, const std::string& name) {
    for (const std::string& prefix : SheetBlobPrefixes(sheet)) {
      ASSERT_OK(blobs_->Put(prefix + name, "x"));
    }
  }

  std::vector<std::string> Objects(const std::string& sheet) {
    std::vector<std::string> keys;
    for (const std::string& prefix : SheetBlobPrefixes(sheet)) {
      BlobListOptions list;
      list.prefix = prefix;
      Result<BlobListResult> page = blobs_->List(list);
      EXPECT_OK(page);
      for (const BlobInfo& info : page->keys) keys.push_back(info.key);
    }
    return keys;
  }

  int64_t Count(const std::string& sql) {
    int64_t n = -1;
    EXPECT_TRUE(db_->Read([&](SqliteConnection& c) {
                     ASSIGN_OR_RETURN(Statement s, c.Prepare(sql));
                     ASSIGN_OR_RETURN(bool row, s.Step());
                     n = row ? s.ColumnInt(0) : -1;
                     return Status::OK();
                   })
                    .ok());
    return n;
  }

  void AddUpload(const std::string& id, const std::string& sheet) {
    ASSERT_TRUE(
        db_->Write([&](SqliteConnection& c) {
             ASSIGN_OR_RETURN(
                 Statement s,
                 c.Prepare("INSERT INTO upload (upload_id, sheet_id, blob_key, kind, "
                           "type, version, created, expires) VALUES "
                           "(?, ?, ?, 'client', 'Attachment', 1, 0, 0)"));
             return s.Bind(1, id).Bind(2, sheet).Bind(3, "uploads/" + id).Run();
           })
            .ok());
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<BlobStore> blobs_;
};

TEST_F(SheetDeletionTest, PurgeDeletesEveryObjectOfTheSheetOnlyAndKeepsTheTombstone) {
  AddUpload("u1", kDeleted);
  AddUpload("u2", kLive);
  ASSERT_TRUE(db_->Write([&](Connection& c) {
                   return RecordSheetDeletion(c, kDeleted, clock_.NowSeconds());
                 })
                  .ok());
  // The upload rows go with the purge (a scan outside the deleting transaction).
  EXPECT_EQ(Count("SELECT COUNT(*) FROM upload"), 2);

  for (int i = 0; i < 30; ++i) PutEverywhere(kDeleted, "o" + std::to_string(i));
  PutEverywhere(kLive, "keep");
  SheetPurger purger(db_.get(), blobs_.get(), &clock_, nullptr, /*grace_seconds=*/600);
  PurgeReport report;
  ASSERT_OK(purger.Purge(kDeleted, &report));
  EXPECT_EQ(Count("SELECT COUNT(*) FROM upload WHERE sheet_id = '" +
                  std::string(kDeleted) + "'"),
            0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM upload"), 1);
  EXPECT_EQ(report.objects_deleted, 120);
  EXPECT_TRUE(Objects(kDeleted).empty());
  EXPECT_EQ(Objects(kLive).size(), 4u);
  // Within the grace period the tombstone stays, for writes still under way.
  EXPECT_EQ(report.tombstones_dropped, 0);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM sheet_deletion"), 1);
}

TEST_F(SheetDeletionTest, LateObjectsAreTakenByALaterPurgeUntilTheGracePeriodEnds) {
  ASSERT_TRUE(db_->Write([&](Connection& c) {
                   return RecordSheetDeletion(c, kDeleted, clock_.NowSeconds());
                 })
                  .ok());
  SheetPurger purger(db_.get(), blobs_.get(), &clock_, nullptr, /*grace_seconds=*/600);
  ASSERT_OK(purger.PurgeAll());
  // A snapshot build that was running writes after the first purge.
  PutEverywhere(kDeleted, "late");
  clock_.AdvanceSeconds(60);
  Result<PurgeReport> again = purger.PurgeAll();
  ASSERT_OK(again);
  EXPECT_EQ(again->objects_deleted, 4);
  EXPECT_TRUE(Objects(kDeleted).empty());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM sheet_deletion"), 1);

  clock_.AdvanceSeconds(600);
  Result<PurgeReport> last = purger.PurgeAll();
  ASSERT_OK(last);
  EXPECT_EQ(last->tombstones_dropped, 1);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM sheet_deletion"), 0);
}

TEST_F(SheetDeletionTest, AFailedPurgeLeavesTheTombstoneForTheNextRun) {
  ASSERT_TRUE(db_->Write([&](Connection& c) {
                   return RecordSheetDeletion(c, kDeleted, clock_.NowSeconds());
                 })
                  .ok());
  PutEverywhere(kDeleted, "a");
  PutEverywhere(kDeleted, "b");
  FaultInjector faults(&clock_);
  SheetPurger purger(db_.get(), blobs_.get(), &clock_, &faults, /*grace_seconds=*/0);
  faults.Arm(FaultPoint::kSheetPurgeAfterObject, FaultSpec{});
  EXPECT_FALSE(purger.PurgeAll().ok());
  EXPECT_EQ(Objects(kDeleted).size(), 7u);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM sheet_deletion"), 1);
  ASSERT_OK(purger.PurgeAll());
  EXPECT_TRUE(Objects(kDeleted).empty());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM sheet_deletion"), 0);
}

}  // namespace
}  // namespace sheetlog
