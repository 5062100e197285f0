// The SnapshotWorker's builds over src/snapshot's streaming builder, and the step they
// share with GET .../cells: log entries -> sheet edits (external bodies read from the
// blob store, Import payloads read and parsed into cells).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "src/log/event_log.h"
#include "src/sheet/cell_cursor.h"
#include "src/sheet/delta.h"
#include "src/sheet/import_file.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/snapshot_builder.h"
#include "src/snapshot/worker.h"

namespace sheetlog {

// A blob read in ranges: how Import payloads are read without holding the file.
class BlobPayloadSource : public PayloadSource {
 public:
  static Result<std::unique_ptr<BlobPayloadSource>> Open(BlobStore* blobs,
                                                         const std::string& key);
  int64_t size() const override { return reader_->info().size; }
  Result<std::string> ReadAt(int64_t offset, int64_t length) const override {
    return reader_->ReadAt(offset, length);
  }

 private:
  explicit BlobPayloadSource(std::unique_ptr<BlobReader> reader)
      : reader_(std::move(reader)) {}
  std::unique_ptr<BlobReader> reader_;
};

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
// merge-import design, issue 8 "bounded memory"). Without an Import among the entries
// the base is the snapshot itself. With one, the base is the sheet just after the
// last Import, streamed: a `replace` import's cells as the file lists them; a `merge`
// import's over the sheet before it (that sheet streamed through the edits between).
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
std::unique_ptr<SnapshotBuilder> NewSnapshotBuilder(BlobStore* blobs, SnapshotId id,
                                                    const SheetPlan& plan,
                                                    SnapshotBuilder::Options options);

// Builds write to `blobs` with `options` (tests shrink the chunk size to make a small
// sheet span many chunks and invocations).
SnapshotBuildFactory MakeSnapshotBuildFactory(BlobStore* blobs,
                                              SnapshotBuilder::Options options = {});

}  // namespace sheetlog
