// Test helpers shared by the tests that need a real blob store and small snapshots.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>

#include "emulator/blob/blob_store.h"
#include "emulator/blob/s3_client.h"
#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/sqlite/database.h"
#include "src/snapshot/snapshot_layout.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {

// A blob store in directory `root` without fsync (tests need the behaviour, not the
// durability). Reports a failure to open as a test failure and returns null.
std::unique_ptr<BlobStore> OpenTestBlobStore(const std::string& root, Clock* clock);

// 1 KiB chunks, 200-byte tiles, 8-row stripes: a few hundred cells span many chunks.
SnapshotLayout SmallSnapshotLayout();

// The blob store conformance tests run one source against both implementations:
// TEST_P cases of a fixture derived from BlobStoreKindTest, instantiated as
//   INSTANTIATE_TEST_SUITE_P(Directory, Fixture,
//                            ::testing::Values(BlobStoreKind::kDirectory));
//   INSTANTIATE_TEST_SUITE_P(S3, Fixture, ::testing::Values(BlobStoreKind::kS3));
// (ctest gives S3* cases the shared test S3 server: CMakeLists.txt).
enum class BlobStoreKind { kDirectory, kS3 };
// Names the store where gtest prints a parameter (case names end "/directory", "/s3").
inline void PrintTo(BlobStoreKind kind, std::ostream* os) {
  *os << (kind == BlobStoreKind::kDirectory ? "directory" : "s3");
}

class BlobStoreKindTest : public ::testing::TestWithParam<BlobStoreKind> {
 protected:
  // A store of the case's kind on the manual clock and fault injector below: the
  // directory store under Root() without fsync, or an S3 store on a bucket of its own
  // (made on the first open) with its blob_mirror table in a test database. Opening
  // again (after resetting the last one) reopens the same directory or bucket and
  // database, as a restarted server would.
  std::unique_ptr<BlobStore> OpenStore(int64_t max_object_bytes = 64 << 20);
  bool IsS3() const { return GetParam() == BlobStoreKind::kS3; }
  bool IsDirectory() const { return GetParam() == BlobStoreKind::kDirectory; }
  // The directory store's root.
  std::string Root() const { return dir_.File("blobs"); }
  // The S3 store's bucket (valid after the first OpenStore).
  const S3Location& location() const { return location_; }

  TempDir dir_;
  ManualClock clock_;
  FaultInjector faults_{&clock_};

 private:
  std::unique_ptr<Database> tables_;
  S3Location location_;
};

}  // namespace sheetlog::testing
