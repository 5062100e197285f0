#include "src/sheet/delta.h"

#include <algorithm>

namespace sheetlog {

void ReplayStats::Count(const SheetEdit& edit) {
  if (const auto* skipped = std::get_if<SkippedEdit>(&edit)) {
    if (skipped->reserved) {
      ++skipped_system;
    } else {
      ++skipped_unknown;
    }
    return;
  }
  ++applied;
  if (const auto* import = std::get_if<ImportEdit>(&edit); import && !import->cells) {
    ++unresolved_imports;
  }
}

void Overlay::Set(const CellRef& ref, Cell cell) {
  if (ref.row < 1 || ref.row > row_limit_ || ref.col < 1 || ref.col > col_limit_) return;
  Row& row = rows_[ref.row];
  auto it =
      std::lower_bound(row.begin(), row.end(), ref.col,
                       [](const auto& entry, int64_t col) { return entry.first < col; });
  if (it != row.end() && it->first == ref.col) {
    it->second = std::move(cell);
    return;
  }
  row.emplace(it, ref.col, std::move(cell));
  ++size_;
}

void Overlay::SetRun(int64_t row, int64_t first_col, std::vector<Cell>&& cells) {
  if (row < 1 || row > row_limit_ || cells.empty()) return;
  // The columns first_col + i inside the grid: i in [begin, end).
  const int64_t n = static_cast<int64_t>(cells.size());
  const int64_t begin = std::max<int64_t>(0, 1 - first_col);
  const int64_t end = std::min(n, col_limit_ - first_col + 1);
  if (begin >= end) return;
  Row& cols = rows_[row];
  if (!cols.empty() && cols.back().first >= first_col + begin) {
    for (int64_t i = begin; i < end; ++i) {
      Set({row, first_col + i}, std::move(cells[static_cast<size_t>(i)]));
    }
    return;
  }
  cols.reserve(cols.size() + static_cast<size_t>(end - begin));
  for (int64_t i = begin; i < end; ++i) {
    cols.emplace_back(first_col + i, std::move(cells[static_cast<size_t>(i)]));
  }
  size_ += static_cast<size_t>(end - begin);
}

const Overlay::Row* Overlay::FindRow(int64_t row) const {
  auto it = rows_.find(row);
  return it == rows_.end() ? nullptr : &it->second;
}

const Cell* Overlay::Find(const CellRef& ref) const {
  const Row* row = FindRow(ref.row);
  if (row == nullptr) return nullptr;
  auto it =
      std::lower_bound(row->begin(), row->end(), ref.col,
                       [](const auto& entry, int64_t col) { return entry.first < col; });
  if (it == row->end() || it->first != ref.col) return nullptr;
  return &it->second;
}

void Overlay::InsertRows(int64_t after, int64_t count) {
  if (count <= 0 || after >= row_limit_) return;
  after = std::max<int64_t>(after, 0);
  count = std::min(count, row_limit_);
  // Every moved key lands above every key that stays, and the order among the moved
  // keys is kept: re-key the nodes in order and append them at the end.
  std::vector<decltype(rows_)::node_type> moved;
  for (auto it = rows_.upper_bound(after); it != rows_.end();) {
    moved.push_back(rows_.extract(it++));
  }
  for (auto& node : moved) {
    node.key() += count;
    if (node.key() > row_limit_) {
      size_ -= node.mapped().size();  // fell off the grid
      continue;
    }
    rows_.insert(rows_.end(), std::move(node));
  }
}

void Overlay::DeleteRows(int64_t at, int64_t count) {
  if (count <= 0 || at < 1 || at > row_limit_) return;
  count = std::min(count, row_limit_);
  int64_t end = std::min(at + count - 1, row_limit_);
  int64_t removed = end - at + 1;
  auto first = rows_.lower_bound(at);
  auto last = rows_.upper_bound(end);
  for (auto it = first; it != last; ++it) size_ -= it->second.size();
  rows_.erase(first, last);
  std::vector<decltype(rows_)::node_type> moved;
  for (auto it = rows_.upper_bound(end); it != rows_.end();) {
    moved.push_back(rows_.extract(it++));
  }
  for (auto& node : moved) {
    node.key() -= removed;
    rows_.insert(rows_.end(), std::move(node));
  }
}

void Overlay::InsertColumns(int64_t after, int64_t count) {
  if (count <= 0 || after >= col_limit_) return;
  after = std::max<int64_t>(after, 0);
  count = std::min(count, col_limit_);
  for (auto it = rows_.begin(); it != rows_.end();) {
    Row& row = it->second;
    auto moved = std::upper_bound(
        row.begin(), row.end(), after,
        [](int64_t col, const auto& entry) { return col < entry.first; });
    auto kept_end = moved;
    for (auto m = moved; m != row.end(); ++m) {
      if (m->first + count > col_limit_) break;  // this and the rest fall off the grid
      m->first += count;
      ++kept_end;
    }
    size_ -= row.end() - kept_end;
    row.erase(kept_end, row.end());
    if (row.empty()) {
      it = rows_.erase(it);
    } else {
      ++it;
    }
  }
}

void Overlay::DeleteColumns(int64_t at, int64_t count) {
  if (count <= 0 || at < 1 || at > col_limit_) return;
  count = std::min(count, col_limit_);
  int64_t end = std::min(at + count - 1, col_limit_);
  int64_t removed = end - at + 1;
  for (auto it = rows_.begin(); it != rows_.end();) {
    Row& row = it->second;
    auto first = std::lower_bound(
        row.begin(), row.end(), at,
        [](const auto& entry, int64_t col) { return entry.first < col; });
    auto last = std::upper_bound(
        first, row.end(), end,
        [](int64_t col, const auto& entry) { return col < entry.first; });
    for (auto m = last; m != row.end(); ++m) m->first -= removed;
    size_ -= last - first;
    row.erase(first, last);
    if (row.empty()) {
      it = rows_.erase(it);
    } else {
      ++it;
    }
  }
}

void Overlay::Clear() {
  rows_.clear();
  size_ = 0;
}

SheetDelta::SheetDelta(int64_t row_limit, int64_t col_limit)
    : transform_(row_limit, col_limit), overlay_(row_limit, col_limit) {}

void SheetDelta::Reset() {
  transform_ = RowColumnTransform(row_limit(), col_limit());
  overlay_.Clear();
  replaced_ = false;
  stats_ = ReplayStats();
}

void SheetDelta::ApplyImport(const ImportEdit& edit) {
  if (edit.mode == ImportEdit::Mode::kReplace) {
    transform_.DeleteAll();
    overlay_.Clear();
    replaced_ = true;
  }
  if (!edit.cells) return;
  for (const PlacedCell& c : *edit.cells) {
    if (c.ref.row < 1 || c.ref.col < 1) continue;
    // Offsets stay far from int64 overflow: both terms are at most a few times 2^31.
    Write({edit.at.row + c.ref.row - 1, edit.at.col + c.ref.col - 1}, c.cell);
  }
}

void SheetDelta::Apply(const SheetEdit& edit) {
  stats_.Count(edit);
  struct Visitor {
    SheetDelta& d;
    void operator()(const SetCellEdit& e) { d.Write(e.ref, e.cell); }
    void operator()(const SetCellValueAndFormatEdit& e) { d.Write(e.ref, e.cell); }
    void operator()(const SetCellsEdit& e) {
      e.ForEachCell([&](const CellRef& ref, const Cell& cell) { d.Write(ref, cell); });
    }
    void operator()(const InsertRowsEdit& e) {
      d.transform_.rows().Insert(e.after, e.count);
      d.overlay_.InsertRows(e.after, e.count);
      if (e.count <= 0) return;
      for (const auto& [col, cell] : e.values) d.Write({e.after + 1, col}, cell);
    }
    void operator()(const DeleteRowsEdit& e) {
      d.transform_.rows().Delete(e.at, e.count);
      d.overlay_.DeleteRows(e.at, e.count);
    }
    void operator()(const InsertColumnsEdit& e) {
      d.transform_.columns().Insert(e.after, e.count);
      d.overlay_.InsertColumns(e.after, e.count);
    }
    void operator()(const DeleteColumnsEdit& e) {
      d.transform_.columns().Delete(e.at, e.count);
      d.overlay_.DeleteColumns(e.at, e.count);
    }
    void operator()(const ImportEdit& e) { d.ApplyImport(e); }
    void operator()(const SkippedEdit&) {}
  };
  std::visit(Visitor{*this}, edit);
}

void SheetDelta::Apply(SheetEdit&& edit) {
  // The edits that carry many cells; the rest hold few (an Import's are shared).
  if (!std::holds_alternative<SetCellsEdit>(edit) &&
      !std::holds_alternative<SetCellEdit>(edit) &&
      !std::holds_alternative<SetCellValueAndFormatEdit>(edit)) {
    Apply(static_cast<const SheetEdit&>(edit));
    return;
  }
  stats_.Count(edit);
  if (auto* e = std::get_if<SetCellEdit>(&edit)) {
    Write(e->ref, std::move(e->cell));
  } else if (auto* e = std::get_if<SetCellValueAndFormatEdit>(&edit)) {
    Write(e->ref, std::move(e->cell));
  } else if (auto* e = std::get_if<SetCellsEdit>(&edit);
             e->form == SetCellsEdit::Form::kRows) {
    for (size_t r = 0; r < e->rows.size(); ++r) {
      overlay_.SetRun(e->at.row + static_cast<int64_t>(r), e->at.col,
                      std::move(e->rows[r]));
    }
  } else {
    for (PlacedCell& c : e->cells) Write(c.ref, std::move(c.cell));
  }
}

std::vector<PlacedCell> SheetDelta::ApplyTo(
    const std::vector<PlacedCell>& old_cells) const {
  std::vector<PlacedCell> out;
  out.reserve(replaced_ ? overlay_.size() : old_cells.size() + overlay_.size());
  DeltaMerger merger(*this, [&](const CellRef& ref, const Cell& cell) {
    out.push_back({ref, cell});
  });
  if (!replaced_) {
    for (const PlacedCell& c : old_cells) merger.Add(c.ref, c.cell);
  }
  merger.Finish();
  return out;
}

}  // namespace sheetlog
