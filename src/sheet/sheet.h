// The reducer: an in-memory sparse sheet that entries are applied to, in log order.
//
// Representation (README.md): a flat *base* — a vector of cells sorted by (row, col) —
// plus a SheetDelta of the edits applied since the base was last rebuilt. Applying a
// row or column insert/delete only updates the delta's piecewise transform and re-keys
// the delta's written rows: it does not touch the base, so its cost does not grow with
// the sheet. When the delta grows past a bound (overlay writes or transform pieces),
// Compact() folds it into a new base in one ordered pass. Reads look in the overlay
// first, then map the position back through the transform into the base.
//
// Thread safety: const methods do not mutate (no lazy compaction), so concurrent reads
// are safe; Apply and Compact need exclusive access.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/cell.h"
#include "src/sheet/delta.h"
#include "src/sheet/sheet_edit.h"

namespace sheetlog {

class Sheet {
 public:
  struct Options {
    // Size of the grid. Default: the whole grid of api.md. Tests shrink it to reach the
    // edges with small edits.
    int64_t row_limit = kMaxRow;
    int64_t col_limit = kMaxColumn;
    // Compaction policy (README.md). With B = cells in the base, compact when
    //   - the overlay holds more than max(compaction_floor, B / 2) writes (bounds the
    //     memory of the pending writes; the base doubles in amortized O(1) per write), or
    //   - re-keying the overlay and transform on structural edits since the last
    //     compaction has cost more than max(compaction_floor, 3 * B) steps: by then a
    //     compaction (O(B), but each step moves a whole cell) has paid for itself
    //     (rent-or-buy; the factor 3 was measured, bench/README.md), or
    //   - the transform has more than max_transform_pieces pieces.
    // 0 for compaction_floor compacts after every edit (tests). Defaults: 4096, 4096.
    size_t compaction_floor = 4096;
    size_t max_transform_pieces = 4096;
  };

  Sheet() : Sheet(Options()) {}
  explicit Sheet(Options options);

  // A sheet holding `cells` (any order; a later duplicate wins; empty cells and cells
  // outside the grid are dropped).
  static Sheet FromCells(std::vector<PlacedCell> cells, Options options);
  static Sheet FromCells(std::vector<PlacedCell> cells) {
    return FromCells(std::move(cells), Options());
  }

  // Applies one entry. Never fails (ParseEdit refused what cannot be applied). Skipped
  // entry types only count in stats(). An Import must carry its payload in `cells` (see
  // ImportEdit); without it the import writes nothing (a replace still clears) and
  // stats().unresolved_imports counts it.
  void Apply(const SheetEdit& edit);

  // The cell at `ref`, or nullptr if empty. The pointer is valid until the next
  // non-const call.
  const Cell* Find(const CellRef& ref) const;
  // The value at `ref` (null if empty).
  CellValue Value(const CellRef& ref) const;

  // Number of non-empty cells. O(1) when compacted, otherwise one pass.
  size_t CellCount() const;
  // The smallest range holding every non-empty cell, or nullopt for an empty sheet.
  // One pass over the cells.
  std::optional<CellRange> UsedRange() const;

  // fn(const CellRef&, const Cell&) for every non-empty cell in (row, col) order.
  template <typename Fn>
  void ForEachCell(Fn&& fn) const;
  // Every non-empty cell, sorted by ref.
  std::vector<PlacedCell> Cells() const;

  struct RangeValues {
    CellRange range;
    std::vector<std::vector<CellValue>> values;  // range.rows() x range.columns()
    // Same shape; "" where no format. Only filled when some cell in range has one.
    std::vector<std::vector<std::string>> formats;
    bool has_formats = false;
    // Same shape; formulas' cached results, null elsewhere. Only filled when some cell
    // in range has one.
    std::vector<std::vector<CellValue>> cached;
    bool has_cached = false;

    // Places `cell` at (r, c) of the rectangle (0-based), filling formats and cached
    // results as they first appear.
    void Put(int64_t r, int64_t c, const Cell& cell);
  };
  // The rectangle `range` as rows of values. InvalidArgument when it spans more than
  // `max_cells` positions (the caller answers that with a 400).
  Result<RangeValues> ReadRange(const CellRange& range,
                                int64_t max_cells = int64_t{1} << 22) const;

  // Folds pending edits into the base. Reads and Apply call it when useful; calling it
  // by hand changes no observable content.
  void Compact();

  const ReplayStats& stats() const { return stats_; }
  int64_t compactions() const { return compactions_; }
  const Options& options() const { return options_; }

  // Same cells (formats included).
  bool operator==(const Sheet& other) const { return Cells() == other.Cells(); }

 private:
  void MaybeCompact();
  void ApplyImport(const ImportEdit& edit);
  // REQUIRES: delta_ is a no-op. Replaces or merges absolute cells into base_.
  void MergeIntoBase(std::vector<PlacedCell> cells, bool replace);

  Options options_;
  std::vector<PlacedCell> base_;  // sorted by ref, no empty cells
  SheetDelta delta_;              // applied after base_
  // Overlay rows/cells and transform pieces touched by structural edits since the last
  // compaction: the cost a compaction would stop paying.
  size_t rekey_work_ = 0;
  ReplayStats stats_;
  int64_t compactions_ = 0;
};

template <typename Fn>
void Sheet::ForEachCell(Fn&& fn) const {
  if (delta_.IsNoop()) {
    for (const PlacedCell& c : base_) fn(c.ref, c.cell);
    return;
  }
  DeltaMerger merger(delta_,
                     [&](const CellRef& ref, const Cell& cell) { fn(ref, cell); });
  if (!delta_.replaced()) {
    for (const PlacedCell& c : base_) merger.Add(c.ref, c.cell);
  }
  merger.Finish();
}

}  // namespace sheetlog
