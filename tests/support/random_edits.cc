#include "tests/support/random_edits.h"

#include <map>
#include <memory>
#include <vector>

namespace sheetlog::testing {

SheetEdit RandomSmallEdit(Random& rnd, int64_t rows, int64_t cols) {
  auto ref = [&] { return CellRef{rnd.In(1, rows + 1), rnd.In(1, cols + 1)}; };
  switch (rnd.In(0, 13)) {
    case 0:
    case 1:
    case 2:
      return SetCellEdit{ref(), rnd.AnyCell()};
    case 3:
      return SetCellValueAndFormatEdit{ref(), rnd.AnyCell()};
    case 4: {
      SetCellsEdit e;
      e.form = SetCellsEdit::Form::kMap;
      std::map<CellRef, Cell> cells;
      for (int i = rnd.In(0, 4); i > 0; --i) cells[ref()] = rnd.AnyCell();
      for (auto& [r, c] : cells) e.cells.push_back({r, c});
      return e;
    }
    case 5: {
      SetCellsEdit e;
      e.form = SetCellsEdit::Form::kRows;
      e.at = ref();
      for (int i = rnd.In(0, 3); i > 0; --i) {
        std::vector<Cell> row;
        for (int j = rnd.In(0, 3); j > 0; --j) row.push_back(rnd.AnyCell());
        e.rows.push_back(std::move(row));
      }
      return e;
    }
    case 6:
    case 7: {
      InsertRowsEdit e{rnd.In(0, rows + 1), rnd.In(1, rows + 2), {}};
      std::map<int64_t, Cell> values;
      for (int i = rnd.In(0, 2); i > 0; --i) values[rnd.In(1, cols + 1)] = rnd.AnyCell();
      e.values.assign(values.begin(), values.end());
      return e;
    }
    case 8:
    case 9:
      return DeleteRowsEdit{rnd.In(1, rows + 2), rnd.In(1, rows + 2)};
    case 10:
      return InsertColumnsEdit{rnd.In(0, cols + 1), rnd.In(1, cols + 2)};
    case 11:
      return DeleteColumnsEdit{rnd.In(1, cols + 2), rnd.In(1, cols + 2)};
    case 12: {
      ImportEdit e;
      e.mode = rnd.OneIn(2) ? ImportEdit::Mode::kReplace : ImportEdit::Mode::kMerge;
      e.at = ref();
      if (!rnd.OneIn(8)) {  // sometimes unresolved
        auto cells = std::make_shared<ImportedCells>();
        for (int i = rnd.In(0, 5); i > 0; --i) {
          cells->push_back({{rnd.In(1, rows), rnd.In(1, cols)}, rnd.AnyCell()});
        }
        e.cells = cells;
      }
      return e;
    }
    default:
      return SkippedEdit{rnd.OneIn(2) ? "Comment" : "Snapshot", 1, false};
  }
}

}  // namespace sheetlog::testing
