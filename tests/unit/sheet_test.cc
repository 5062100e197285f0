#include "src/sheet/sheet.h"

#include <gtest/gtest.h>

#include <memory>

#include "emulator/json_text.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

using json = nlohmann::json;

Cell Num(double v) { return Cell{CellValue::Number(v), ""}; }
Cell Str(std::string s) { return Cell{CellValue::String(std::move(s)), ""}; }

CellRef Ref(std::string_view a1) { return *ParseCellRef(a1); }

SheetEdit Edit(std::string_view type, std::string_view body) {
  auto edit = ParseEdit(type, 1, ParseJson(body));
  EXPECT_OK(edit);
  return edit.ok() ? *edit : SheetEdit(SkippedEdit{});
}

// "A1=1 B2=x" style listing of the sheet, for compact expectations.
std::string Dump(const Sheet& sheet) {
  std::string out;
  sheet.ForEachCell([&](const CellRef& ref, const Cell& cell) {
    if (!out.empty()) out += ' ';
    out += FormatCellRef(ref) + "=" + cell.DebugString();
  });
  return out;
}

Sheet Grid(std::initializer_list<std::pair<const char*, Cell>> cells,
           Sheet::Options options = {}) {
  std::vector<PlacedCell> placed;
  for (const auto& [ref, cell] : cells) placed.push_back({Ref(ref), cell});
  return Sheet::FromCells(std::move(placed), options);
}

// Each hand case runs twice: with the default compaction bounds (edits stay in the
// delta) and compacting after every edit (edits land in the base at once).
class SheetTest : public ::testing::TestWithParam<bool> {
 protected:
  Sheet::Options Options() const {
    Sheet::Options o;
    if (GetParam()) {
      o.compaction_floor = 0;
      o.max_transform_pieces = 0;
    }
    return o;
  }
  Sheet Make(std::initializer_list<std::pair<const char*, Cell>> cells) const {
    return Grid(cells, Options());
  }
};

TEST_P(SheetTest, TheSeedsEventLog) {
  // Event 1: import (the payload as the CSV/XLSX reader would hand it over).
  auto payload = std::make_shared<ImportedCells>(ImportedCells{{Ref("A1"), Str("Item")},
                                                               {Ref("B1"), Str("Price")},
                                                               {Ref("C1"), Str("Qty")},
                                                               {Ref("A2"), Str("Screws")},
                                                               {Ref("B2"), Num(0.02)},
                                                               {Ref("C2"), Num(50)}});
  Sheet sheet(Options());
  SheetEdit import = Edit("Import", R"({"format": "xlsx"})");
  std::get<ImportEdit>(import).cells = payload;
  sheet.Apply(import);
  // Event 2: insert a new row after row 1 with values.
  sheet.Apply(Edit(
      "InsertRows",
      R"({"after": 1, "values": {"A": "Nails", "B": 0.01, "C": 80, "E": {"value": 0.15, "format": "0%"}, "H": 0.08}})"));
  // Event 3: set C2 = 100.
  sheet.Apply(Edit("SetCell", R"({"ref": "C2", "value": 100})"));
  EXPECT_EQ(
      Dump(sheet),
      "A1=\"Item\" B1=\"Price\" C1=\"Qty\" A2=\"Nails\" B2=0.01 C2=100 E2=0.15 [0%] "
      "H2=0.08 A3=\"Screws\" B3=0.02 C3=50");
  EXPECT_EQ(sheet.stats().applied, 3);
  EXPECT_EQ(sheet.stats().unresolved_imports, 0);
}

TEST_P(SheetTest, InsertRowsAtTheTopAndInTheMiddle) {
  Sheet sheet = Make({{"A1", Num(1)}, {"A2", Num(2)}, {"B3", Num(3)}});
  sheet.Apply(InsertRowsEdit{0, 2, {{1, Str("top")}}});
  EXPECT_EQ(Dump(sheet), "A1=\"top\" A3=1 A4=2 B5=3");
  sheet.Apply(InsertRowsEdit{4, 1, {}});  // between A4 and B5
  EXPECT_EQ(Dump(sheet), "A1=\"top\" A3=1 A4=2 B6=3");
  sheet.Apply(InsertRowsEdit{100, 5, {}});  // beyond the last used row: nothing moves
  EXPECT_EQ(Dump(sheet), "A1=\"top\" A3=1 A4=2 B6=3");
  sheet.Apply(InsertRowsEdit{6, 1, {{2, Num(7)}}});  // right after the last used row
  EXPECT_EQ(Dump(sheet), "A1=\"top\" A3=1 A4=2 B6=3 B7=7");
}

TEST_P(SheetTest, DeleteRowsEdgesOverlapsAndBeyond) {
  Sheet sheet = Make(
      {{"A1", Num(1)}, {"A2", Num(2)}, {"A3", Num(3)}, {"A4", Num(4)}, {"B5", Num(5)}});
  sheet.Apply(DeleteRowsEdit{1, 1});  // the top edge
  EXPECT_EQ(Dump(sheet), "A1=2 A2=3 A3=4 B4=5");
  sheet.Apply(DeleteRowsEdit{4, 1});  // the last used row
  EXPECT_EQ(Dump(sheet), "A1=2 A2=3 A3=4");
  sheet.Apply(DeleteRowsEdit{10, 1000});  // wholly beyond the last used row: no-op
  EXPECT_EQ(Dump(sheet), "A1=2 A2=3 A3=4");
  sheet.Apply(DeleteRowsEdit{3, 1000});  // overlaps the end
  EXPECT_EQ(Dump(sheet), "A1=2 A2=3");
  sheet.Apply(DeleteRowsEdit{1, kMaxRow});  // everything
  EXPECT_EQ(Dump(sheet), "");
  EXPECT_EQ(sheet.CellCount(), 0u);
}

TEST_P(SheetTest, DeleteRowsMovesLaterWritesUp) {
  Sheet sheet = Make({{"A1", Num(1)}});
  sheet.Apply(SetCellEdit{Ref("C9"), Num(9)});
  sheet.Apply(SetCellEdit{Ref("C3"), Num(3)});
  sheet.Apply(DeleteRowsEdit{2, 2});  // C3 goes, C9 moves to C7
  EXPECT_EQ(Dump(sheet), "A1=1 C7=9");
}

TEST_P(SheetTest, ColumnsShiftLikeRows) {
  Sheet sheet = Make({{"A1", Num(1)}, {"B1", Num(2)}, {"C2", Num(3)}, {"E1", Num(5)}});
  sheet.Apply(Edit("InsertColumns", R"({"after": 0})"));
  EXPECT_EQ(Dump(sheet), "B1=1 C1=2 F1=5 D2=3");
  sheet.Apply(Edit("InsertColumns", R"({"after": "C", "count": 2})"));
  EXPECT_EQ(Dump(sheet), "B1=1 C1=2 H1=5 F2=3");
  sheet.Apply(Edit("DeleteColumns", R"({"at": "A"})"));
  EXPECT_EQ(Dump(sheet), "A1=1 B1=2 G1=5 E2=3");
  sheet.Apply(Edit("DeleteColumns", R"({"at": "F", "count": 100})"));  // overlaps the end
  EXPECT_EQ(Dump(sheet), "A1=1 B1=2 E2=3");
  sheet.Apply(Edit("DeleteColumns", R"({"at": "Z", "count": 3})"));  // beyond: no-op
  EXPECT_EQ(Dump(sheet), "A1=1 B1=2 E2=3");
  sheet.Apply(Edit("DeleteColumns", R"({"at": "B", "count": 3})"));
  EXPECT_EQ(Dump(sheet), "A1=1 B2=3");
}

TEST_P(SheetTest, CellsPushedPastTheLastRowFallOff) {
  Sheet sheet = Make({{"A2147483647", Num(1)}, {"A2147483646", Num(2)}});
  sheet.Apply(Edit("InsertRows", R"({"after": 2147483645})"));
  EXPECT_EQ(Dump(sheet), "A2147483647=2");
  Sheet wide = Make({{"FXSHRXW1", Num(1)}, {"A1", Num(0)}});
  wide.Apply(Edit("InsertColumns", R"({"after": "A"})"));
  EXPECT_EQ(Dump(wide), "A1=0");
  wide.Apply(Edit("SetCell", R"({"ref": "FXSHRXW2147483647", "value": "corner"})"));
  wide.Apply(Edit("DeleteRows", R"({"at": 2147483647})"));
  wide.Apply(Edit("DeleteColumns", R"({"at": "FXSHRXW"})"));
  EXPECT_EQ(Dump(wide), "A1=0");
}

TEST_P(SheetTest, WritesReplaceTheWholeCellAndNullClears) {
  Sheet sheet = Make({{"A1", Cell{CellValue::Number(1), "0.00"}}, {"B1", Num(2)}});
  sheet.Apply(Edit("SetCell", R"({"ref": "A1", "value": 5})"));
  EXPECT_EQ(*sheet.Find(Ref("A1")), Num(5));  // no format given: none kept
  sheet.Apply(Edit("SetCell", R"({"ref": "B1", "value": null})"));
  EXPECT_EQ(sheet.Find(Ref("B1")), nullptr);
  sheet.Apply(Edit("SetCell", R"({"ref": "C1", "value": null, "format": "0%"})"));
  ASSERT_NE(sheet.Find(Ref("C1")), nullptr);  // a formatted blank cell is kept
  EXPECT_TRUE(sheet.Find(Ref("C1"))->value.is_null());
  EXPECT_EQ(sheet.CellCount(), 2u);
  sheet.Apply(Edit("SetCellValueAndFormat",
                   R"({"row": 0, "column": 3, "value": "=A1*2", "format": "#"})"));
  EXPECT_EQ(*sheet.Find(Ref("D1")), (Cell{CellValue::String("=A1*2"), "#"}));
  sheet.Apply(Edit("SetCells", R"({"at": "A2", "rows": [[1, 2], [null, 4]]})"));
  sheet.Apply(
      Edit("SetCells", R"({"cells": {"A1": null, "B3": {"value": 6, "format": "0"}}})"));
  EXPECT_EQ(Dump(sheet), "C1=null [0%] D1=\"=A1*2\" [#] A2=1 B2=2 B3=6 [0]");
}

TEST_P(SheetTest, ImportReplaceClearsAndMergeWritesOver) {
  Sheet sheet = Make({{"A1", Num(1)}, {"D4", Num(4)}});
  ImportEdit merge;
  merge.mode = ImportEdit::Mode::kMerge;
  merge.at = Ref("B2");
  merge.cells = std::make_shared<ImportedCells>(
      ImportedCells{{{1, 1}, Num(10)}, {{3, 3}, Num(30)}, {{1, 2}, Cell{}}});
  sheet.Apply(merge);  // B2=10, D4=30 over the old D4, C2 cleared (was empty anyway)
  EXPECT_EQ(Dump(sheet), "A1=1 B2=10 D4=30");
  ImportEdit replace;
  replace.mode = ImportEdit::Mode::kReplace;
  replace.at = Ref("C1");
  replace.cells = std::make_shared<ImportedCells>(ImportedCells{{{2, 1}, Str("x")}});
  sheet.Apply(replace);
  EXPECT_EQ(Dump(sheet), "C2=\"x\"");
  EXPECT_EQ(sheet.stats().unresolved_imports, 0);
  ImportEdit unresolved;  // replace without its payload: clears, and is counted
  sheet.Apply(unresolved);
  EXPECT_EQ(Dump(sheet), "");
  EXPECT_EQ(sheet.stats().unresolved_imports, 1);
}

TEST_P(SheetTest, LargeImportsGoStraightToTheBase) {
  Sheet sheet = Make({{"A1", Num(-1)}, {"ZZ9999", Num(-2)}});
  auto cells = std::make_shared<ImportedCells>();
  for (int64_t r = 1; r <= 100; ++r) {
    for (int64_t c = 1; c <= 50; ++c) cells->push_back({{r, c}, Num(r * 100 + c)});
  }
  cells->push_back({{1, 1}, Str("dup")});  // a later duplicate wins
  sheet.Apply(InsertRowsEdit{0, 1, {}});   // pending structural edit before the merge
  ImportEdit merge;
  merge.mode = ImportEdit::Mode::kMerge;
  merge.at = Ref("A1");
  merge.cells = cells;
  sheet.Apply(merge);
  EXPECT_EQ(sheet.CellCount(), 5000u + 1);  // the old A1 moved to A2, then overwritten
  EXPECT_EQ(sheet.Value(Ref("A1")), CellValue::String("dup"));
  EXPECT_EQ(sheet.Value(Ref("A2")), CellValue::Number(201));
  EXPECT_EQ(sheet.Value(Ref("ZZ10000")), CellValue::Number(-2));
}

TEST_P(SheetTest, UnknownAndSystemEntriesAreSkippedAndCounted) {
  Sheet sheet = Make({{"A1", Num(1)}});
  sheet.Apply(*ParseEdit("Comment", 1, json("hello")));
  sheet.Apply(*ParseEdit("Snapshot", 1, json(nullptr)));
  sheet.Apply(*ParseEdit("EndSegment", 1, json(nullptr)));
  sheet.Apply(*ParseEdit("SetCell", 1, ParseJson(R"({"ref": "B1", "value": 2})")));
  EXPECT_EQ(Dump(sheet), "A1=1 B1=2");
  EXPECT_EQ(sheet.stats().skipped_unknown, 1);
  EXPECT_EQ(sheet.stats().skipped_system, 2);
  EXPECT_EQ(sheet.stats().applied, 1);
}

TEST_P(SheetTest, ReadRangeReturnsRowsOfValuesAndFormats) {
  Sheet sheet = Make({{"A1", Num(1)},
                      {"B2", Cell{CellValue::Number(2), "0.0"}},
                      {"D20", Str("far")},
                      {"E1", Num(99)}});
  sheet.Apply(InsertColumnsEdit{1, 1});  // B2 -> C2, D20 -> E20, E1 -> F1
  sheet.Apply(SetCellEdit{Ref("B1"), Str("new")});
  auto range = sheet.ReadRange(*ParseRange("A1:C3"));
  ASSERT_OK(range);
  ASSERT_EQ(range->values.size(), 3u);
  EXPECT_EQ(range->values[0],
            (std::vector<CellValue>{CellValue::Number(1), CellValue::String("new"),
                                    CellValue()}));
  EXPECT_EQ(range->values[1],
            (std::vector<CellValue>{CellValue(), CellValue(), CellValue::Number(2)}));
  EXPECT_EQ(range->values[2], (std::vector<CellValue>(3)));
  ASSERT_TRUE(range->has_formats);
  EXPECT_EQ(range->formats[1][2], "0.0");
  EXPECT_EQ(range->formats[0][0], "");

  auto plain = sheet.ReadRange(*ParseRange("E20:E20"));
  ASSERT_OK(plain);
  EXPECT_EQ(plain->values[0][0], CellValue::String("far"));
  EXPECT_FALSE(plain->has_formats);

  auto huge = sheet.ReadRange(*ParseRange("A1:XFD1048576"));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(huge.status().message(),
            "range A1:XFD1048576 spans 1048576 x 16384 cells, more than the limit of "
            "4194304");
}

TEST_P(SheetTest, UsedRangeAndOrder) {
  Sheet sheet(Options());
  EXPECT_EQ(sheet.UsedRange(), std::nullopt);
  sheet.Apply(SetCellEdit{Ref("C5"), Num(1)});
  sheet.Apply(SetCellEdit{Ref("B2"), Num(2)});
  sheet.Apply(SetCellEdit{Ref("F3"), Num(3)});
  EXPECT_EQ(sheet.UsedRange(), (CellRange{Ref("B2"), Ref("F5")}));
  std::vector<CellRef> order;
  for (const PlacedCell& c : sheet.Cells()) order.push_back(c.ref);
  EXPECT_EQ(order, (std::vector<CellRef>{Ref("B2"), Ref("F3"), Ref("C5")}));
}

INSTANTIATE_TEST_SUITE_P(Compaction, SheetTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "CompactEveryEdit" : "DeferredShifts";
                         });

TEST(SheetCompactionTest, CompactsWhenTheDeltaGrowsAndKeepsContent) {
  Sheet::Options options;
  options.compaction_floor = 8;
  options.max_transform_pieces = 6;
  Sheet sheet(options);
  Sheet reference(
      Sheet::Options{.compaction_floor = 1u << 30, .max_transform_pieces = 1u << 30});
  for (int i = 1; i <= 40; ++i) {
    // Writes far apart (row 5i) and inserts between them, so that the overlay grows
    // and the inserts split transform pieces once there is a base.
    SheetEdit write = SetCellEdit{{5 * i, i % 7 + 1}, Num(i)};
    SheetEdit shift = i % 3 == 0 ? SheetEdit(DeleteRowsEdit{2 * i, 1})
                                 : SheetEdit(InsertRowsEdit{3 * i, 1, {}});
    sheet.Apply(write);
    reference.Apply(write);
    sheet.Apply(shift);
    reference.Apply(shift);
  }
  EXPECT_GT(sheet.compactions(), 0);
  EXPECT_EQ(reference.compactions(), 0);
  EXPECT_EQ(sheet.Cells(), reference.Cells());
  sheet.Compact();
  reference.Compact();
  EXPECT_EQ(sheet, reference);
}

TEST(SheetFromCellsTest, DropsEmptyAndOutsideCellsAndKeepsTheLastDuplicate) {
  Sheet::Options small;
  small.row_limit = 5;
  small.col_limit = 5;
  Sheet sheet = Sheet::FromCells({{{2, 2}, Num(1)},
                                  {{6, 1}, Num(2)},
                                  {{1, 1}, Cell{}},
                                  {{2, 2}, Num(3)},
                                  {{0, 1}, Num(4)}},
                                 small);
  EXPECT_EQ(Dump(sheet), "B2=3");
}

}  // namespace
}  // namespace sheetlog
