#include "src/sheet/sheet.h"

#include <algorithm>

namespace sheetlog {
namespace {

bool RefLess(const PlacedCell& a, const PlacedCell& b) { return a.ref < b.ref; }

}  // namespace

Sheet::Sheet(Options options)
    : options_(options), delta_(options.row_limit, options.col_limit) {}

Sheet Sheet::FromCells(std::vector<PlacedCell> cells, Options options) {
  Sheet sheet(options);
  sheet.MergeIntoBase(std::move(cells), /*replace=*/true);
  return sheet;
}

void Sheet::MergeIntoBase(std::vector<PlacedCell> cells, bool replace) {
  std::erase_if(cells, [&](const PlacedCell& c) {
    return c.ref.row < 1 || c.ref.row > options_.row_limit || c.ref.col < 1 ||
           c.ref.col > options_.col_limit;
  });
  SortKeepingLastWrite(&cells);
  if (replace) {
    std::erase_if(cells, [](const PlacedCell& c) { return c.cell.empty(); });
    base_ = std::move(cells);
    return;
  }
  std::vector<PlacedCell> merged;
  merged.reserve(base_.size() + cells.size());
  auto old_it = base_.begin();
  for (PlacedCell& c : cells) {
    while (old_it != base_.end() && old_it->ref < c.ref)
      merged.push_back(std::move(*old_it++));
    if (old_it != base_.end() && old_it->ref == c.ref) ++old_it;  // overwritten
    if (!c.cell.empty()) merged.push_back(std::move(c));
  }
  while (old_it != base_.end()) merged.push_back(std::move(*old_it++));
  base_ = std::move(merged);
}

void Sheet::Apply(const SheetEdit& edit) {
  stats_.Count(edit);
  if (std::holds_alternative<InsertRowsEdit>(edit) ||
      std::holds_alternative<DeleteRowsEdit>(edit)) {
    rekey_work_ += delta_.overlay().rows().size() + delta_.transform().piece_count();
  } else if (std::holds_alternative<InsertColumnsEdit>(edit) ||
             std::holds_alternative<DeleteColumnsEdit>(edit)) {
    rekey_work_ += delta_.overlay().size() + delta_.transform().piece_count();
  }
  if (const auto* import = std::get_if<ImportEdit>(&edit)) {
    ApplyImport(*import);
  } else {
    delta_.Apply(edit);
  }
  MaybeCompact();
}

void Sheet::ApplyImport(const ImportEdit& edit) {
  size_t n = edit.cells ? edit.cells->size() : 0;
  bool replace = edit.mode == ImportEdit::Mode::kReplace;
  if (!replace && n <= options_.compaction_floor) {
    delta_.Apply(edit);  // small merges are ordinary writes
    return;
  }
  // Large imports go straight into the flat base instead of through the overlay.
  std::vector<PlacedCell> cells;
  cells.reserve(n);
  if (edit.cells) {
    for (const PlacedCell& c : *edit.cells) {
      if (c.ref.row < 1 || c.ref.col < 1) continue;
      cells.push_back(
          {{edit.at.row + c.ref.row - 1, edit.at.col + c.ref.col - 1}, c.cell});
    }
  }
  if (replace) {
    delta_.Reset();
    rekey_work_ = 0;
  } else {
    Compact();
  }
  MergeIntoBase(std::move(cells), replace);
}

void Sheet::MaybeCompact() {
  if (delta_.IsNoop()) return;
  size_t floor = options_.compaction_floor;
  if (floor == 0 || delta_.overlay().size() > std::max(floor, base_.size() / 2) ||
      rekey_work_ > std::max(floor, 3 * base_.size()) ||
      delta_.transform().piece_count() > options_.max_transform_pieces) {
    Compact();
  }
}

void Sheet::Compact() {
  if (delta_.IsNoop()) return;
  std::vector<PlacedCell> next;
  next.reserve((delta_.replaced() ? 0 : base_.size()) + delta_.overlay().size());
  DeltaMerger merger(delta_, [&](const CellRef& ref, auto&& cell) {
    next.push_back({ref, Cell(std::forward<decltype(cell)>(cell))});
  });
  if (!delta_.replaced()) {
    for (PlacedCell& c : base_) merger.Add(c.ref, std::move(c.cell));
  }
  merger.Finish();
  base_ = std::move(next);
  delta_.Reset();
  rekey_work_ = 0;
  ++compactions_;
}

const Cell* Sheet::Find(const CellRef& ref) const {
  if (const Cell* written = delta_.overlay().Find(ref)) {
    return written->empty() ? nullptr : written;
  }
  auto old_ref = delta_.transform().Backward(ref);
  if (!old_ref) return nullptr;
  auto it =
      std::lower_bound(base_.begin(), base_.end(), PlacedCell{*old_ref, {}}, RefLess);
  if (it == base_.end() || it->ref != *old_ref) return nullptr;
  return &it->cell;
}

CellValue Sheet::Value(const CellRef& ref) const {
  const Cell* cell = Find(ref);
  return cell ? cell->value : CellValue();
}

size_t Sheet::CellCount() const {
  if (delta_.IsNoop()) return base_.size();
  size_t n = 0;
  ForEachCell([&](const CellRef&, const Cell&) { ++n; });
  return n;
}

std::optional<CellRange> Sheet::UsedRange() const {
  std::optional<CellRange> used;
  ForEachCell([&](const CellRef& ref, const Cell&) {
    if (!used) {
      used = CellRange{ref, ref};
      return;
    }
    // Cells come in row order: the first has the smallest row, the last the largest.
    used->last.row = ref.row;
    used->first.col = std::min(used->first.col, ref.col);
    used->last.col = std::max(used->last.col, ref.col);
  });
  return used;
}

std::vector<PlacedCell> Sheet::Cells() const {
  if (delta_.IsNoop()) return base_;
  return delta_.ApplyTo(base_);
}

Result<Sheet::RangeValues> Sheet::ReadRange(const CellRange& range,
                                            int64_t max_cells) const {
  int64_t height = range.rows();
  int64_t width = range.columns();
  if (height < 1 || width < 1 || range.first.row < 1 || range.first.col < 1) {
    return InvalidArgument("bad range: corners must be ordered and inside the grid");
  }
  if (height > max_cells / width) {
    return InvalidArgument("range " + FormatRange(range) + " spans " +
                           std::to_string(height) + " x " + std::to_string(width) +
                           " cells, more than the limit of " + std::to_string(max_cells));
  }
  std::vector<const Cell*> grid(static_cast<size_t>(height * width), nullptr);
  auto put = [&](int64_t row, int64_t col, const Cell* cell) {
    grid[static_cast<size_t>((row - range.first.row) * width + (col - range.first.col))] =
        cell;
  };

  // Old cells, through the transform: for each run of rows and columns that came from
  // the base, look the base up by binary search instead of visiting every position.
  if (!delta_.replaced()) {
    struct Run {
      int64_t new_begin, new_end, old_begin;
    };
    std::vector<Run> col_runs;
    delta_.transform().columns().ForEachBackwardRun(range.first.col, range.last.col,
                                                    [&](int64_t b, int64_t e, int64_t o) {
                                                      col_runs.push_back({b, e, o});
                                                    });
    delta_.transform().rows().ForEachBackwardRun(
        range.first.row, range.last.row,
        [&](int64_t new_begin, int64_t new_end, int64_t old_begin) {
          int64_t old_end = old_begin + (new_end - new_begin);
          auto it = std::lower_bound(base_.begin(), base_.end(),
                                     PlacedCell{{old_begin, 0}, {}}, RefLess);
          while (it != base_.end() && it->ref.row <= old_end) {
            int64_t old_row = it->ref.row;
            auto row_end = std::lower_bound(it, base_.end(),
                                            PlacedCell{{old_row + 1, 0}, {}}, RefLess);
            int64_t new_row = new_begin + (old_row - old_begin);
            for (const Run& run : col_runs) {
              int64_t old_col_end = run.old_begin + (run.new_end - run.new_begin);
              auto c = std::lower_bound(
                  it, row_end, PlacedCell{{old_row, run.old_begin}, {}}, RefLess);
              for (; c != row_end && c->ref.col <= old_col_end; ++c) {
                put(new_row, run.new_begin + (c->ref.col - run.old_begin), &c->cell);
              }
            }
            it = row_end;
          }
        });
  }
  // Then the overlay on top (a clear empties the position).
  const auto& rows = delta_.overlay().rows();
  for (auto it = rows.lower_bound(range.first.row);
       it != rows.end() && it->first <= range.last.row; ++it) {
    for (const auto& [col, cell] : it->second) {
      if (col < range.first.col || col > range.last.col) continue;
      put(it->first, col, cell.empty() ? nullptr : &cell);
    }
  }

  RangeValues out;
  out.range = range;
  out.values.assign(height, std::vector<CellValue>(width));
  for (int64_t r = 0; r < height; ++r) {
    for (int64_t c = 0; c < width; ++c) {
      const Cell* cell = grid[static_cast<size_t>(r * width + c)];
      if (cell != nullptr) out.Put(r, c, *cell);
    }
  }
  return out;
}

void Sheet::RangeValues::Put(int64_t r, int64_t c, const Cell& cell) {
  const size_t height = values.size();
  const size_t width = height == 0 ? 0 : values[0].size();
  values[r][c] = cell.value;
  if (!cell.format.empty()) {
    if (!has_formats) {
      formats.assign(height, std::vector<std::string>(width));
      has_formats = true;
    }
    formats[r][c] = cell.format;
  }
  if (!cell.cached.is_null()) {
    if (!has_cached) {
      cached.assign(height, std::vector<CellValue>(width));
      has_cached = true;
    }
    cached[r][c] = cell.cached.get();
  }
}

}  // namespace sheetlog
