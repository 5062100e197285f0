// What a sequence of edits did, in a form that can be applied to any older sheet:
// what lets a snapshot be built by streaming the previous one (snapshot_builder.h).
//
// A SheetDelta is
//   - transform: where every old row and column went (RowColumnTransform), composed from
//     all inserts and deletes in order;
//   - overlay:   every cell written since, keyed by its *final* position, including
//     explicit clears (empty cells). A write made before a later insert has moved with
//     the insert; a write into rows or columns deleted later is gone;
//   - replaced:  a replacing import happened; nothing older survives (the transform then
//     deletes every old position, so the flag is a shortcut, not a second rule).
//
// The invariant (tests/unit/sheet_property_test.cc checks it on random sheets and edit
// sequences): for any old sheet S and edits E,
//     apply(S, E) == { transform(c) for c in S not deleted }, then the overlay on top
//                    (overlay wins, clears remove).
// DeltaMerger computes the right-hand side in one ordered pass, streaming: feed the old
// cells in (row, col) order and it emits the new sheet in (row, col) order, so a
// snapshot can be rebuilt chunk by chunk without holding either sheet in memory.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "src/sheet/a1.h"
#include "src/sheet/cell.h"
#include "src/sheet/sheet_edit.h"
#include "src/sheet/transform.h"

namespace sheetlog {

// What a replay saw. Skipped entries are not errors: unknown types are stored as given
// and ignored by the reducer (api.md).
struct ReplayStats {
  int64_t applied = 0;             // built-in edits applied
  int64_t skipped_unknown = 0;     // entries of a type that is not built in
  int64_t skipped_system = 0;      // Snapshot, EndSegment
  int64_t unresolved_imports = 0;  // Import edits applied without their payload

  void Count(const SheetEdit& edit);
  bool operator==(const ReplayStats&) const = default;
};

// Cells written since some point, keyed by current position; an empty Cell is a clear.
// Stored as one sorted vector of (column, cell) per written row, so a row insert or
// delete re-keys written rows, not cells.
class Overlay {
 public:
  using Row = std::vector<std::pair<int64_t, Cell>>;  // sorted by column

  explicit Overlay(int64_t row_limit = kMaxRow, int64_t col_limit = kMaxColumn)
      : row_limit_(row_limit), col_limit_(col_limit) {}

  // Records a write (an empty cell records a clear), replacing any earlier one at the
  // same position. Positions outside the grid are ignored.
  void Set(const CellRef& ref, Cell cell);
  // The same as Set({row, first_col + i}, cells[i]) for every i in order, the cells
  // moved out of `cells`. A run past the row's last recorded column (a block of rows
  // written into empty or earlier-filled rows) is appended without a search per cell.
  void SetRun(int64_t row, int64_t first_col, std::vector<Cell>&& cells);
  // The recorded write at `ref`: nullptr if none, an empty Cell for a clear.
  const Cell* Find(const CellRef& ref) const;
  // The recorded writes of one row, or nullptr.
  const Row* FindRow(int64_t row) const;

  // The same structural edits as AxisMap, applied to the recorded positions.
  void InsertRows(int64_t after, int64_t count);
  void DeleteRows(int64_t at, int64_t count);
  void InsertColumns(int64_t after, int64_t count);
  void DeleteColumns(int64_t at, int64_t count);

  void Clear();
  size_t size() const { return size_; }  // recorded writes, clears included
  bool empty() const { return size_ == 0; }
  const std::map<int64_t, Row>& rows() const { return rows_; }

  // fn(const CellRef&, const Cell&) for every recorded write, in (row, col) order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [row, cells] : rows_) {
      for (const auto& [col, cell] : cells) fn(CellRef{row, col}, cell);
    }
  }

  bool operator==(const Overlay&) const = default;

 private:
  int64_t row_limit_;
  int64_t col_limit_;
  std::map<int64_t, Row> rows_;  // no empty Row is kept
  size_t size_ = 0;
};

class SheetDelta {
 public:
  explicit SheetDelta(int64_t row_limit = kMaxRow, int64_t col_limit = kMaxColumn);

  // Folds one more edit in. Never fails: ParseEdit has already refused what cannot be
  // applied; positions pushed or written outside the grid are dropped.
  void Apply(const SheetEdit& edit);
  // The same, moving the edit's cells into the overlay instead of copying them.
  void Apply(SheetEdit&& edit);
  // Back to "nothing happened".
  void Reset();

  const RowColumnTransform& transform() const { return transform_; }
  const Overlay& overlay() const { return overlay_; }
  bool replaced() const { return replaced_; }
  const ReplayStats& stats() const { return stats_; }
  // True when applying this delta changes no sheet.
  bool IsNoop() const {
    return !replaced_ && overlay_.empty() && transform_.IsIdentity();
  }
  int64_t row_limit() const { return transform_.rows().limit(); }
  int64_t col_limit() const { return transform_.columns().limit(); }

  // The invariant's right-hand side on a whole sheet. REQUIRES: old_cells sorted by ref
  // without duplicates. Empty cells in the input are ignored; the output has none.
  std::vector<PlacedCell> ApplyTo(const std::vector<PlacedCell>& old_cells) const;

 private:
  void Write(const CellRef& ref, Cell cell) { overlay_.Set(ref, std::move(cell)); }
  void ApplyImport(const ImportEdit& edit);

  RowColumnTransform transform_;
  Overlay overlay_;
  bool replaced_ = false;
  ReplayStats stats_;
};

// Streams old cells through a delta. The sink is called as sink(const CellRef&, cell)
// with the new sheet's non-empty cells in strictly increasing (row, col) order; `cell`
// is a `const Cell&` for overlay writes and whatever Add() was given (forwarded, so an
// rvalue can be moved on) for old cells.
//
//   DeltaMerger merger(delta, [&](const CellRef& ref, const Cell& cell) { ... });
//   for (each old cell in order) merger.Add(ref, cell);
//   merger.Finish();
template <typename Sink>
class DeltaMerger {
 public:
  DeltaMerger(const SheetDelta& delta, Sink sink)
      : delta_(delta),
        sink_(std::move(sink)),
        row_(delta.overlay().rows().begin()),
        row_end_(delta.overlay().rows().end()) {}

  // REQUIRES: old refs strictly increasing across calls, before Finish().
  template <typename C>
  void Add(const CellRef& old_ref, C&& cell) {
    if (cell.empty()) return;
    if (old_ref.row != cached_old_row_) {
      cached_old_row_ = old_ref.row;
      cached_new_row_ = delta_.transform().rows().Forward(old_ref.row);
    }
    if (!cached_new_row_) return;
    auto col = delta_.transform().columns().Forward(old_ref.col);
    if (!col) return;
    CellRef ref{*cached_new_row_, *col};
    EmitOverlayBefore(ref);
    if (!OverlayDone() && CurrentOverlayRef() == ref) {
      EmitCurrentOverlay();  // the overlay wins (and a clear removes)
      return;
    }
    sink_(ref, std::forward<C>(cell));
  }

  // Emits the overlay's remaining writes.
  void Finish() {
    while (!OverlayDone()) EmitCurrentOverlay();
  }

 private:
  bool OverlayDone() const { return row_ == row_end_; }
  CellRef CurrentOverlayRef() const { return {row_->first, row_->second[index_].first}; }
  void EmitCurrentOverlay() {
    const Cell& cell = row_->second[index_].second;
    if (!cell.empty()) sink_(CurrentOverlayRef(), cell);
    if (++index_ == row_->second.size()) {
      ++row_;
      index_ = 0;
    }
  }
  void EmitOverlayBefore(const CellRef& ref) {
    while (!OverlayDone() && CurrentOverlayRef() < ref) EmitCurrentOverlay();
  }

  const SheetDelta& delta_;
  Sink sink_;
  std::map<int64_t, Overlay::Row>::const_iterator row_;
  std::map<int64_t, Overlay::Row>::const_iterator row_end_;
  size_t index_ = 0;
  int64_t cached_old_row_ = 0;  // rows start at 1: 0 = nothing cached
  std::optional<int64_t> cached_new_row_;
};

}  // namespace sheetlog
