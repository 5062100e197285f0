// A sheet as of one seq, for GET .../cells and GET .../export: the best completed
// snapshot at or before that seq plus the entries between them, held as a SheetDelta.
// Nothing is materialized: each read maps its range back through the delta and fetches
// only the snapshot chunks that cover it (see cells_at.h), so a view of a sheet of any
// size costs memory in proportion to the entries after its snapshot. An Import among
// those entries is streamed from its file (PlanSheet), never held.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/status.h"
#include "emulator/table/request_units.h"
#include "src/log/event_log.h"
#include "src/sheet/a1.h"
#include "src/sheet/delta.h"
#include "src/snapshot/cells_at.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog {

// The state of a sheet after every entry with seq <= `at`, as a snapshot to start
// from plus the entries after it: the newest completed Snapshot entry at or before
// at + 1 that is retained (a Snapshot entry at seq s holds every entry before s), else
// the sheet's base_root (an exact truncation's state before first_seq), else the
// empty sheet when nothing was truncated. Gone if entries it needs were truncated and
// nothing covers them. On a fork that has not truncated its own log, a seq before
// first_seq - 1 is read from the sheet it was forked from (whose history that is), and
// is Gone if that sheet is gone.
// REQUIRES: at < next seq, and first_seq - 1 <= at unless the sheet is a fork.
struct SheetHistory {
  std::optional<int64_t> snapshot_seq;  // the snapshot holds every entry before it
  std::optional<std::string> snapshot_root;
  std::vector<EntryRecord> entries;  // after the snapshot, up to `at`, in order
};
Result<SheetHistory> ReadSheetHistory(EventLog* log, const std::string& sheet_id,
                                      int64_t at, UnitMeter* meter);

// Builds a snapshot holding every entry before `before_seq` (for an exact truncation
// at it) with the worker's default layout, and returns its root key. Its objects are
// named as a Snapshot entry at `before_seq` would be (same state, same keys), so a
// retry or a concurrent build writes the same objects. When a completed Snapshot
// entry at before_seq exists, its root is returned without building.
// REQUIRES: first_seq <= before_seq <= next seq.
Result<std::string> BuildStateBefore(EventLog* log, BlobStore* blobs,
                                     const std::string& sheet_id, int64_t before_seq,
                                     UnitMeter* meter);

class SheetView {
 public:
  // The sheet after every entry with seq <= `at` (nullopt: the head). NotFound for no
  // such sheet; OutOfRange if `at` is past the head; Gone if the entries it needs
  // were truncated and no snapshot covers them. A completed Snapshot entry met while
  // reading becomes the base (the newest one at or before `at` wins).
  static Result<std::unique_ptr<SheetView>> Open(EventLog* log, BlobStore* blobs,
                                                 const std::string& sheet_id,
                                                 std::optional<int64_t> at,
                                                 UnitMeter* meter);

  int64_t at_seq() const { return at_seq_; }
  // Seq of the Snapshot entry the view starts from; nullopt: from the empty sheet.
  std::optional<int64_t> snapshot_seq() const { return snapshot_seq_; }
  // Entries after the snapshot that the view applies.
  int64_t entries_applied() const { return entries_applied_; }

  // The non-empty cells inside `range`, sorted by position. Thread-safe when
  // cacheable().
  Result<std::vector<PlacedCell>> Cells(const CellRange& range) const;

  // True if the view starts from a snapshot or the empty sheet (not from an Import's
  // stream, whose reader holds a position): reads may share it across threads, and
  // Extended() can carry it forward.
  bool cacheable() const { return stream_ == nullptr; }

  // This view carried forward over `entries` (the entries right after at_seq(), in
  // order): seed 001's "Update Loaded Spreadsheet". The new view shares the snapshot
  // reader and copies the delta; this one is unchanged. FailedPrecondition if the view
  // is not cacheable() or an entry is an Import with a payload (open a new view);
  // InvalidArgument if `entries` do not follow at_seq(); entry decoding errors.
  Result<std::shared_ptr<SheetView>> Extended(
      BlobStore* blobs, const std::vector<EntryRecord>& entries) const;

  // A cell position no cell lies beyond: every cell's row <= bound.row and column <=
  // bound.col. {0, 0} when the sheet is certainly empty. Cheap: from the snapshot's
  // manifest pushed through the row/column inserts, and the overlay; over an Import
  // after the snapshot, the first call reads the imported file once.
  Result<CellRef> Bound() const;

  // The largest row and the largest column holding a cell ({0, 0}: the sheet is
  // empty): exact, and never a walk over the grid (a single cell at XFD2147483647
  // costs what one at A1 does). When no clear and no delete can have removed a cell of
  // the base, it is the base's extent (the snapshot's manifest, or the imported
  // stream's, read once) pushed through the inserts, with the overlay's writes; else
  // one ordered pass over the cells of the base through the delta, in memory bounded
  // by one chunk.
  Result<CellRef> UsedExtent() const;

 private:
  SheetView() = default;

  int64_t at_seq_ = 0;
  std::optional<int64_t> snapshot_seq_;
  int64_t entries_applied_ = 0;
  // The base the delta applies to: the snapshot, or (when an Import follows it) the
  // stream PlanSheet makes; null for the empty sheet.
  std::shared_ptr<const SnapshotReader> snapshot_;
  std::unique_ptr<StreamRegionReader> stream_;
  SheetDelta delta_;
};

}  // namespace sheetlog
