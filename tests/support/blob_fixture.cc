#include "tests/support/blob_fixture.h"

#include <gtest/gtest.h>

#include "emulator/blob/directory_blob_store.h"
#include "emulator/blob/s3_blob_store.h"
#include "tests/support/s3_test_server.h"
#include "tests/support/test_database.h"

namespace sheetlog::testing {

std::unique_ptr<BlobStore> OpenTestBlobStore(const std::string& root, Clock* clock) {
  BlobStoreOptions options;
  options.root = root;
  options.sync = false;
  auto store = DirectoryBlobStore::Open(options, clock);
  if (!store.ok()) {
    ADD_FAILURE() << "opening the blob store at " << root << ": "
                  << store.status().ToString();
    return nullptr;
  }
  return std::move(store).value();
}

SnapshotLayout SmallSnapshotLayout() {
  SnapshotLayout layout;
  layout.chunk_bytes = 1024;
  layout.tile_bytes = 200;
  layout.stripe_rows = 8;
  return layout;
}

std::unique_ptr<BlobStore> BlobStoreKindTest::OpenStore(int64_t max_object_bytes) {
  if (IsDirectory()) {
    BlobStoreOptions options;
    options.root = Root();
    options.sync = false;
    options.max_object_bytes = max_object_bytes;
    auto store = DirectoryBlobStore::Open(options, &clock_, &faults_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  if (tables_ == nullptr) {
    tables_ = OpenTestDatabase(dir_.File("tables.db"), &clock_);
    const ::testing::TestInfo* test =
        ::testing::UnitTest::GetInstance()->current_test_info();
    location_ = NewS3TestBucket(test == nullptr ? "blob-test" : test->name());
    location_.part_bytes = 5 << 20;  // S3's smallest part: multipart at small sizes
  }
  if (tables_ == nullptr || location_.endpoint.empty()) return nullptr;
  S3BlobStoreOptions options;
  options.location = location_;
  options.max_object_bytes = max_object_bytes;
  auto store = S3BlobStore::Open(options, tables_.get(), &clock_, &faults_);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

}  // namespace sheetlog::testing
