// The SnapshotWorker's builds over src/snapshot's streaming builder, and the step they
// share with GET .../cells: log entries -> sheet edits (external bodies read from the
// blob store).
#pragma once

#include <vector>

#include "emulator/blob/blob_store.h"
#include "src/log/event_log.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/snapshot_builder.h"
#include "src/snapshot/worker.h"

namespace sheetlog {

// The edits of `entries` in order. Snapshot/EndSegment and unknown types become
// SkippedEdit. An entry whose body does not parse is an Internal error: bodies were
// validated at append time, so it means the log was damaged.
Result<std::vector<SheetEdit>> EditsOfEntries(const std::vector<EntryRecord>& entries,
                                              BlobStore* blobs);

// Builds write to `blobs` with `options` (tests shrink the chunk size to make a small
// sheet span many chunks and invocations).
SnapshotBuildFactory MakeSnapshotBuildFactory(BlobStore* blobs,
                                              SnapshotBuilder::Options options = {});

}  // namespace sheetlog
