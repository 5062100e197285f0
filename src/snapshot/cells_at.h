// The cells of a sheet as of some seq, for GET /v1/sheets/{id}/cells?range=&at=: the best
// snapshot before that seq plus the entries between them. Only what the range needs is
// read: the range is mapped back through the edits' row/column transform to the
// snapshot positions its cells came from, and only the chunks holding those are
// fetched; the edits' overlay supplies the rest.
#pragma once

#include <cstdint>
#include <vector>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/delta.h"
#include "src/sheet/sheet.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog {

// The non-empty cells inside `range` of the sheet `snapshot` + `delta`, sorted by
// position. `snapshot` null means the empty sheet. Errors are the reader's (a missing
// or damaged chunk).
Result<std::vector<PlacedCell>> CellsInRange(const SnapshotReader* snapshot,
                                             const SheetDelta& delta,
                                             const CellRange& range);

// The same with the edits after the snapshot, in log order (Import edits must carry
// their payload, see ImportEdit; skipped entries are ignored).
Result<std::vector<PlacedCell>> CellsInRange(const SnapshotReader* snapshot,
                                             const std::vector<SheetEdit>& edits_after,
                                             const CellRange& range);

// Lays sorted cells of `range` out as rows of values (and formats, when any cell has
// one), the shape GET .../cells answers with. InvalidArgument when the range spans
// more than `max_cells` positions.
Result<Sheet::RangeValues> RangeValuesOf(const CellRange& range,
                                         const std::vector<PlacedCell>& cells,
                                         int64_t max_cells = int64_t{1} << 22);

}  // namespace sheetlog
