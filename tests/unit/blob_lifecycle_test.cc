// The lifecycle sweep (BlobStore::Sweep) and its worker (LifecycleSweeper), driven by a
// ManualClock: seed 000's discardable upload with auto-delete=true, the untag side
// effect, and the keep predicate that vetoes deleting a referenced blob.
#include "emulator/blob/blob_lifecycle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "tests/support/blob_fixture.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

constexpr int64_t kDay = 24LL * 3600 * 1000000;
const BlobTags kAutoDelete = {{"auto-delete", "true"}};

// One source for both stores (blob_fixture.h).
class BlobLifecycleTest : public testing::BlobStoreKindTest {
 protected:
  void SetUp() override {
    store_ = OpenStore();
    ASSERT_NE(store_, nullptr);
  }

  void Put(const std::string& key, const BlobTags& tags) {
    ASSERT_OK(store_->Put(key, "body of " + key, {"", tags})) << key;
  }
  bool Exists(const std::string& key) { return store_->Head(key).ok(); }

  std::unique_ptr<BlobStore> store_;
};
using DirectoryBlobLifecycleTest = BlobLifecycleTest;

TEST_P(BlobLifecycleTest, DeletesOnlyOldTaggedUnvetoedObjects) {
  Put("uploads/orphan", kAutoDelete);
  Put("uploads/referenced", kAutoDelete);  // completed, untag not yet run
  Put("uploads/untagged", {});
  Put("uploads/other-value", {{"auto-delete", "false"}});
  clock_.Advance(2 * kDay);
  Put("uploads/young", kAutoDelete);
  clock_.Advance(kDay + 1);  // the first four are now 3 days + 1 us old

  std::vector<std::string> asked;
  auto keep = [&](const std::string& key) {
    asked.push_back(key);
    return key == "uploads/referenced";
  };
  auto report = store_->Sweep(LifecycleRule{}, keep);
  ASSERT_OK(report);
  // Directory: every object. S3: the table store's rows, one per object that has or had
  // tags (uploads/untagged never had any), never the bucket (s3_blob_store.h).
  EXPECT_EQ(report->examined, IsS3() ? 4 : 5);
  EXPECT_EQ(report->matched, 3);
  EXPECT_EQ(report->too_young, 1);
  EXPECT_EQ(report->kept_by_predicate, 1);
  EXPECT_EQ(report->deleted, 1);
  EXPECT_EQ(report->deleted_bytes, int64_t(std::string("body of uploads/orphan").size()));
  EXPECT_EQ(report->deleted_keys, (std::vector<std::string>{"uploads/orphan"}));
  // The predicate is asked only about objects the rule would delete.
  EXPECT_EQ(asked, (std::vector<std::string>{"uploads/orphan", "uploads/referenced"}));

  EXPECT_FALSE(Exists("uploads/orphan"));
  EXPECT_TRUE(Exists("uploads/referenced"));
  EXPECT_TRUE(Exists("uploads/untagged"));
  EXPECT_TRUE(Exists("uploads/other-value"));
  EXPECT_TRUE(Exists("uploads/young"));
  EXPECT_EQ(store_->Stats().objects, 4);
}

TEST_P(BlobLifecycleTest, AgeBoundaryIsStrictlyOlderThan) {
  Put("k", kAutoDelete);
  clock_.Advance(3 * kDay);
  EXPECT_EQ(store_->Sweep(LifecycleRule{}, {}).value().deleted, 0);
  EXPECT_TRUE(Exists("k"));
  clock_.Advance(1);
  EXPECT_EQ(store_->Sweep(LifecycleRule{}, {}).value().deleted, 1);
  EXPECT_FALSE(Exists("k"));
}

TEST_P(BlobLifecycleTest, SeedFlowUntagSavesTheUpload) {
  // 1. discardable write, 2. linchpin write (elsewhere), 3. untag side effect.
  Put("uploads/s1/e7", kAutoDelete);
  ASSERT_OK(store_->DeleteTags("uploads/s1/e7"));
  Put("uploads/s1/e8", kAutoDelete);  // never completed
  clock_.Advance(30 * kDay);
  auto report = store_->Sweep(LifecycleRule{}, {});
  ASSERT_OK(report);
  EXPECT_EQ(report->deleted_keys, (std::vector<std::string>{"uploads/s1/e8"}));
  EXPECT_TRUE(Exists("uploads/s1/e7"));
}

TEST_P(BlobLifecycleTest, UntagOrOverwriteRacingTheSweepWins) {
  Put("race/untagged", kAutoDelete);
  Put("race/overwritten", kAutoDelete);
  Put("race/deleted", kAutoDelete);
  clock_.Advance(4 * kDay);
  // The predicate runs between the sweep's check and its delete: what it does there is
  // what a concurrent side effect could do at that moment.
  auto keep = [&](const std::string& key) {
    if (key == "race/untagged") {
      EXPECT_OK(store_->DeleteTags(key));
    }
    if (key == "race/overwritten") {
      EXPECT_OK(store_->Put(key, "new", {"", kAutoDelete}));
    }
    if (key == "race/deleted") {
      EXPECT_OK(store_->Delete(key));
    }
    return false;
  };
  auto report = store_->Sweep(LifecycleRule{}, keep);
  ASSERT_OK(report);
  EXPECT_EQ(report->deleted, 0);
  EXPECT_EQ(report->changed, 3);
  EXPECT_TRUE(Exists("race/untagged"));
  EXPECT_EQ(store_->Get("race/overwritten").value(), "new");
}

TEST_P(BlobLifecycleTest, CustomRuleAndValidation) {
  Put("tmp/a", {{"expire", "soon"}});
  Put("tmp/b", kAutoDelete);
  clock_.Advance(61 * 1000000);
  LifecycleRule rule{"expire", "soon", 60 * 1000000};
  auto report = store_->Sweep(rule, {});
  ASSERT_OK(report);
  EXPECT_EQ(report->deleted_keys, (std::vector<std::string>{"tmp/a"}));
  EXPECT_TRUE(Exists("tmp/b"));
  EXPECT_EQ(store_->Sweep(LifecycleRule{"", "x", 0}, {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Sweep(LifecycleRule{"k", "v", -1}, {}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(DirectoryBlobLifecycleTest, UnreadableMetadataIsNeverSwept) {
  Put("damaged", kAutoDelete);
  clock_.Advance(10 * kDay);
  {
    std::ofstream meta(dir_.File("blobs/objects/damaged/\\meta"), std::ios::trunc);
    meta << "not json";
  }
  auto report = store_->Sweep(LifecycleRule{}, {});
  ASSERT_OK(report);
  EXPECT_EQ(report->unreadable, 1);
  EXPECT_EQ(report->deleted, 0);
  EXPECT_TRUE(std::filesystem::exists(dir_.File("blobs/objects/damaged/\\meta")));
}

TEST_P(DirectoryBlobLifecycleTest, SweepRemovesDebrisOfFailedPuts) {
  Put("doc", {});
  faults_.Arm(FaultPoint::kBlobPutAfterBody, FaultSpec{});
  EXPECT_FALSE(store_->Put("doc", "uncommitted").ok());
  faults_.Arm(FaultPoint::kBlobPutAfterBody, FaultSpec{});
  EXPECT_FALSE(store_->Put("never/committed", "x").ok());
  auto report = store_->Sweep(LifecycleRule{}, {});
  ASSERT_OK(report);
  EXPECT_EQ(report->debris_removed, 2);
  EXPECT_EQ(report->deleted, 0);
  EXPECT_EQ(store_->Get("doc").value(), "body of doc");
  EXPECT_FALSE(std::filesystem::exists(dir_.File("blobs/objects/never")));
}

TEST_P(BlobLifecycleTest, SweepFaultSkipsDeletionAndCountsIt) {
  Put("k", kAutoDelete);
  clock_.Advance(4 * kDay);
  faults_.Arm(FaultPoint::kBlobSweepDelete, FaultSpec{});
  auto report = store_->Sweep(LifecycleRule{}, {});
  ASSERT_OK(report);
  EXPECT_EQ(report->errors, 1);
  EXPECT_NE(report->first_error.find("blob.sweep.delete"), std::string::npos);
  EXPECT_TRUE(Exists("k"));
  EXPECT_EQ(store_->Sweep(LifecycleRule{}, {}).value().deleted, 1);  // next time
}

TEST_P(BlobLifecycleTest, CancelFlagStopsTheSweep) {
  for (int i = 0; i < 5; ++i) Put("k" + std::to_string(i), kAutoDelete);
  clock_.Advance(4 * kDay);
  std::atomic<bool> cancel{false};
  auto keep = [&](const std::string&) {
    cancel = true;  // cancel once the first object is being looked at
    return false;
  };
  auto report = store_->Sweep(LifecycleRule{}, keep, &cancel);
  ASSERT_OK(report);
  EXPECT_TRUE(report->cancelled);
  EXPECT_EQ(report->deleted, 1);  // the object in progress completes, no more
  EXPECT_EQ(store_->Stats().objects, 4);
}

TEST_P(BlobLifecycleTest, WorkerSweepsAtStartAndEveryPeriodOfTheClock) {
  Put("orphan", kAutoDelete);
  Put("referenced", kAutoDelete);
  LifecycleSweeperOptions options;  // auto-delete=true, 3 days, every hour
  LifecycleSweeper sweeper(store_.get(), &clock_, options,
                           [](const std::string& key) { return key == "referenced"; });
  ASSERT_OK(sweeper.Start());
  ASSERT_OK(sweeper.Start());  // idempotent
  ASSERT_TRUE(sweeper.WaitForSweeps(1, 10000));
  EXPECT_EQ(sweeper.counters().deleted, 0);  // too young at start
  EXPECT_TRUE(Exists("orphan"));

  clock_.Advance(3 * kDay + 3600LL * 1000000);  // old enough, and a period has passed
  ASSERT_TRUE(sweeper.WaitForSweeps(2, 10000));
  sweeper.Stop();
  LifecycleSweeperCounters counters = sweeper.counters();
  EXPECT_EQ(counters.deleted, 1);
  EXPECT_GE(counters.kept_by_predicate, 1);
  EXPECT_EQ(counters.failed_sweeps, 0);
  EXPECT_EQ(counters.last_sweep_micros, clock_.NowMicros());
  EXPECT_FALSE(Exists("orphan"));
  EXPECT_TRUE(Exists("referenced"));

  // No sweep runs while stopped, however much time passes; RunNow still works.
  int64_t sweeps = counters.sweeps;
  Put("later", kAutoDelete);
  clock_.Advance(10 * kDay);
  EXPECT_FALSE(sweeper.WaitForSweeps(sweeps + 1, 50));
  auto report = sweeper.RunNow();
  ASSERT_OK(report);
  EXPECT_EQ(report->deleted_keys, (std::vector<std::string>{"later"}));
  EXPECT_EQ(sweeper.counters().sweeps, sweeps + 1);
  EXPECT_EQ(sweeper.counters().deleted, 2);
  sweeper.Stop();  // idempotent
}

TEST_P(BlobLifecycleTest, WorkerWithoutStartSweepWaitsOnePeriod) {
  Put("orphan", kAutoDelete);
  clock_.Advance(4 * kDay);
  LifecycleSweeperOptions options;
  options.sweep_at_start = false;
  options.period_micros = 600LL * 1000000;
  LifecycleSweeper sweeper(store_.get(), &clock_, options);
  ASSERT_OK(sweeper.Start());
  EXPECT_FALSE(sweeper.WaitForSweeps(1, 50));  // the clock has not moved
  EXPECT_TRUE(Exists("orphan"));
  clock_.Advance(600LL * 1000000);
  ASSERT_TRUE(sweeper.WaitForSweeps(1, 10000));
  EXPECT_FALSE(Exists("orphan"));
}

TEST_P(BlobLifecycleTest, StartRejectsBadOptions) {
  LifecycleSweeperOptions options;
  options.period_micros = 0;
  LifecycleSweeper sweeper(store_.get(), &clock_, options);
  EXPECT_EQ(sweeper.Start().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Directory, BlobLifecycleTest,
                         ::testing::Values(testing::BlobStoreKind::kDirectory));
INSTANTIATE_TEST_SUITE_P(S3, BlobLifecycleTest,
                         ::testing::Values(testing::BlobStoreKind::kS3));
INSTANTIATE_TEST_SUITE_P(Directory, DirectoryBlobLifecycleTest,
                         ::testing::Values(testing::BlobStoreKind::kDirectory));

}  // namespace
}  // namespace sheetlog
