// A1 references: "C2" is row 2, column 3. Columns are bijective base-26 letters
// (A..Z, AA..AZ, ..., XFD = 16384, and beyond, up to kMaxColumn = "FXSHRXW"); rows are
// 1..kMaxRow. Coordinates are 1-based int64 so that arithmetic on them (row + count)
// never overflows.
//
// Parsing is strict, because a reference that parses here is stored in the log for
// ever: upper-case letters only, no '$', no spaces, no leading zeros. Every error is
// InvalidArgument with a message that quotes the input and says what is wrong, e.g.
// "bad cell reference 'C0': rows start at 1".
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "emulator/status.h"

namespace sheetlog {

inline constexpr int64_t kMaxRow = 2147483647;     // 2^31 - 1
inline constexpr int64_t kMaxColumn = 2147483647;  // 2^31 - 1, "FXSHRXW"

// A cell position, 1-based. Ordered row-major: (row, col).
struct CellRef {
  int64_t row = 1;
  int64_t col = 1;
  auto operator<=>(const CellRef&) const = default;
};

// An inclusive rectangle with first <= last on both axes.
struct CellRange {
  CellRef first;
  CellRef last;
  bool operator==(const CellRange&) const = default;

  int64_t rows() const { return last.row - first.row + 1; }
  int64_t columns() const { return last.col - first.col + 1; }
  bool Contains(const CellRef& ref) const {
    return ref.row >= first.row && ref.row <= last.row && ref.col >= first.col &&
           ref.col <= last.col;
  }
};

// "C" -> 3, "XFD" -> 16384. Fails on empty input, anything but A..Z, or a column past
// kMaxColumn.
Result<int64_t> ParseColumn(std::string_view letters);

// 3 -> "C". REQUIRES: 1 <= col <= kMaxColumn.
std::string FormatColumn(int64_t col);

// "C2" -> {row 2, col 3}.
Result<CellRef> ParseCellRef(std::string_view text);

// {row 2, col 3} -> "C2". REQUIRES: the ref is inside the grid.
std::string FormatCellRef(const CellRef& ref);

// "A1:D20" -> A1..D20. Reversed or crossed corners are normalized ("D20:A1" and
// "A20:D1" are both A1:D20); a single cell "B3" is the range B3:B3.
Result<CellRange> ParseRange(std::string_view text);

// "A1:D20"; a one-cell range formats as "A1:A1" so that it parses back to itself.
std::string FormatRange(const CellRange& range);

// True if 1 <= row <= kMaxRow and 1 <= col <= kMaxColumn.
bool InGrid(const CellRef& ref);

}  // namespace sheetlog
