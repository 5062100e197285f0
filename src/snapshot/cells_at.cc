#include "src/snapshot/cells_at.h"

#include <algorithm>

namespace sheetlog {

namespace {

// The old positions whose new positions fall in [lo, hi], as increasing intervals.
AxisSpans SourceSpans(const AxisMap& map, int64_t lo, int64_t hi) {
  AxisSpans spans;
  map.ForEachBackwardRun(lo, hi,
                         [&](int64_t new_begin, int64_t new_end, int64_t old_begin) {
                           spans.Add(old_begin, old_begin + (new_end - new_begin));
                         });
  return spans;
}

}  // namespace

Result<std::vector<PlacedCell>> CellsInRange(const RegionReader* snapshot,
                                             const SheetDelta& delta,
                                             const CellRange& range) {
  // Older cells that land in the range, mapped to their new positions (still sorted:
  // the transform preserves order).
  std::vector<PlacedCell> base;
  if (snapshot != nullptr && !delta.replaced()) {
    const RowColumnTransform& transform = delta.transform();
    AxisSpans rows = SourceSpans(transform.rows(), range.first.row, range.last.row);
    AxisSpans cols = SourceSpans(transform.columns(), range.first.col, range.last.col);
    ASSIGN_OR_RETURN(base, snapshot->ReadRegion(rows, cols));
    for (PlacedCell& cell : base) {
      // Every source position read maps into the range by construction.
      cell.ref = *transform.Forward(cell.ref);
    }
  }

  // The overlay's writes inside the range, in order.
  std::vector<std::pair<CellRef, const Cell*>> writes;
  const auto& rows = delta.overlay().rows();
  for (auto it = rows.lower_bound(range.first.row);
       it != rows.end() && it->first <= range.last.row; ++it) {
    const Overlay::Row& row = it->second;
    auto col = std::lower_bound(
        row.begin(), row.end(), range.first.col,
        [](const std::pair<int64_t, Cell>& entry, int64_t c) { return entry.first < c; });
    for (; col != row.end() && col->first <= range.last.col; ++col) {
      writes.emplace_back(CellRef{it->first, col->first}, &col->second);
    }
  }

  // Merge: the overlay wins at the same position, and a clear removes.
  std::vector<PlacedCell> out;
  out.reserve(base.size() + writes.size());
  size_t b = 0;
  for (const auto& [ref, cell] : writes) {
    while (b < base.size() && base[b].ref < ref) out.push_back(std::move(base[b++]));
    if (b < base.size() && base[b].ref == ref) ++b;
    if (!cell->empty()) out.push_back(PlacedCell{ref, *cell});
  }
  while (b < base.size()) out.push_back(std::move(base[b++]));
  return out;
}

Result<std::vector<PlacedCell>> CellsInRange(const RegionReader* snapshot,
                                             const std::vector<SheetEdit>& edits_after,
                                             const CellRange& range) {
  SheetDelta delta;
  for (const SheetEdit& edit : edits_after) delta.Apply(edit);
  return CellsInRange(snapshot, delta, range);
}

Result<std::vector<PlacedCell>> StreamRegionReader::ReadRegion(
    const AxisSpans& rows, const AxisSpans& cols) const {
  std::vector<PlacedCell> out;
  if (rows.empty() || cols.empty()) return out;
  const int64_t first_row = rows.spans().front().first;
  const int64_t last_row = rows.spans().back().second;
  MutexLock lock(&mu_);
  if (!cursor_ || read_through_row_ >= first_row) {
    pending_.reset();
    read_through_row_ = 0;
    std::optional<CellRef> after;
    if (first_row > 1) after = CellRef{first_row - 1, kMaxColumn};
    Result<std::unique_ptr<CellCursor>> opened = source_(after);
    if (!opened.ok()) return opened.status();
    cursor_ = std::move(opened).value();
  }
  while (true) {
    PlacedCell cell;
    if (pending_) {
      cell = std::move(*pending_);
      pending_.reset();
    } else {
      Result<bool> more = cursor_->Next(&cell);
      if (!more.ok()) {
        cursor_.reset();
        return more.status();
      }
      if (!*more) break;
    }
    if (cell.ref.row > last_row) {
      pending_ = std::move(cell);
      break;
    }
    if (rows.Contains(cell.ref.row) && cols.Contains(cell.ref.col)) {
      out.push_back(std::move(cell));
    }
  }
  read_through_row_ = last_row;
  return out;
}

Result<CellRef> StreamRegionReader::Extent() const {
  MutexLock lock(&mu_);
  if (extent_) return *extent_;
  ASSIGN_OR_RETURN(std::unique_ptr<CellCursor> cursor, source_(std::nullopt));
  CellRef extent{0, 0};
  PlacedCell cell;
  while (true) {
    ASSIGN_OR_RETURN(bool more, cursor->Next(&cell));
    if (!more) break;
    extent.row = std::max(extent.row, cell.ref.row);
    extent.col = std::max(extent.col, cell.ref.col);
  }
  extent_ = extent;
  return extent;
}

Result<std::unique_ptr<CellCursor>> StreamRegionReader::Scan() const {
  MutexLock lock(&mu_);
  return source_(std::nullopt);
}

Result<Sheet::RangeValues> RangeValuesOf(const CellRange& range,
                                         const std::vector<PlacedCell>& cells,
                                         int64_t max_cells) {
  const int64_t rows = range.rows();
  const int64_t cols = range.columns();
  if (rows <= 0 || cols <= 0 || rows > max_cells / cols) {
    return InvalidArgument("range " + FormatRange(range) + " spans more than " +
                           std::to_string(max_cells) + " cells");
  }
  Sheet::RangeValues out;
  out.range = range;
  out.values.assign(rows, std::vector<CellValue>(cols));
  for (const PlacedCell& c : cells) {
    if (!range.Contains(c.ref)) continue;
    out.Put(c.ref.row - range.first.row, c.ref.col - range.first.col, c.cell);
  }
  return out;
}

}  // namespace sheetlog
