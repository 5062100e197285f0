// Sorted streams of cells, pulled one at a time: how a sheet too large to hold is read,
// combined and written (snapshot builds and reads over an imported file, seed 001's
// "merge import" design).
//
// A CellCursor yields non-empty cells in strictly increasing (row, col) order. The
// combinators keep that order and hold no more than one cell of each input (plus, for
// ApplyDelta, the delta itself: memory grows with the edits, never with the sheet):
//   SkipThrough(c, after)  the cells of c after `after`
//   MergeCursors(b, t)     every cell of both; t's wins where both have one (a merge
//                          import written over the sheet)
//   ApplyDelta(c, delta)   the invariant of delta.h streamed: c's cells moved by the
//                          delta's transform (deleted ones dropped), its overlay on top
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/delta.h"
#include "src/sheet/sheet_edit.h"

namespace sheetlog {

class CellCursor {
 public:
  virtual ~CellCursor() = default;
  // The next cell into *cell: true, or false at the end. After an error every later
  // call fails too.
  virtual Result<bool> Next(PlacedCell* cell) = 0;
};

// Opens a cursor over the cells after `after` (every cell if nullopt). Each call starts
// a new, independent cursor over the same cells.
using CellSource =
    std::function<Result<std::unique_ptr<CellCursor>>(std::optional<CellRef> after)>;

// A cursor with no cells.
std::unique_ptr<CellCursor> EmptyCursor();

// The cells of `cursor` after `after` (read and dropped as they come).
std::unique_ptr<CellCursor> SkipThrough(std::unique_ptr<CellCursor> cursor,
                                        std::optional<CellRef> after);

// Every cell of `base` and `top`; at a position both hold, top's.
std::unique_ptr<CellCursor> MergeCursors(std::unique_ptr<CellCursor> base,
                                         std::unique_ptr<CellCursor> top);

// `input` seen through `delta` (its cells at their new positions, the overlay on top,
// clears removing). The delta must not change while the cursor lives.
std::unique_ptr<CellCursor> ApplyDelta(std::unique_ptr<CellCursor> input,
                                       std::shared_ptr<const SheetDelta> delta);

// ApplyDelta with its place exposed, for a build that checkpoints (the snapshot
// builder): after each Next, position() says what has been consumed, and a DeltaCursor
// over an input reopened after position().input_after, started at position(), yields
// exactly the cells this one would yield next.
class DeltaCursor : public CellCursor {
 public:
  struct Position {
    std::optional<CellRef> input_after;    // last input cell consumed (input positions)
    std::optional<CellRef> overlay_after;  // last overlay write consumed
  };

  // `input` must hold the input cells after start.input_after; the overlay is taken up
  // after start.overlay_after.
  DeltaCursor(std::unique_ptr<CellCursor> input, std::shared_ptr<const SheetDelta> delta,
              Position start = {});

  Result<bool> Next(PlacedCell* cell) override;
  const Position& position() const { return position_; }

 private:
  Status FillInput();
  void AdvanceOverlay();

  std::unique_ptr<CellCursor> input_;
  std::shared_ptr<const SheetDelta> delta_;
  Position position_;
  std::optional<PlacedCell> head_;  // next surviving input cell, mapped; not consumed
  CellRef head_old_;                // its input position
  bool input_done_ = false;
  std::map<int64_t, Overlay::Row>::const_iterator row_;
  std::map<int64_t, Overlay::Row>::const_iterator row_end_;
  size_t index_ = 0;
};

// A source whose cursors are SkipThrough(open_all(), after): for streams that cannot
// seek (an imported file, a combination).
CellSource SkippingSource(std::function<Result<std::unique_ptr<CellCursor>>()> open_all);

}  // namespace sheetlog
