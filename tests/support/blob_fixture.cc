#include "tests/support/blob_fixture.h"

#include <gtest/gtest.h>

#include "emulator/blob/directory_blob_store.h"

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

}  // namespace sheetlog::testing
