// Test helpers shared by the tests that need a real blob store and small snapshots.
#pragma once

#include <memory>
#include <string>

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "src/snapshot/snapshot_layout.h"

namespace sheetlog::testing {

// A blob store in directory `root` without fsync (tests need the behaviour, not the
// durability). Reports a failure to open as a test failure and returns null.
std::unique_ptr<BlobStore> OpenTestBlobStore(const std::string& root, Clock* clock);

// 1 KiB chunks, 200-byte tiles, 8-row stripes: a few hundred cells span many chunks.
SnapshotLayout SmallSnapshotLayout();

}  // namespace sheetlog::testing
