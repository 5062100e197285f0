// From log entries to what a snapshot build or a read of the sheet streams: the edits
// of entries (external bodies read from the blob store, Import payloads read and
// parsed into cells), and a sheet planned as a base plus the delta of the edits after
// it. Shared by the SnapshotWorker's builds (build_factory.h), GET .../cells
// (sheet_view.h) and the operator tools (verify, rebuild, replay).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/status.h"
#include "src/log/event_log.h"
#include "src/sheet/cell_cursor.h"
#include "src/sheet/delta.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/snapshot_builder.h"
#include "src/snapshot/snapshot_id.h"

namespace sheetlog {

// The edits of `entries` in order. Snapshot/EndSegment and unknown types become
// SkippedEdit. An Import entry with an external payload comes back resolved (its
// `cells` read from the blob into memory) if `resolve_imports`. An entry whose body or
// payload does not parse is an Internal error: both were validated before the entry
// was written, so it means the log or the blob store was damaged.
Result<std::vector<SheetEdit>> EditsOfEntries(const std::vector<EntryRecord>& entries,
                                              BlobStore* blobs,
                                              bool resolve_imports = true);

// A sheet as a snapshot (or nothing) plus entries after it, in the shape a streaming
// build or read takes: a base and the delta of the edits after it (seed 001's
// merge-import design). Without an Import among the entries the base is the snapshot
// itself. With one, the base is the sheet just after the last Import, streamed: a
// `replace` import's cells as the file lists them; a `merge` import's over the sheet
// before it (that sheet streamed through the edits between).
// Nothing is parsed here; every cursor opened from the base reads the files again, in
// memory bounded by a batch of cells per import.
struct SheetPlan {
  std::optional<std::string> previous_root;  // the snapshot, when it is the base
  CellSource base;                           // set when an Import is among the entries
  std::string base_name;  // names `base` in checkpoints: the imports and the snapshot
  SheetDelta delta;       // the edits after the base
};
Result<SheetPlan> PlanSheet(BlobStore* blobs, std::optional<std::string> previous_root,
                            const std::vector<EntryRecord>& entries);

// The builder of snapshot `id` over PlanSheet(blobs, previous_root, entries_since).
// The first copies the plan's delta (10^6 cells: ~100 MB); the second takes it over.
std::unique_ptr<SnapshotBuilder> NewSnapshotBuilder(BlobStore* blobs, SnapshotId id,
                                                    const SheetPlan& plan,
                                                    SnapshotBuilder::Options options);
std::unique_ptr<SnapshotBuilder> NewSnapshotBuilder(BlobStore* blobs, SnapshotId id,
                                                    SheetPlan&& plan,
                                                    SnapshotBuilder::Options options);

}  // namespace sheetlog
