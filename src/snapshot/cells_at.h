// The cells of a sheet as of some seq, for GET /v1/sheets/{id}/cells?range=&at=: the best
// snapshot before that seq plus the entries between them. Only what the range needs is
// read: the range is mapped back through the edits' row/column transform to the
// snapshot positions its cells came from, and only the chunks holding those are
// fetched; the edits' overlay supplies the rest.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/cell_cursor.h"
#include "src/sheet/delta.h"
#include "src/sheet/sheet.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog {

// The non-empty cells inside `range` of the sheet `snapshot` + `delta`, sorted by
// position. `snapshot` null means the empty sheet. Errors are the reader's (a missing
// or damaged chunk).
Result<std::vector<PlacedCell>> CellsInRange(const RegionReader* snapshot,
                                             const SheetDelta& delta,
                                             const CellRange& range);

// Regions of a sorted cell stream (the cells of an imported file, or a combination
// over one), read by scanning it: memory is one region's cells, whatever the stream's
// length. A region whose first row lies below every row the previous read covered
// continues the scan where it stopped, so walking a sheet in bands of increasing rows
// (an export) reads the stream once; any other region starts it over. Thread-safe.
class StreamRegionReader : public RegionReader {
 public:
  explicit StreamRegionReader(CellSource source) : source_(std::move(source)) {}

  Result<std::vector<PlacedCell>> ReadRegion(const AxisSpans& rows,
                                             const AxisSpans& cols) const override;

  // The largest row and the largest column holding a cell ({0, 0}: none). The first
  // call reads the whole stream.
  Result<CellRef> Extent() const;

  // A cursor over every cell of the stream from its start, independent of the regions
  // read.
  Result<std::unique_ptr<CellCursor>> Scan() const;

 private:
  const CellSource source_;
  mutable Mutex mu_;
  mutable std::unique_ptr<CellCursor> cursor_;
  mutable std::optional<PlacedCell> pending_;  // read past the previous region
  mutable int64_t read_through_row_ = 0;       // cursor_ has passed every such row
  mutable std::optional<CellRef> extent_;
};

// The same with the edits after the snapshot, in log order (Import edits must carry
// their payload, see ImportEdit; skipped entries are ignored).
Result<std::vector<PlacedCell>> CellsInRange(const RegionReader* snapshot,
                                             const std::vector<SheetEdit>& edits_after,
                                             const CellRange& range);

// Lays sorted cells of `range` out as rows of values (and formats, when any cell has
// one), the shape GET .../cells answers with. InvalidArgument when the range spans
// more than `max_cells` positions.
Result<Sheet::RangeValues> RangeValuesOf(const CellRange& range,
                                         const std::vector<PlacedCell>& cells,
                                         int64_t max_cells = int64_t{1} << 22);

}  // namespace sheetlog
