// The SnapshotWorker's builds (worker.h's SnapshotBuildFactory) over src/snapshot's
// streaming builder: each job's sheet planned by PlanSheet (sheet_plan.h), built by a
// SnapshotBuilder and resumed from the job's checkpoint.
#pragma once

#include "emulator/blob/blob_store.h"
#include "src/snapshot/snapshot_builder.h"
#include "src/snapshot/worker.h"

namespace sheetlog {

// Builds write to `blobs` with `options` (tests shrink the chunk size to make a small
// sheet span many chunks and invocations).
SnapshotBuildFactory MakeSnapshotBuildFactory(BlobStore* blobs,
                                              SnapshotBuilder::Options options = {});

}  // namespace sheetlog
