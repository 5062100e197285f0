#include "src/snapshot/sheet_view.h"

#include <algorithm>

#include "src/log/tables.h"
#include "src/snapshot/cells_at.h"
#include "src/snapshot/sheet_plan.h"

namespace sheetlog {

namespace {

constexpr int kPageEntries = 1000;

// The largest new position holding an old position in [1, old_max], or 0.
int64_t ForwardBound(const AxisMap& map, int64_t old_max) {
  int64_t bound = 0;
  if (old_max <= 0) return 0;
  map.ForEachBackwardRun(
      1, map.limit(), [&](int64_t new_begin, int64_t new_end, int64_t old_begin) {
        if (old_begin > old_max) return;
        bound = std::max(bound,
                         new_begin + std::min(new_end - new_begin, old_max - old_begin));
      });
  return bound;
}

// True if `map` keeps every old position 1..old_max: none deleted, none pushed off
// the grid by an insert.
bool KeepsAll(const AxisMap& map, int64_t old_max) {
  int64_t next = 1;  // the first old position not yet known to be kept
  for (const AxisMap::Piece& piece : map.pieces()) {
    if (next > old_max) return true;
    if (piece.old_begin > next) return false;  // `next` was deleted
    next = std::max(next, piece.old_begin + piece.length);
  }
  return next > old_max;
}

}  // namespace

Result<SheetHistory> ReadSheetHistory(EventLog* log, const std::string& sheet_id,
                                      int64_t at, UnitMeter* meter) {
  // The newest segment-level snapshot that holds no entry after `at`: a Snapshot entry
  // at seq s holds every entry before s.
  // Truncated segments keep their rows but not their entries: only snapshots at or
  // after the first retained seq can serve.
  ASSIGN_OR_RETURN(SheetInfo sheet, log->GetSheet(sheet_id, meter));
  if (sheet.fork_of && sheet.fork_seq == sheet.first_seq && at < sheet.first_seq - 1) {
    // A fork's log before first_seq is its source's (EventLog::Fork copied from a
    // snapshot on), so is its state there: read it from the source, which answers as
    // it would for itself (Gone once it truncated that range). A fork of a fork goes
    // on up the chain. Once the fork truncated its own log (first_seq moved past the
    // fork point), reads before first_seq are Gone as on any sheet: the source's
    // state there may not be the fork's.
    Result<SheetHistory> source = ReadSheetHistory(log, *sheet.fork_of, at, meter);
    if (source.status().IsNotFound()) {
      return Gone("seq " + std::to_string(at) + " lies before this fork's first seq " +
                  std::to_string(sheet.first_seq) + ", in the history of sheet " +
                  *sheet.fork_of + ", which was deleted");
    }
    return source;
  }
  if (at < sheet.first_seq - 1) {
    return Gone("the entries before seq " + std::to_string(sheet.first_seq) +
                " were truncated; the sheet is readable from seq " +
                std::to_string(sheet.first_seq - 1) + " on");
  }
  ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments, log->ListSegments(sheet_id, meter));
  std::optional<EntryRecord> base;
  for (auto it = segments.rbegin(); it != segments.rend() && !base; ++it) {
    if (!it->last_snapshot) continue;
    const int64_t seq = it->first_seq + *it->last_snapshot;
    if (seq > at + 1 || seq < sheet.first_seq) continue;
    ASSIGN_OR_RETURN(EntryRecord entry, log->GetEntry(sheet_id, seq, meter));
    if (entry.snapshot_root) base = std::move(entry);
  }

  // The entries after it; a newer completed snapshot among them (one the segment does
  // not point at, as it points only at its newest) moves the base forward.
  std::vector<EntryRecord> entries;
  int64_t next = base ? base->seq + 1 : sheet.first_seq;
  while (next <= at) {
    ASSIGN_OR_RETURN(ReadRange page,
                     log->Read(sheet_id, next, at + 1, kPageEntries, meter));
    if (page.entries.empty()) break;
    next = page.entries.back().seq + 1;
    for (EntryRecord& entry : page.entries) {
      if (entry.type == kSnapshotType && entry.snapshot_root) {
        base = std::move(entry);
        entries.clear();
        continue;
      }
      entries.push_back(std::move(entry));
    }
  }

  SheetHistory history;
  if (base) {
    history.snapshot_seq = base->seq;
    history.snapshot_root = *base->snapshot_root;
  } else if (sheet.base_root) {
    // An exact truncation's state before first_seq; the entries start at first_seq.
    history.snapshot_seq = sheet.first_seq;
    history.snapshot_root = *sheet.base_root;
  } else if (sheet.first_seq > 0) {
    return Gone("the entries before seq " + std::to_string(sheet.first_seq) +
                " were truncated and no retained snapshot at or before seq " +
                std::to_string(at) + " covers them");
  }
  history.entries = std::move(entries);
  return history;
}

Result<std::string> BuildStateBefore(EventLog* log, BlobStore* blobs,
                                     const std::string& sheet_id, int64_t before_seq,
                                     UnitMeter* meter) {
  ASSIGN_OR_RETURN(SheetHistory history,
                   ReadSheetHistory(log, sheet_id, before_seq - 1, meter));
  if (history.snapshot_seq == before_seq && history.entries.empty() &&
      history.snapshot_root) {
    return *history.snapshot_root;  // a completed Snapshot entry at the cut
  }
  ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments, log->ListSegments(sheet_id, meter));
  const SegmentInfo* segment = &segments.front();
  for (const SegmentInfo& s : segments) {
    if (s.first_seq <= before_seq) segment = &s;
  }
  ASSIGN_OR_RETURN(SheetPlan plan,
                   PlanSheet(blobs, history.snapshot_root, history.entries));
  SnapshotId id{sheet_id, segment->num, before_seq - segment->first_seq, before_seq};
  std::unique_ptr<SnapshotBuilder> builder =
      NewSnapshotBuilder(blobs, id, std::move(plan), SnapshotBuilder::Options{});
  while (true) {
    ASSIGN_OR_RETURN(bool done, builder->WriteNextChunk());
    if (done) break;
  }
  return builder->Finish();
}

Result<std::unique_ptr<SheetView>> SheetView::Open(EventLog* log, BlobStore* blobs,
                                                   const std::string& sheet_id,
                                                   std::optional<int64_t> at,
                                                   UnitMeter* meter) {
  ASSIGN_OR_RETURN(int64_t next_seq, log->NextSeq(sheet_id, meter));
  const int64_t head = next_seq - 1;
  if (at && (*at < 0 || *at > head)) {
    return OutOfRange("at " + std::to_string(*at) + " is past the head (seq " +
                      std::to_string(head) + ")");
  }
  std::unique_ptr<SheetView> view(new SheetView());
  view->at_seq_ = at.value_or(head);
  ASSIGN_OR_RETURN(SheetHistory history,
                   ReadSheetHistory(log, sheet_id, view->at_seq_, meter));
  view->snapshot_seq_ = history.snapshot_seq;
  ASSIGN_OR_RETURN(SheetPlan plan,
                   PlanSheet(blobs, history.snapshot_root, history.entries));
  if (plan.base) {
    view->stream_ = std::make_unique<StreamRegionReader>(std::move(plan.base));
  } else if (plan.previous_root) {
    ASSIGN_OR_RETURN(view->snapshot_, SnapshotReader::Open(blobs, *plan.previous_root));
  }
  view->delta_ = std::move(plan.delta);
  view->entries_applied_ = static_cast<int64_t>(history.entries.size());
  return view;
}

Result<std::shared_ptr<SheetView>> SheetView::Extended(
    BlobStore* blobs, const std::vector<EntryRecord>& entries) const {
  if (!cacheable()) {
    return FailedPrecondition("a view over an imported file is not carried forward");
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].seq != at_seq_ + 1 + static_cast<int64_t>(i)) {
      return InvalidArgument("entries to extend a view at seq " +
                             std::to_string(at_seq_) + " must follow it");
    }
  }
  ASSIGN_OR_RETURN(std::vector<SheetEdit> edits,
                   EditsOfEntries(entries, blobs, /*resolve_imports=*/false));
  for (size_t i = 0; i < edits.size(); ++i) {
    if (std::holds_alternative<ImportEdit>(edits[i]) && entries[i].external) {
      return FailedPrecondition("an Import: the view is planned anew");
    }
  }
  std::shared_ptr<SheetView> next(new SheetView());
  next->snapshot_ = snapshot_;
  next->snapshot_seq_ = snapshot_seq_;
  next->delta_ = delta_;
  for (const SheetEdit& edit : edits) next->delta_.Apply(edit);
  next->at_seq_ = entries.empty() ? at_seq_ : entries.back().seq;
  next->entries_applied_ = entries_applied_ + static_cast<int64_t>(entries.size());
  return next;
}

Result<std::vector<PlacedCell>> SheetView::Cells(const CellRange& range) const {
  if (stream_) return CellsInRange(stream_.get(), delta_, range);
  return CellsInRange(snapshot_.get(), delta_, range);
}

Result<CellRef> SheetView::Bound() const {
  CellRef base{0, 0};
  if (stream_) {
    ASSIGN_OR_RETURN(base, stream_->Extent());
  } else if (snapshot_) {
    base = CellRef{snapshot_->manifest().rows, snapshot_->manifest().cols};
  }
  CellRef bound{0, 0};
  if (!delta_.replaced()) {
    bound.row = ForwardBound(delta_.transform().rows(), base.row);
    bound.col = ForwardBound(delta_.transform().columns(), base.col);
  }
  for (const auto& [row, cells] : delta_.overlay().rows()) {
    if (cells.empty()) continue;
    bound.row = std::max(bound.row, row);
    bound.col = std::max(bound.col, cells.back().first);
  }
  return bound;
}

Result<CellRef> SheetView::UsedExtent() const {
  // The overlay's own cells, and whether it clears any position.
  CellRef written{0, 0};
  bool clears = false;
  delta_.overlay().ForEach([&](const CellRef& ref, const Cell& cell) {
    if (cell.empty()) {
      clears = true;
      return;
    }
    written.row = std::max(written.row, ref.row);
    written.col = std::max(written.col, ref.col);
  });
  // Nothing of the base survives a replacing import; there is no base to survive.
  if (delta_.replaced() || (!stream_ && !snapshot_)) return written;
  if (!clears) {
    CellRef base{0, 0};
    if (stream_) {
      ASSIGN_OR_RETURN(base, stream_->Extent());
    } else {
      base = CellRef{snapshot_->manifest().rows, snapshot_->manifest().cols};
    }
    if (base.row == 0 || base.col == 0) return written;
    const AxisMap& rows = delta_.transform().rows();
    const AxisMap& cols = delta_.transform().columns();
    if (KeepsAll(rows, base.row) && KeepsAll(cols, base.col)) {
      // Every base cell survives, each where the transform put it (and the overlay
      // only adds or replaces cells): a cell in the base's last row and one in its
      // last column are still cells, in the rows and columns they moved to.
      return CellRef{std::max(written.row, *rows.Forward(base.row)),
                     std::max(written.col, *cols.Forward(base.col))};
    }
  }
  // Something may have removed the base's outermost cells: one ordered pass over the
  // cells (never over empty positions).
  std::unique_ptr<CellCursor> cursor;
  if (stream_) {
    ASSIGN_OR_RETURN(cursor, stream_->Scan());
  } else {
    cursor = snapshot_->Scan();
  }
  CellRef used{0, 0};
  DeltaMerger merger(delta_, [&](const CellRef& ref, const Cell&) {
    used.row = std::max(used.row, ref.row);
    used.col = std::max(used.col, ref.col);
  });
  PlacedCell cell;
  while (true) {
    ASSIGN_OR_RETURN(bool more, cursor->Next(&cell));
    if (!more) break;
    merger.Add(cell.ref, cell.cell);
  }
  merger.Finish();
  return used;
}

}  // namespace sheetlog
