// Where rows and columns went: the structural half of a sequence of edits.
//
// An AxisMap is a strictly increasing partial function from old positions 1..limit to
// new positions 1..limit ("deleted" where undefined). It is stored as pieces, each a run
// of consecutive old positions that moved by the same amount. Gaps between pieces are
// deleted old positions (on the old side) and inserted new positions (on the new side).
// Each insert or delete splits at most one piece, so the number of pieces grows with the
// number of structural edits, never with the size of the sheet. Pieces are kept
// canonical (touching pieces merge), so an insert undone by a delete gives back the
// identity, and two maps are equal iff they are the same function.
//
// Positions pushed past `limit` by an insert fall off the grid (deleted): every edit is
// total, whatever the sheet holds.
//
// A RowColumnTransform is one AxisMap for rows and one for columns; because both are
// increasing, it preserves (row, col) order: mapping a sorted list of cells gives a
// sorted list.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/sheet/a1.h"

namespace sheetlog {

class AxisMap {
 public:
  struct Piece {
    int64_t old_begin;  // first old position of the run
    int64_t new_begin;  // where it went
    int64_t length;     // > 0
    bool operator==(const Piece&) const = default;
  };

  // The identity on 1..limit. REQUIRES: limit >= 1.
  static AxisMap Identity(int64_t limit);
  // Every old position deleted (what a replacing import leaves).
  static AxisMap AllDeleted(int64_t limit);

  // Positions > after move down by count; those pushed past the limit are deleted.
  // No-op when count <= 0 or after >= limit. after < 0 counts as 0.
  void Insert(int64_t after, int64_t count);
  // Positions at..at+count-1 are deleted; positions after them move up by count.
  // Ranges reaching past the limit are clipped; no-op when count <= 0, at < 1 or
  // at > limit.
  void Delete(int64_t at, int64_t count);

  // The new position of old position p, or nullopt if it was deleted (or is outside
  // 1..limit).
  std::optional<int64_t> Forward(int64_t old_position) const;
  // The old position that is now at p, or nullopt if p was inserted (empty) since.
  std::optional<int64_t> Backward(int64_t new_position) const;

  // Calls fn(new_begin, new_end, old_begin) for each run of new positions in
  // [lo, hi] that has old positions (new_end inclusive), in increasing order.
  template <typename Fn>
  void ForEachBackwardRun(int64_t lo, int64_t hi, Fn&& fn) const;

  bool IsIdentity() const;
  int64_t limit() const { return limit_; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  // e.g. "[1..3]->1 [4..9]->7" for test messages.
  std::string DebugString() const;

  bool operator==(const AxisMap&) const = default;

 private:
  explicit AxisMap(int64_t limit) : limit_(limit) {}
  void Canonicalize();
  // Index of the piece whose new range contains p, or the first piece after p.
  size_t LowerPieceByNew(int64_t p) const;

  int64_t limit_;
  std::vector<Piece> pieces_;  // increasing in both old_begin and new_begin
};

template <typename Fn>
void AxisMap::ForEachBackwardRun(int64_t lo, int64_t hi, Fn&& fn) const {
  for (size_t i = LowerPieceByNew(lo); i < pieces_.size(); ++i) {
    const Piece& p = pieces_[i];
    if (p.new_begin > hi) break;
    int64_t begin = std::max(lo, p.new_begin);
    int64_t end = std::min(hi, p.new_begin + p.length - 1);
    if (begin <= end) fn(begin, end, p.old_begin + (begin - p.new_begin));
  }
}

class RowColumnTransform {
 public:
  // The identity on the whole grid (limits default to kMaxRow x kMaxColumn).
  explicit RowColumnTransform(int64_t row_limit = kMaxRow, int64_t col_limit = kMaxColumn)
      : rows_(AxisMap::Identity(row_limit)), cols_(AxisMap::Identity(col_limit)) {}

  AxisMap& rows() { return rows_; }
  AxisMap& columns() { return cols_; }
  const AxisMap& rows() const { return rows_; }
  const AxisMap& columns() const { return cols_; }

  // Where the cell at old position `ref` is now, or nullopt if its row or its column
  // was deleted.
  std::optional<CellRef> Forward(const CellRef& ref) const;
  // Which old cell is now at `ref`, or nullopt if its row or column is new.
  std::optional<CellRef> Backward(const CellRef& ref) const;

  // Drops every old position (both axes), as a replacing import does.
  void DeleteAll();
  bool IsIdentity() const { return rows_.IsIdentity() && cols_.IsIdentity(); }
  size_t piece_count() const { return rows_.pieces().size() + cols_.pieces().size(); }

  bool operator==(const RowColumnTransform&) const = default;

 private:
  AxisMap rows_;
  AxisMap cols_;
};

}  // namespace sheetlog
