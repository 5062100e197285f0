// Seeded random cells and sheet edits for property tests (the reducer's, the snapshot
// pipeline's). Every run with the same seed makes the same sequence.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "src/sheet/sheet_edit.h"

namespace sheetlog::testing {

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  // Uniform in [lo, hi].
  int64_t In(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool OneIn(int n) { return In(1, n) == 1; }

  // Mostly distinct values, so that a cell landing in the wrong place shows; some nulls
  // (clears), formats and formatted blanks.
  Cell AnyCell() {
    Cell cell;
    switch (In(0, 9)) {
      case 0:
        break;  // null: a clear (or a formatted blank below)
      case 1:
        cell.value = CellValue::String("s" + std::to_string(++serial_));
        break;
      case 2:
        cell.value = CellValue::String("=A" + std::to_string(++serial_));
        break;
      case 3:
        cell.value = CellValue::Boolean(OneIn(2));
        break;
      default:
        cell.value = CellValue::Number(static_cast<double>(++serial_) / 4);
    }
    if (OneIn(5)) cell.format = OneIn(2) ? "0.00" : "0%";
    return cell;
  }
  Cell NonEmptyCell() {
    Cell cell = AnyCell();
    if (cell.empty()) cell.value = CellValue::Number(static_cast<double>(++serial_));
    return cell;
  }

 private:
  std::mt19937_64 rng_;
  int64_t serial_ = 0;
};

// A random edit on a rows x cols grid: positions run a little past the grid, counts
// past its size, so edges, overlaps and no-ops all come up. Any SheetEdit alternative
// may come out, including Import (sometimes unresolved) and SkippedEdit.
SheetEdit RandomSmallEdit(Random& rnd, int64_t rows, int64_t cols);

}  // namespace sheetlog::testing
