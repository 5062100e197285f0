#include "src/sheet/sheet_edit.h"

#include <gtest/gtest.h>

#include "emulator/json_text.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

using json = nlohmann::json;

Result<SheetEdit> Parse(std::string_view type, std::string_view body) {
  return ParseEdit(type, 1, ParseJson(body));
}

std::string Error(std::string_view type, std::string_view body) {
  auto edit = Parse(type, body);
  EXPECT_FALSE(edit.ok()) << type << " " << body;
  if (edit.ok()) return "";
  EXPECT_EQ(edit.status().code(), StatusCode::kInvalidArgument);
  return edit.status().message();
}

template <typename T>
T ParseAs(std::string_view type, std::string_view body) {
  auto edit = Parse(type, body);
  EXPECT_OK(edit);
  if (!edit.ok()) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(*edit));
  return std::get<T>(*edit);
}

TEST(SheetEditTest, TypeClassification) {
  for (const char* type :
       {"SetCell", "SetCells", "InsertRows", "DeleteRows", "InsertColumns",
        "DeleteColumns", "Import", "SetCellValueAndFormat"}) {
    EXPECT_TRUE(IsBuiltinType(type)) << type;
    EXPECT_FALSE(IsReservedType(type)) << type;
  }
  EXPECT_TRUE(IsReservedType("Snapshot"));
  EXPECT_TRUE(IsReservedType("EndSegment"));
  EXPECT_FALSE(IsBuiltinType("Snapshot"));
  EXPECT_FALSE(IsBuiltinType("setcell"));
  EXPECT_FALSE(IsBuiltinType("Comment"));
}

TEST(SheetEditTest, SetCell) {
  auto e = ParseAs<SetCellEdit>("SetCell", R"({"ref": "C2", "value": 100})");
  EXPECT_EQ(e.ref, (CellRef{2, 3}));
  EXPECT_EQ(e.cell, (Cell{CellValue::Number(100), ""}));
  auto f =
      ParseAs<SetCellEdit>("SetCell", R"({"ref": "E2", "value": 0.15, "format": "0%"})");
  EXPECT_EQ(f.cell, (Cell{CellValue::Number(0.15), "0%"}));
  auto clear = ParseAs<SetCellEdit>("SetCell", R"({"ref": "A1", "value": null})");
  EXPECT_TRUE(clear.cell.empty());
}

TEST(SheetEditTest, SetCellErrorsNameTheField) {
  EXPECT_EQ(Error("SetCell", R"({"ref": "C0", "value": 1})"),
            "SetCell: field 'ref': bad cell reference 'C0': rows start at 1");
  EXPECT_EQ(
      Error("SetCell", R"({"ref": 3, "value": 1})"),
      "SetCell: field 'ref' must be a cell reference string like \"C2\", got number");
  EXPECT_EQ(Error("SetCell", R"({"value": 1})"), "SetCell: missing field 'ref'");
  EXPECT_EQ(Error("SetCell", R"({"ref": "A1"})"), "SetCell: missing field 'value'");
  EXPECT_EQ(Error("SetCell", R"({"ref": "A1", "value": 1, "colour": "red"})"),
            "SetCell: unknown field 'colour'");
  EXPECT_EQ(Error("SetCell", R"({"ref": "A1", "value": {"value": 1}})"),
            "SetCell: field 'value': expected a number, string, boolean or null, got "
            "object");
  EXPECT_EQ(Error("SetCell", R"({"ref": "A1", "value": [1]})"),
            "SetCell: field 'value': expected a number, string, boolean or null, got "
            "array");
  EXPECT_EQ(Error("SetCell", R"({"ref": "A1", "value": 1, "format": null})"),
            "SetCell: field 'format' must be a string, got null");
  EXPECT_EQ(Error("SetCell", "[]"), "SetCell: body must be a JSON object, got array");
  EXPECT_EQ(Error("SetCell", "null"), "SetCell: body must be a JSON object, got null");
}

TEST(SheetEditTest, SetCellsMapForm) {
  auto e = ParseAs<SetCellsEdit>(
      "SetCells",
      R"({"cells": {"B2": {"value": 3, "format": "0.0"}, "A10": "x", "A2": true}})");
  EXPECT_EQ(e.form, SetCellsEdit::Form::kMap);
  ASSERT_EQ(e.cells.size(), 3u);
  // Sorted by position, not by key text.
  EXPECT_EQ(e.cells[0].ref, (CellRef{2, 1}));
  EXPECT_EQ(e.cells[1].ref, (CellRef{2, 2}));
  EXPECT_EQ(e.cells[1].cell, (Cell{CellValue::Number(3), "0.0"}));
  EXPECT_EQ(e.cells[2].ref, (CellRef{10, 1}));
  EXPECT_EQ(Error("SetCells", R"({"cells": {"B0": 1}})"),
            "SetCells: field 'cells.B0': bad cell reference 'B0': rows start at 1");
  EXPECT_EQ(
      Error("SetCells", R"({"cells": {"B1": [1]}})"),
      "SetCells: field 'cells.B1': expected a value or {\"value\", \"format\"}, got "
      "array");
  EXPECT_EQ(Error("SetCells", R"({"cells": {"B1": {"value": 1, "x": 2}}})"),
            "SetCells: field 'cells.B1': unknown field 'x' in a cell");
  EXPECT_EQ(Error("SetCells", R"({"cells": [1]})"),
            "SetCells: field 'cells' must be an object of cell references, got array");
}

TEST(SheetEditTest, SetCellsRowsForm) {
  auto e = ParseAs<SetCellsEdit>(
      "SetCells",
      R"({"at": "B3", "rows": [[1, "a"], [], [null, {"value": 2, "format": "0"}]]})");
  EXPECT_EQ(e.form, SetCellsEdit::Form::kRows);
  EXPECT_EQ(e.at, (CellRef{3, 2}));
  std::vector<PlacedCell> cells;
  e.ForEachCell([&](const CellRef& ref, const Cell& cell) {
    cells.push_back({ref, cell});
  });
  ASSERT_EQ(cells.size(), 4u);
  EXPECT_EQ(cells[0].ref, (CellRef{3, 2}));
  EXPECT_EQ(cells[1].ref, (CellRef{3, 3}));
  EXPECT_EQ(cells[2].ref, (CellRef{5, 2}));
  EXPECT_TRUE(cells[2].cell.empty());
  EXPECT_EQ(cells[3].ref, (CellRef{5, 3}));
  EXPECT_EQ(cells[3].cell.format, "0");
  EXPECT_EQ(ParseAs<SetCellsEdit>("SetCells", R"({"rows": [[1]]})").at, (CellRef{1, 1}));
}

TEST(SheetEditTest, SetCellsErrors) {
  EXPECT_EQ(Error("SetCells", R"({"cells": {}, "rows": []})"),
            "SetCells: give either 'cells' or 'at' and 'rows', not both forms");
  EXPECT_EQ(Error("SetCells", R"({"at": "A1"})"),
            "SetCells: missing field 'cells' or 'rows'");
  EXPECT_EQ(Error("SetCells", "{}"), "SetCells: missing field 'cells' or 'rows'");
  EXPECT_EQ(Error("SetCells", R"({"rows": [1]})"),
            "SetCells: field 'rows[0]' must be an array, got number");
  EXPECT_EQ(Error("SetCells", R"({"rows": [[1], [2, {}]]})"),
            "SetCells: field 'rows[1][1]': missing field 'value' in a cell");
  EXPECT_EQ(Error("SetCells", R"({"rows": {}})"),
            "SetCells: field 'rows' must be an array of arrays, got object");
  EXPECT_EQ(Error("SetCells", R"({"at": "A2147483647", "rows": [[1], [2]]})"),
            "SetCells: field 'rows' has 2 rows from row 2147483647, which overflows the "
            "grid (last row 2147483647)");
  EXPECT_EQ(Error("SetCells", R"({"at": "FXSHRXW1", "rows": [[1, 2]]})"),
            "SetCells: field 'rows[0]' has 2 cells from column FXSHRXW, which overflows "
            "the grid (last column FXSHRXW)");
  EXPECT_OK(Parse("SetCells", R"({"at": "FXSHRXW2147483647", "rows": [[1]]})"));
}

TEST(SheetEditTest, InsertRows) {
  auto e = ParseAs<InsertRowsEdit>(
      "InsertRows",
      R"({"after": 1000001, "values": {"A": "Nails", "B": 0.01, "C": 80, "E": {"value": 0.15, "format": "0%"}, "H": 0.08}})");
  EXPECT_EQ(e.after, 1000001);
  EXPECT_EQ(e.count, 1);
  ASSERT_EQ(e.values.size(), 5u);
  EXPECT_EQ(e.values[0].first, 1);
  EXPECT_EQ(e.values[3],
            (std::pair<int64_t, Cell>{5, Cell{CellValue::Number(0.15), "0%"}}));
  EXPECT_EQ(e.values[4].first, 8);
  EXPECT_EQ(ParseAs<InsertRowsEdit>("InsertRows", R"({"after": 0, "count": 3})").count,
            3);
  EXPECT_EQ(
      ParseAs<InsertRowsEdit>("InsertRows", R"({"after": 2147483646, "count": 1})").after,
      2147483646);
}

TEST(SheetEditTest, RowCountErrors) {
  EXPECT_EQ(Error("InsertRows", "{}"), "InsertRows: missing field 'after'");
  EXPECT_EQ(
      Error("InsertRows", R"({"after": -1})"),
      "InsertRows: field 'after' must be a row number from 0 (insert at the top) to "
      "2147483646, got -1");
  EXPECT_EQ(
      Error("InsertRows", R"({"after": 2147483647})"),
      "InsertRows: field 'after' must be a row number from 0 (insert at the top) to "
      "2147483646, got 2147483647");
  EXPECT_EQ(
      Error("InsertRows", R"({"after": 1.5})"),
      "InsertRows: field 'after' must be a row number from 0 (insert at the top) to "
      "2147483646, got 1.5");
  EXPECT_EQ(
      Error("InsertRows", R"({"after": "3"})"),
      "InsertRows: field 'after' must be a row number from 0 (insert at the top) to "
      "2147483646, got string");
  EXPECT_EQ(Error("InsertRows", R"({"after": 1, "count": 0})"),
            "InsertRows: field 'count' must be a positive integer, got 0");
  EXPECT_EQ(Error("InsertRows", R"({"after": 1, "count": -4})"),
            "InsertRows: field 'count' must be a positive integer, got -4");
  EXPECT_EQ(Error("InsertRows", R"({"after": 1, "count": 18446744073709551615})"),
            "InsertRows: field 'count' must be a positive integer, got "
            "18446744073709551615");
  EXPECT_EQ(
      Error("InsertRows", R"({"after": 2147483645, "count": 3})"),
      "InsertRows: field 'count' of 3 rows starting at row 2147483646 overflows the "
      "grid (last row 2147483647)");
  EXPECT_EQ(Error("InsertRows", R"({"after": 1, "values": {"a": 1}})"),
            "InsertRows: field 'values.a': bad column 'a': column letters must be upper "
            "case");
  EXPECT_EQ(Error("InsertRows", R"({"after": 1, "values": ["x"]})"),
            "InsertRows: field 'values' must be an object of column letters, got array");
  EXPECT_EQ(Error("DeleteRows", R"({"at": 0})"),
            "DeleteRows: field 'at' must be a row number from 1 to 2147483647, got 0");
  EXPECT_EQ(Error("DeleteRows", R"({"at": 5, "count": 0})"),
            "DeleteRows: field 'count' must be a positive integer, got 0");
  EXPECT_EQ(
      Error("DeleteRows", R"({"at": 2147483647, "count": 2})"),
      "DeleteRows: field 'count' of 2 rows starting at row 2147483647 overflows the "
      "grid (last row 2147483647)");
  EXPECT_EQ(Error("DeleteRows", R"({"at": 1, "cnt": 2})"),
            "DeleteRows: unknown field 'cnt'");
  auto e = ParseAs<DeleteRowsEdit>("DeleteRows", R"({"at": 2147483647})");
  EXPECT_EQ(e.at, kMaxRow);
  EXPECT_EQ(e.count, 1);
  EXPECT_EQ(
      ParseAs<DeleteRowsEdit>("DeleteRows", R"({"at": 1, "count": 2147483647})").count,
      kMaxRow);
}

TEST(SheetEditTest, Columns) {
  EXPECT_EQ(ParseAs<InsertColumnsEdit>("InsertColumns", R"({"after": "C"})"),
            (InsertColumnsEdit{3, 1}));
  EXPECT_EQ(ParseAs<InsertColumnsEdit>("InsertColumns", R"({"after": 0, "count": 2})"),
            (InsertColumnsEdit{0, 2}));
  EXPECT_EQ(ParseAs<DeleteColumnsEdit>("DeleteColumns", R"({"at": "XFD", "count": 4})"),
            (DeleteColumnsEdit{16384, 4}));
  EXPECT_EQ(Error("InsertColumns", R"({"after": 3})"),
            "InsertColumns: field 'after' must be column letters like \"C\" or 0 (insert "
            "before column A), got 3");
  EXPECT_EQ(Error("InsertColumns", R"({"after": "c"})"),
            "InsertColumns: field 'after': bad column 'c': column letters must be upper "
            "case");
  EXPECT_EQ(Error("InsertColumns", R"({"after": "FXSHRXW"})"),
            "InsertColumns: field 'after' is the last column FXSHRXW: there is no room "
            "after it");
  EXPECT_EQ(Error("InsertColumns", R"({"after": "FXSHRXV", "count": 2})"),
            "InsertColumns: field 'count' of 2 columns starting at column 2147483647 "
            "overflows the grid (last column 2147483647)");
  EXPECT_EQ(Error("DeleteColumns", R"({"at": 0})"),
            "DeleteColumns: field 'at' must be column letters like \"C\", got 0");
  EXPECT_EQ(Error("DeleteColumns", R"({"at": "A", "count": 0})"),
            "DeleteColumns: field 'count' must be a positive integer, got 0");
  EXPECT_EQ(Error("DeleteColumns", R"({"at": ""})"),
            "DeleteColumns: field 'at': bad column '': missing column letters");
  EXPECT_EQ(Error("DeleteColumns", "{}"), "DeleteColumns: missing field 'at'");
}

TEST(SheetEditTest, Import) {
  auto e = ParseAs<ImportEdit>("Import", R"({"format": "xlsx"})");
  EXPECT_EQ(e.format, ImportEdit::Format::kXlsx);
  EXPECT_EQ(e.at, (CellRef{1, 1}));
  EXPECT_EQ(e.mode, ImportEdit::Mode::kReplace);
  EXPECT_EQ(e.cells, nullptr);
  auto m =
      ParseAs<ImportEdit>("Import", R"({"format": "csv", "at": "B2", "mode": "merge"})");
  EXPECT_EQ(m.format, ImportEdit::Format::kCsv);
  EXPECT_EQ(m.at, (CellRef{2, 2}));
  EXPECT_EQ(m.mode, ImportEdit::Mode::kMerge);
  EXPECT_EQ(Error("Import", "{}"), "Import: missing field 'format'");
  EXPECT_EQ(Error("Import", R"({"format": "ods"})"),
            "Import: field 'format' must be \"csv\" or \"xlsx\", got \"ods\"");
  EXPECT_EQ(Error("Import", R"({"format": "csv", "mode": "append"})"),
            "Import: field 'mode' must be \"replace\" or \"merge\", got \"append\"");
  EXPECT_EQ(Error("Import", R"({"format": "csv", "at": "A0"})"),
            "Import: field 'at': bad cell reference 'A0': rows start at 1");
  EXPECT_EQ(Error("Import", R"({"format": "csv", "key": "x"})"),
            "Import: unknown field 'key'");
}

TEST(SheetEditTest, ImportNamesAnXlsxWorksheet) {
  auto e = ParseAs<ImportEdit>("Import", R"({"format": "xlsx", "sheet": "Q3 data"})");
  EXPECT_EQ(e.worksheet, "Q3 data");
  EXPECT_EQ(EncodeEditBody(e)["sheet"], "Q3 data");
  EXPECT_EQ(ParseEdit("Import", 1, EncodeEditBody(e)).value(), SheetEdit(e));
  EXPECT_FALSE(EncodeEditBody(ParseAs<ImportEdit>("Import", R"({"format": "xlsx"})"))
                   .contains("sheet"));
  EXPECT_EQ(Error("Import", R"({"format": "csv", "sheet": "Data"})"),
            "Import: field 'sheet' names a worksheet, which only format \"xlsx\" has");
  EXPECT_EQ(Error("Import", R"({"format": "xlsx", "sheet": ""})"),
            "Import: field 'sheet' must be a non-empty worksheet name");
}

TEST(SheetEditTest, SetCellValueAndFormatIsZeroBased) {
  auto e = ParseAs<SetCellValueAndFormatEdit>(
      "SetCellValueAndFormat",
      R"({"row": 1, "column": 2, "value": 100, "format": "#,##0"})");
  EXPECT_EQ(e.ref, (CellRef{2, 3}));  // C2
  EXPECT_EQ(e.cell, (Cell{CellValue::Number(100), "#,##0"}));
  EXPECT_EQ(ParseAs<SetCellValueAndFormatEdit>("SetCellValueAndFormat",
                                               R"({"row": 0, "column": 0, "value": 1})")
                .ref,
            (CellRef{1, 1}));
  EXPECT_EQ(Error("SetCellValueAndFormat", R"({"row": -1, "column": 0, "value": 1})"),
            "SetCellValueAndFormat: field 'row' must be a 0-based row from 0 to "
            "2147483646, got -1");
  EXPECT_EQ(
      Error("SetCellValueAndFormat", R"({"row": 0, "column": 2147483647, "value": 1})"),
      "SetCellValueAndFormat: field 'column' must be a 0-based column from 0 to "
      "2147483646, got 2147483647");
  EXPECT_EQ(Error("SetCellValueAndFormat", R"({"row": 0, "value": 1})"),
            "SetCellValueAndFormat: missing field 'column'");
}

// Every shape infinisheet writes for its own SetCellValueAndFormat
// (CellData: value string | number | boolean | null | undefined | CellError, format
// string | undefined) parses; undefined arrives as a missing field.
TEST(SheetEditTest, SetCellValueAndFormatTakesEveryInfinisheetShape) {
  auto missing = ParseAs<SetCellValueAndFormatEdit>("SetCellValueAndFormat",
                                                    R"({"row": 0, "column": 1})");
  EXPECT_EQ(missing.ref, (CellRef{1, 2}));
  EXPECT_EQ(missing.cell, Cell{});  // clears, as null does
  auto formatted_blank = ParseAs<SetCellValueAndFormatEdit>(
      "SetCellValueAndFormat", R"({"row": 0, "column": 0, "format": "0.00"})");
  EXPECT_EQ(formatted_blank.cell, (Cell{CellValue::Null(), "0.00"}));
  auto error = ParseAs<SetCellValueAndFormatEdit>(
      "SetCellValueAndFormat",
      R"({"row": 2, "column": 0, "value": {"type": "CellError", "value": "#DIV/0!"}})");
  EXPECT_EQ(error.cell.value, CellValue::Error("#DIV/0!"));
  EXPECT_EQ(error.cell.value.ToJson(),
            ParseJson(R"({"type": "CellError", "value": "#DIV/0!"})"));
  auto null_format = ParseAs<SetCellValueAndFormatEdit>(
      "SetCellValueAndFormat",
      R"({"row": 0, "column": 0, "value": true, "format": null})");
  EXPECT_EQ(null_format.cell, (Cell{CellValue::Boolean(true), ""}));
  EXPECT_EQ(Error("SetCellValueAndFormat",
                  R"({"row": 0, "column": 0, "value": {"type": "CellError",
                      "value": "#OOPS"}})"),
            "SetCellValueAndFormat: field 'value': '#OOPS' is not an error value "
            "(#NULL!, #DIV/0!, #VALUE!, #REF!, #NAME?, #NUM!, #N/A, #GETTING_DATA, "
            "#SPILL!, #UNKNOWN!, #FIELD!, #CALC!)");
  // An error value is a value everywhere a value goes.
  auto set_cell = ParseAs<SetCellEdit>(
      "SetCell", R"({"ref": "A1", "value": {"type": "CellError", "value": "#N/A"}})");
  EXPECT_EQ(set_cell.cell.value, CellValue::Error("#N/A"));
}

TEST(SheetEditTest, VersionsAndOtherTypes) {
  auto v2 = ParseEdit("SetCell", 2, ParseJson(R"({"ref": "A1", "value": 1})"));
  ASSERT_FALSE(v2.ok());
  EXPECT_EQ(v2.status().message(),
            "SetCell: version 2 is not supported (known versions: 1)");
  // Unknown and system types are skipped by the reducer; their body is not examined.
  auto other = ParseEdit("Comment", 7, ParseJson(R"([1, 2, 3])"));
  ASSERT_OK(other);
  EXPECT_EQ(std::get<SkippedEdit>(*other), (SkippedEdit{"Comment", 7, false}));
  auto snapshot = ParseEdit("Snapshot", 1, json(nullptr));
  ASSERT_OK(snapshot);
  EXPECT_EQ(std::get<SkippedEdit>(*snapshot), (SkippedEdit{"Snapshot", 1, true}));
  EXPECT_EQ(EditTypeName(*other), "Comment");
  EXPECT_TRUE(EncodeEditBody(*other).is_null());
}

TEST(SheetEditTest, ValidateAppend) {
  EXPECT_OK(ValidateAppend("Comment", 1, json("anything")));
  EXPECT_TRUE(
      ValidateAppend("SetCell", 1, ParseJson(R"({"ref": "A1", "value": 1})")).ok());
  Status reserved = ValidateAppend("EndSegment", 1, json(nullptr));
  EXPECT_EQ(reserved.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reserved.message(), "entry type 'EndSegment' is reserved for the system");
  EXPECT_EQ(ValidateAppend("", 1, json(nullptr)).message(),
            "entry type must not be empty");
  EXPECT_EQ(
      ValidateAppend("DeleteRows", 1, ParseJson(R"({"at": 1, "count": 0})")).message(),
      "DeleteRows: field 'count' must be a positive integer, got 0");
}

TEST(SheetEditTest, CanonicalEncodingIsExplicitAndRoundTrips) {
  struct Case {
    const char* type;
    const char* body;
    const char* canonical;
  };
  const Case cases[] = {
      {"SetCell", R"({"value": 100, "ref": "C2"})", R"({"ref": "C2", "value": 100})"},
      {"SetCell", R"({"ref": "C2", "value": 1.0, "format": ""})",
       R"({"ref": "C2", "value": 1})"},
      {"SetCells",
       R"({"cells": {"B2": {"value": 1}, "A1": {"value": 2, "format": "0"}}})",
       R"({"cells": {"A1": {"value": 2, "format": "0"}, "B2": 1}})"},
      {"SetCells", R"({"rows": [[1, null], ["=A1"]]})",
       R"({"at": "A1", "rows": [[1, null], ["=A1"]]})"},
      {"InsertRows", R"({"after": 0})", R"({"after": 0, "count": 1})"},
      {"InsertRows", R"({"after": 4, "count": 2, "values": {"B": true}})",
       R"({"after": 4, "count": 2, "values": {"B": true}})"},
      {"DeleteRows", R"({"at": 3})", R"({"at": 3, "count": 1})"},
      {"InsertColumns", R"({"after": 0})", R"({"after": 0, "count": 1})"},
      {"InsertColumns", R"({"after": "AA", "count": 5})",
       R"({"after": "AA", "count": 5})"},
      {"DeleteColumns", R"({"at": "B"})", R"({"at": "B", "count": 1})"},
      {"Import", R"({"format": "csv"})",
       R"({"format": "csv", "at": "A1", "mode": "replace"})"},
      {"SetCellValueAndFormat", R"({"row": 1, "column": 2, "value": "x", "format": "@"})",
       R"({"row": 1, "column": 2, "value": "x", "format": "@"})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.type) + " " + c.body);
    auto edit = Parse(c.type, c.body);
    ASSERT_OK(edit);
    EXPECT_EQ(EditTypeName(*edit), c.type);
    json canonical = EncodeEditBody(*edit);
    EXPECT_EQ(canonical, ParseJson(c.canonical));
    auto again = ParseEdit(c.type, 1, canonical);
    ASSERT_OK(again);
    EXPECT_EQ(*again, *edit);
    EXPECT_EQ(EncodeEditBody(*again), canonical);
  }
}

}  // namespace
}  // namespace sheetlog
