#include "src/sheet/cell_cursor.h"

#include <algorithm>

namespace sheetlog {

namespace {

class Empty : public CellCursor {
 public:
  Result<bool> Next(PlacedCell*) override { return false; }
};

class Skipping : public CellCursor {
 public:
  Skipping(std::unique_ptr<CellCursor> input, std::optional<CellRef> after)
      : input_(std::move(input)), after_(after) {}

  Result<bool> Next(PlacedCell* cell) override {
    while (true) {
      ASSIGN_OR_RETURN(bool more, input_->Next(cell));
      if (!more) return false;
      if (after_ && !(*after_ < cell->ref)) continue;
      after_.reset();  // every later cell is past it
      return true;
    }
  }

 private:
  std::unique_ptr<CellCursor> input_;
  std::optional<CellRef> after_;
};

// One cell of lookahead over a cursor.
class Lookahead {
 public:
  explicit Lookahead(std::unique_ptr<CellCursor> cursor) : cursor_(std::move(cursor)) {}

  // The next cell, not taken: nullptr at the end.
  Result<PlacedCell*> Peek() {
    if (!head_ && !done_) {
      PlacedCell cell;
      ASSIGN_OR_RETURN(bool more, cursor_->Next(&cell));
      if (more) {
        head_ = std::move(cell);
      } else {
        done_ = true;
      }
    }
    return head_ ? &*head_ : nullptr;
  }
  PlacedCell Take() {
    PlacedCell cell = std::move(*head_);
    head_.reset();
    return cell;
  }

 private:
  std::unique_ptr<CellCursor> cursor_;
  std::optional<PlacedCell> head_;
  bool done_ = false;
};

class Merging : public CellCursor {
 public:
  Merging(std::unique_ptr<CellCursor> base, std::unique_ptr<CellCursor> top)
      : base_(std::move(base)), top_(std::move(top)) {}

  Result<bool> Next(PlacedCell* cell) override {
    ASSIGN_OR_RETURN(PlacedCell * base, base_.Peek());
    ASSIGN_OR_RETURN(PlacedCell * top, top_.Peek());
    if (base == nullptr && top == nullptr) return false;
    if (top == nullptr || (base != nullptr && base->ref < top->ref)) {
      *cell = base_.Take();
      return true;
    }
    if (base != nullptr && base->ref == top->ref) base_.Take();  // top's wins
    *cell = top_.Take();
    return true;
  }

 private:
  Lookahead base_;
  Lookahead top_;
};

}  // namespace

DeltaCursor::DeltaCursor(std::unique_ptr<CellCursor> input,
                         std::shared_ptr<const SheetDelta> delta, Position start)
    : input_(std::move(input)),
      delta_(std::move(delta)),
      position_(start),
      row_(delta_->overlay().rows().begin()),
      row_end_(delta_->overlay().rows().end()) {
  if (!start.overlay_after) return;
  // Resume after the last write consumed.
  const CellRef after = *start.overlay_after;
  const auto& rows = delta_->overlay().rows();
  row_ = rows.lower_bound(after.row);
  if (row_ == row_end_ || row_->first != after.row) return;
  const Overlay::Row& row = row_->second;
  auto it = std::upper_bound(row.begin(), row.end(), after.col,
                             [](int64_t col, const std::pair<int64_t, Cell>& entry) {
                               return col < entry.first;
                             });
  index_ = static_cast<size_t>(it - row.begin());
  if (index_ == row.size()) {
    ++row_;
    index_ = 0;
  }
}

Result<bool> DeltaCursor::Next(PlacedCell* cell) {
  while (true) {
    RETURN_IF_ERROR(FillInput());
    const bool has_overlay = row_ != row_end_;
    if (!head_ && !has_overlay) return false;
    if (has_overlay) {
      const CellRef ref{row_->first, row_->second[index_].first};
      if (!head_ || ref <= head_->ref) {
        // The overlay wins at its position; a clear removes what was there.
        if (head_ && head_->ref == ref) {
          position_.input_after = head_old_;
          head_.reset();
        }
        const Cell& written = row_->second[index_].second;
        const bool empty = written.empty();
        if (!empty) *cell = PlacedCell{ref, written};
        AdvanceOverlay();
        if (empty) continue;
        return true;
      }
    }
    position_.input_after = head_old_;
    *cell = std::move(*head_);
    head_.reset();
    return true;
  }
}

Status DeltaCursor::FillInput() {
  while (!head_ && !input_done_) {
    PlacedCell old;
    ASSIGN_OR_RETURN(bool more, input_->Next(&old));
    if (!more) {
      input_done_ = true;
      break;
    }
    std::optional<CellRef> mapped = delta_->transform().Forward(old.ref);
    if (!mapped) {
      position_.input_after = old.ref;  // its row or column was deleted: consumed
      continue;
    }
    head_old_ = old.ref;
    head_ = PlacedCell{*mapped, std::move(old.cell)};
  }
  return Status::OK();
}

void DeltaCursor::AdvanceOverlay() {
  position_.overlay_after = CellRef{row_->first, row_->second[index_].first};
  if (++index_ == row_->second.size()) {
    ++row_;
    index_ = 0;
  }
}

std::unique_ptr<CellCursor> EmptyCursor() { return std::make_unique<Empty>(); }

std::unique_ptr<CellCursor> SkipThrough(std::unique_ptr<CellCursor> cursor,
                                        std::optional<CellRef> after) {
  if (!after) return cursor;
  return std::make_unique<Skipping>(std::move(cursor), after);
}

std::unique_ptr<CellCursor> MergeCursors(std::unique_ptr<CellCursor> base,
                                         std::unique_ptr<CellCursor> top) {
  return std::make_unique<Merging>(std::move(base), std::move(top));
}

std::unique_ptr<CellCursor> ApplyDelta(std::unique_ptr<CellCursor> input,
                                       std::shared_ptr<const SheetDelta> delta) {
  if (delta->IsNoop()) return input;
  return std::make_unique<DeltaCursor>(std::move(input), std::move(delta));
}

CellSource SkippingSource(std::function<Result<std::unique_ptr<CellCursor>>()> open_all) {
  return [open_all = std::move(open_all)](
             std::optional<CellRef> after) -> Result<std::unique_ptr<CellCursor>> {
    ASSIGN_OR_RETURN(std::unique_ptr<CellCursor> all, open_all());
    return SkipThrough(std::move(all), after);
  };
}

}  // namespace sheetlog
