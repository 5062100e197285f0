#include <gtest/gtest.h>

#include <memory>

#include "src/sheet/delta.h"

namespace sheetlog {
namespace {

Cell Number(double v) { return Cell{CellValue::Number(v), ""}; }
CellRef A1(std::string_view a1) { return *ParseCellRef(a1); }

std::string Dump(const std::vector<PlacedCell>& cells) {
  std::string out;
  for (const PlacedCell& c : cells) {
    if (!out.empty()) out += ' ';
    out += FormatCellRef(c.ref) + "=" + c.cell.DebugString();
  }
  return out;
}

std::string DumpOverlay(const Overlay& overlay) {
  std::string out;
  overlay.ForEach([&](const CellRef& ref, const Cell& cell) {
    if (!out.empty()) out += ' ';
    out += FormatCellRef(ref) + "=" + (cell.empty() ? "clear" : cell.DebugString());
  });
  return out;
}

TEST(SheetDeltaTest, NothingHappenedIsANoop) {
  SheetDelta delta;
  EXPECT_TRUE(delta.IsNoop());
  delta.Apply(SkippedEdit{"Comment", 1, false});
  EXPECT_TRUE(delta.IsNoop());
  EXPECT_EQ(delta.stats().skipped_unknown, 1);
  std::vector<PlacedCell> old{{A1("A1"), Number(1)}};
  EXPECT_EQ(delta.ApplyTo(old), old);
}

TEST(SheetDeltaTest, AWriteMovesWithALaterInsert) {
  SheetDelta delta;
  delta.Apply(SetCellEdit{A1("B2"), Number(1)});
  delta.Apply(InsertRowsEdit{1, 3, {}});
  delta.Apply(InsertColumnsEdit{0, 1});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "C5=1");  // keyed by the final position
  EXPECT_EQ(delta.transform().Forward(A1("B2")), A1("C5"));
  EXPECT_EQ(delta.transform().Forward(A1("A1")), A1("B1"));
}

TEST(SheetDeltaTest, AWriteIntoALaterDeletedRowIsGone) {
  SheetDelta delta;
  delta.Apply(SetCellEdit{A1("A3"), Number(3)});
  delta.Apply(SetCellEdit{A1("A5"), Number(5)});
  delta.Apply(DeleteRowsEdit{2, 2});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "A3=5");
  delta.Apply(DeleteColumnsEdit{1, 1});
  EXPECT_TRUE(delta.overlay().empty());
}

TEST(SheetDeltaTest, ClearsAreRecordedAndRemoveOldCells) {
  SheetDelta delta;
  delta.Apply(SetCellEdit{A1("A1"), Cell{}});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "A1=clear");
  delta.Apply(InsertRowsEdit{0, 1, {}});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "A2=clear");
  // The old A1 moved to A2 and was cleared there; the old B1 moved to B2.
  EXPECT_EQ(Dump(delta.ApplyTo({{A1("A1"), Number(1)}, {A1("B1"), Number(2)}})), "B2=2");
}

TEST(SheetDeltaTest, InsertRowValuesLandInTheFirstInsertedRow) {
  SheetDelta delta;
  delta.Apply(InsertRowsEdit{2, 2, {{1, Number(7)}, {3, Number(8)}}});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "A3=7 C3=8");
  EXPECT_EQ(Dump(delta.ApplyTo({{A1("A3"), Number(1)}})), "A3=7 C3=8 A5=1");
}

TEST(SheetDeltaTest, ReplacingImportDropsEverythingOlder) {
  SheetDelta delta;
  delta.Apply(SetCellEdit{A1("A1"), Number(1)});
  ImportEdit replace;
  replace.at = A1("B2");
  replace.cells = std::make_shared<ImportedCells>(ImportedCells{{{1, 1}, Number(9)}});
  delta.Apply(replace);
  EXPECT_TRUE(delta.replaced());
  EXPECT_EQ(DumpOverlay(delta.overlay()), "B2=9");
  EXPECT_TRUE(delta.transform().rows().pieces().empty());
  delta.Apply(InsertRowsEdit{0, 1, {}});
  EXPECT_EQ(Dump(delta.ApplyTo({{A1("A1"), Number(1)}, {A1("C3"), Number(3)}})), "B3=9");
  delta.Reset();
  EXPECT_TRUE(delta.IsNoop());
}

TEST(SheetDeltaTest, MergingImportWritesOverAndClips) {
  SheetDelta delta(/*row_limit=*/3, /*col_limit=*/3);
  ImportEdit merge;
  merge.mode = ImportEdit::Mode::kMerge;
  merge.at = A1("B2");
  merge.cells = std::make_shared<ImportedCells>(
      ImportedCells{{{1, 1}, Number(1)}, {{3, 1}, Number(2)}, {{1, 3}, Number(3)}});
  delta.Apply(merge);
  EXPECT_FALSE(delta.replaced());
  EXPECT_EQ(DumpOverlay(delta.overlay()), "B2=1");  // the other two are off the grid
  EXPECT_EQ(Dump(delta.ApplyTo({{A1("A1"), Number(0)}, {A1("B2"), Number(5)}})),
            "A1=0 B2=1");
}

TEST(SheetDeltaTest, MergerStreamsInOrderWithOverlayInterleaved) {
  SheetDelta delta;
  delta.Apply(InsertRowsEdit{1, 1, {{2, Number(20)}}});  // B2 = 20 in a new row 2
  delta.Apply(SetCellEdit{A1("A1"), Number(10)});        // over an old cell
  delta.Apply(SetCellEdit{A1("C9"), Number(90)});        // after every old cell
  std::vector<std::string> seen;
  DeltaMerger merger(delta, [&](const CellRef& ref, const Cell& cell) {
    seen.push_back(FormatCellRef(ref) + "=" + cell.DebugString());
  });
  merger.Add(A1("A1"), Number(1));
  merger.Add(A1("B1"), Number(2));
  merger.Add(A1("A2"), Number(3));
  merger.Finish();
  EXPECT_EQ(seen, (std::vector<std::string>{"A1=10", "B1=2", "B2=20", "A3=3", "C9=90"}));
}

TEST(OverlayTest, SizeCountsWritesAndClears) {
  Overlay overlay(10, 10);
  overlay.Set(A1("A1"), Number(1));
  overlay.Set(A1("A1"), Number(2));  // replaces
  overlay.Set(A1("B1"), Cell{});     // a clear
  overlay.Set(A1("K1"), Number(3));  // outside a 10-column grid: ignored
  EXPECT_EQ(overlay.size(), 2u);
  EXPECT_EQ(*overlay.Find(A1("A1")), Number(2));
  EXPECT_TRUE(overlay.Find(A1("B1"))->empty());
  EXPECT_EQ(overlay.Find(A1("C1")), nullptr);
  overlay.InsertColumns(0, 9);  // B1 falls off, A1 -> J1
  EXPECT_EQ(DumpOverlay(overlay), "J1=2");
  EXPECT_EQ(overlay.size(), 1u);
  overlay.InsertRows(0, 10);  // falls off
  EXPECT_TRUE(overlay.empty());
  EXPECT_TRUE(overlay.rows().empty());
}

TEST(OverlayTest, SetRunEqualsASetPerCell) {
  // Each case: writes already recorded in row 2, then a run written into it.
  struct Case {
    std::vector<int64_t> recorded;  // columns
    int64_t first_col;
    int cells;
  };
  for (const Case& c : std::vector<Case>{
           {{}, 1, 3},      // an empty row
           {{1, 2}, 3, 3},  // after the last recorded column: appended
           {{2, 5}, 1, 6},  // over and between recorded columns
           {{4}, 2, 3},     // its last cell replaces a recorded one
           {{}, 8, 5},      // past the 10-column grid: clipped
           {{9}, 10, 2},    // only the first cell is inside
           {{}, -1, 4},     // starts left of the grid
           {{1}, 11, 2},    // wholly outside: nothing, the row unchanged
       }) {
    Overlay run(10, 10);
    Overlay each(10, 10);
    for (int64_t col : c.recorded) {
      run.Set({2, col}, Number(-col));
      each.Set({2, col}, Number(-col));
    }
    std::vector<Cell> cells;
    for (int i = 0; i < c.cells; ++i) cells.push_back(i == 1 ? Cell{} : Number(i));
    for (int i = 0; i < c.cells; ++i) each.Set({2, c.first_col + i}, cells[i]);
    run.SetRun(2, c.first_col, std::move(cells));
    SCOPED_TRACE("first_col " + std::to_string(c.first_col));
    EXPECT_EQ(DumpOverlay(run), DumpOverlay(each));
    EXPECT_EQ(run.size(), each.size());
    EXPECT_EQ(run, each);
  }
  Overlay outside(10, 10);
  outside.SetRun(11, 1, {Number(1)});  // a row outside the grid
  outside.SetRun(0, 1, {Number(1)});
  outside.SetRun(3, 1, {});
  EXPECT_TRUE(outside.empty());
  EXPECT_TRUE(outside.rows().empty());
}

TEST(SheetDeltaTest, ApplyingAMovedEditEqualsApplyingACopy) {
  const std::vector<SheetEdit> edits = {
      SetCellsEdit{SetCellsEdit::Form::kRows,
                   {},
                   A1("B2"),
                   {{Number(1), Number(2), Cell{}}, {}, {Number(3)}}},
      SetCellEdit{A1("C2"), Number(4)},
      SetCellsEdit{SetCellsEdit::Form::kMap,
                   {{A1("A1"), Number(5)}, {A1("D2"), Number(6)}},
                   {},
                   {}},
      InsertRowsEdit{1, 1, {{2, Number(7)}}},
      SetCellValueAndFormatEdit{A1("A9"), Cell{CellValue::Number(8), "0.0"}},
      SetCellsEdit{SetCellsEdit::Form::kRows, {}, A1("A3"), {{Number(9), Number(10)}}},
      DeleteColumnsEdit{1, 1},
      SkippedEdit{"Comment", 1, false},
  };
  SheetDelta copied;
  SheetDelta moved;
  for (const SheetEdit& edit : edits) {
    copied.Apply(edit);
    moved.Apply(SheetEdit(edit));
  }
  EXPECT_EQ(DumpOverlay(moved.overlay()), DumpOverlay(copied.overlay()));
  EXPECT_EQ(DumpOverlay(moved.overlay()), "A2=7 A3=10 B3=4 C3=6 A5=3");
  EXPECT_EQ(moved.overlay(), copied.overlay());
  EXPECT_EQ(moved.transform(), copied.transform());
  EXPECT_EQ(moved.stats(), copied.stats());
  EXPECT_EQ(moved.stats().applied, 7);
}

}  // namespace
}  // namespace sheetlog
