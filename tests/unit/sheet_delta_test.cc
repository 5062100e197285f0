#include <gtest/gtest.h>

#include <memory>

#include "src/sheet/delta.h"

namespace sheetlog {
namespace {

Cell Num(double v) { return Cell{CellValue::Number(v), ""}; }
CellRef Ref(std::string_view a1) { return *ParseCellRef(a1); }

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
  std::vector<PlacedCell> old{{Ref("A1"), Num(1)}};
  EXPECT_EQ(delta.ApplyTo(old), old);
}

TEST(SheetDeltaTest, AWriteMovesWithALaterInsert) {
  SheetDelta delta;
  delta.Apply(SetCellEdit{Ref("B2"), Num(1)});
  delta.Apply(InsertRowsEdit{1, 3, {}});
  delta.Apply(InsertColumnsEdit{0, 1});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "C5=1");  // keyed by the final position
  EXPECT_EQ(delta.transform().Forward(Ref("B2")), Ref("C5"));
  EXPECT_EQ(delta.transform().Forward(Ref("A1")), Ref("B1"));
}

TEST(SheetDeltaTest, AWriteIntoALaterDeletedRowIsGone) {
  SheetDelta delta;
  delta.Apply(SetCellEdit{Ref("A3"), Num(3)});
  delta.Apply(SetCellEdit{Ref("A5"), Num(5)});
  delta.Apply(DeleteRowsEdit{2, 2});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "A3=5");
  delta.Apply(DeleteColumnsEdit{1, 1});
  EXPECT_TRUE(delta.overlay().empty());
}

TEST(SheetDeltaTest, ClearsAreRecordedAndRemoveOldCells) {
  SheetDelta delta;
  delta.Apply(SetCellEdit{Ref("A1"), Cell{}});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "A1=clear");
  delta.Apply(InsertRowsEdit{0, 1, {}});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "A2=clear");
  // The old A1 moved to A2 and was cleared there; the old B1 moved to B2.
  EXPECT_EQ(Dump(delta.ApplyTo({{Ref("A1"), Num(1)}, {Ref("B1"), Num(2)}})), "B2=2");
}

TEST(SheetDeltaTest, InsertRowValuesLandInTheFirstInsertedRow) {
  SheetDelta delta;
  delta.Apply(InsertRowsEdit{2, 2, {{1, Num(7)}, {3, Num(8)}}});
  EXPECT_EQ(DumpOverlay(delta.overlay()), "A3=7 C3=8");
  EXPECT_EQ(Dump(delta.ApplyTo({{Ref("A3"), Num(1)}})), "A3=7 C3=8 A5=1");
}

TEST(SheetDeltaTest, ReplacingImportDropsEverythingOlder) {
  SheetDelta delta;
  delta.Apply(SetCellEdit{Ref("A1"), Num(1)});
  ImportEdit replace;
  replace.at = Ref("B2");
  replace.cells = std::make_shared<ImportedCells>(ImportedCells{{{1, 1}, Num(9)}});
  delta.Apply(replace);
  EXPECT_TRUE(delta.replaced());
  EXPECT_EQ(DumpOverlay(delta.overlay()), "B2=9");
  EXPECT_TRUE(delta.transform().rows().pieces().empty());
  delta.Apply(InsertRowsEdit{0, 1, {}});
  EXPECT_EQ(Dump(delta.ApplyTo({{Ref("A1"), Num(1)}, {Ref("C3"), Num(3)}})), "B3=9");
  delta.Reset();
  EXPECT_TRUE(delta.IsNoop());
}

TEST(SheetDeltaTest, MergingImportWritesOverAndClips) {
  SheetDelta delta(/*row_limit=*/3, /*col_limit=*/3);
  ImportEdit merge;
  merge.mode = ImportEdit::Mode::kMerge;
  merge.at = Ref("B2");
  merge.cells = std::make_shared<ImportedCells>(
      ImportedCells{{{1, 1}, Num(1)}, {{3, 1}, Num(2)}, {{1, 3}, Num(3)}});
  delta.Apply(merge);
  EXPECT_FALSE(delta.replaced());
  EXPECT_EQ(DumpOverlay(delta.overlay()), "B2=1");  // the other two are off the grid
  EXPECT_EQ(Dump(delta.ApplyTo({{Ref("A1"), Num(0)}, {Ref("B2"), Num(5)}})), "A1=0 B2=1");
}

TEST(SheetDeltaTest, MergerStreamsInOrderWithOverlayInterleaved) {
  SheetDelta delta;
  delta.Apply(InsertRowsEdit{1, 1, {{2, Num(20)}}});  // B2 = 20 in a new row 2
  delta.Apply(SetCellEdit{Ref("A1"), Num(10)});       // over an old cell
  delta.Apply(SetCellEdit{Ref("C9"), Num(90)});       // after every old cell
  std::vector<std::string> seen;
  DeltaMerger merger(delta, [&](const CellRef& ref, const Cell& cell) {
    seen.push_back(FormatCellRef(ref) + "=" + cell.DebugString());
  });
  merger.Add(Ref("A1"), Num(1));
  merger.Add(Ref("B1"), Num(2));
  merger.Add(Ref("A2"), Num(3));
  merger.Finish();
  EXPECT_EQ(seen, (std::vector<std::string>{"A1=10", "B1=2", "B2=20", "A3=3", "C9=90"}));
}

TEST(OverlayTest, SizeCountsWritesAndClears) {
  Overlay overlay(10, 10);
  overlay.Set(Ref("A1"), Num(1));
  overlay.Set(Ref("A1"), Num(2));  // replaces
  overlay.Set(Ref("B1"), Cell{});  // a clear
  overlay.Set(Ref("K1"), Num(3));  // outside a 10-column grid: ignored
  EXPECT_EQ(overlay.size(), 2u);
  EXPECT_EQ(*overlay.Find(Ref("A1")), Num(2));
  EXPECT_TRUE(overlay.Find(Ref("B1"))->empty());
  EXPECT_EQ(overlay.Find(Ref("C1")), nullptr);
  overlay.InsertColumns(0, 9);  // B1 falls off, A1 -> J1
  EXPECT_EQ(DumpOverlay(overlay), "J1=2");
  EXPECT_EQ(overlay.size(), 1u);
  overlay.InsertRows(0, 10);  // falls off
  EXPECT_TRUE(overlay.empty());
  EXPECT_TRUE(overlay.rows().empty());
}

}  // namespace
}  // namespace sheetlog
