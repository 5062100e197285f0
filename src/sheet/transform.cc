#include "src/sheet/transform.h"

#include <cassert>

namespace sheetlog {

AxisMap AxisMap::Identity(int64_t limit) {
  assert(limit >= 1);
  AxisMap map(limit);
  map.pieces_.push_back({1, 1, limit});
  return map;
}

AxisMap AxisMap::AllDeleted(int64_t limit) { return AxisMap(limit); }

void AxisMap::Insert(int64_t after, int64_t count) {
  if (count <= 0 || after >= limit_) return;
  after = std::max<int64_t>(after, 0);
  count = std::min(count, limit_);  // moving further only drops the same positions
  std::vector<Piece> out;
  out.reserve(pieces_.size() + 1);
  auto push_shifted = [&](Piece p) {
    p.new_begin += count;
    if (p.new_begin > limit_) return;  // fell off the grid
    p.length = std::min(p.length, limit_ - p.new_begin + 1);
    out.push_back(p);
  };
  for (const Piece& p : pieces_) {
    int64_t new_end = p.new_begin + p.length - 1;
    if (new_end <= after) {
      out.push_back(p);
    } else if (p.new_begin > after) {
      push_shifted(p);
    } else {
      int64_t head = after - p.new_begin + 1;
      out.push_back({p.old_begin, p.new_begin, head});
      push_shifted({p.old_begin + head, after + 1, p.length - head});
    }
  }
  pieces_ = std::move(out);
}

void AxisMap::Delete(int64_t at, int64_t count) {
  if (count <= 0 || at < 1 || at > limit_) return;
  count = std::min(count, limit_);
  int64_t end = std::min(at + count - 1, limit_);  // last deleted position
  int64_t removed = end - at + 1;
  std::vector<Piece> out;
  out.reserve(pieces_.size());
  for (const Piece& p : pieces_) {
    int64_t new_end = p.new_begin + p.length - 1;
    if (p.new_begin < at) {  // the part before the deleted range stays
      out.push_back(
          {p.old_begin, p.new_begin, std::min(new_end, at - 1) - p.new_begin + 1});
    }
    if (new_end > end) {  // the part after it moves up
      int64_t begin = std::max(p.new_begin, end + 1);
      out.push_back(
          {p.old_begin + (begin - p.new_begin), begin - removed, new_end - begin + 1});
    }
  }
  pieces_ = std::move(out);
  Canonicalize();
}

void AxisMap::Canonicalize() {
  if (pieces_.empty()) return;
  size_t w = 0;
  for (size_t i = 1; i < pieces_.size(); ++i) {
    Piece& last = pieces_[w];
    const Piece& p = pieces_[i];
    if (last.old_begin + last.length == p.old_begin &&
        last.new_begin + last.length == p.new_begin) {
      last.length += p.length;
    } else {
      pieces_[++w] = p;
    }
  }
  pieces_.resize(w + 1);
}

std::optional<int64_t> AxisMap::Forward(int64_t old_position) const {
  auto it =
      std::upper_bound(pieces_.begin(), pieces_.end(), old_position,
                       [](int64_t p, const Piece& piece) { return p < piece.old_begin; });
  if (it == pieces_.begin()) return std::nullopt;
  --it;
  if (old_position >= it->old_begin + it->length) return std::nullopt;
  return it->new_begin + (old_position - it->old_begin);
}

size_t AxisMap::LowerPieceByNew(int64_t p) const {
  auto it =
      std::upper_bound(pieces_.begin(), pieces_.end(), p,
                       [](int64_t q, const Piece& piece) { return q < piece.new_begin; });
  if (it != pieces_.begin()) {
    auto prev = std::prev(it);
    if (p < prev->new_begin + prev->length) return prev - pieces_.begin();
  }
  return it - pieces_.begin();
}

std::optional<int64_t> AxisMap::Backward(int64_t new_position) const {
  size_t i = LowerPieceByNew(new_position);
  if (i == pieces_.size() || pieces_[i].new_begin > new_position) return std::nullopt;
  return pieces_[i].old_begin + (new_position - pieces_[i].new_begin);
}

bool AxisMap::IsIdentity() const {
  return pieces_.size() == 1 && pieces_[0].old_begin == 1 && pieces_[0].new_begin == 1 &&
         pieces_[0].length == limit_;
}

std::string AxisMap::DebugString() const {
  if (pieces_.empty()) return "(all deleted)";
  std::string out;
  for (const Piece& p : pieces_) {
    if (!out.empty()) out += ' ';
    out += '[';
    out += std::to_string(p.old_begin);
    out += "..";
    out += std::to_string(p.old_begin + p.length - 1);
    out += "]->";
    out += std::to_string(p.new_begin);
  }
  return out;
}

std::optional<CellRef> RowColumnTransform::Forward(const CellRef& ref) const {
  auto row = rows_.Forward(ref.row);
  if (!row) return std::nullopt;
  auto col = cols_.Forward(ref.col);
  if (!col) return std::nullopt;
  return CellRef{*row, *col};
}

std::optional<CellRef> RowColumnTransform::Backward(const CellRef& ref) const {
  auto row = rows_.Backward(ref.row);
  if (!row) return std::nullopt;
  auto col = cols_.Backward(ref.col);
  if (!col) return std::nullopt;
  return CellRef{*row, *col};
}

void RowColumnTransform::DeleteAll() {
  rows_ = AxisMap::AllDeleted(rows_.limit());
  cols_ = AxisMap::AllDeleted(cols_.limit());
}

}  // namespace sheetlog
