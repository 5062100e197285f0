// The built-in entry types of the spreadsheet (api.md "Spreadsheet", version 1) and their
// strict codecs.
//
// ParseEdit is the one gate between a JSON body and the reducer: everything it accepts
// the reducer applies without failing, so a bad body is refused at append time (HTTP 400)
// and can never break the snapshot pipeline later. It refuses unknown fields, wrong
// types, bad references, zero or negative counts and counts that run off the grid, with
// an InvalidArgument message that names the type and the field, e.g.
//   "DeleteRows: field 'count' must be a positive integer, got 0"
//   "SetCell: field 'ref': bad cell reference 'C0': rows start at 1"
//
// Bodies (v = a cell value; a cell spec is v or {"value": v, "format"?: str}):
//   SetCell               {"ref": "C2", "value": v, "format"?: str}
//   SetCells              {"cells": {"A1": spec, ...}}
//                         or {"at"?: "A1", "rows": [[spec]]}
//   InsertRows            {"after": int >= 0, "count"?: int = 1, "values"?: {"A": spec}}
//   DeleteRows            {"at": int >= 1, "count"?: int = 1}
//   InsertColumns         {"after": "C" | 0, "count"?: int = 1}
//   DeleteColumns         {"at": "C", "count"?: int = 1}
//   Import                {"format": "csv"|"xlsx", "at"?: "A1",
//                          "mode"?: "replace"|"merge", "sheet"?: str}
//                         (default mode: replace; "sheet": an xlsx worksheet by name,
//                         default the first; the payload travels as an upload)
//   SetCellValueAndFormat {"row": int >= 0, "column": int >= 0, "value"?: v,
//                          "format"?: str | null}
//                         (infinisheet's own entry: a missing value is its undefined,
//                         like null)
// A cell write replaces the whole cell: writing a value without "format" leaves the cell
// unformatted; a null value without a format clears the cell.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/cell.h"

namespace sheetlog {

// The body format version every built-in type has today.
inline constexpr int64_t kBuiltinEditVersion = 1;

struct PlacedCell {
  CellRef ref;
  Cell cell;
  bool operator==(const PlacedCell&) const = default;
};

// Sorts `cells` by position and keeps, of several writes to one position, the last one
// (in the order they came).
void SortKeepingLastWrite(std::vector<PlacedCell>* cells);

struct SetCellEdit {
  CellRef ref;
  Cell cell;
  bool operator==(const SetCellEdit&) const = default;
};

struct SetCellsEdit {
  enum class Form { kMap, kRows };
  Form form = Form::kMap;
  std::vector<PlacedCell> cells;        // kMap: sorted by ref, no duplicates
  CellRef at;                           // kRows: where rows[0][0] goes
  std::vector<std::vector<Cell>> rows;  // kRows
  bool operator==(const SetCellsEdit&) const = default;

  // Every written cell at its absolute position (for both forms). `fn(CellRef, Cell)`.
  template <typename Fn>
  void ForEachCell(Fn&& fn) const {
    if (form == Form::kMap) {
      for (const PlacedCell& c : cells) fn(c.ref, c.cell);
      return;
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      for (size_t c = 0; c < rows[r].size(); ++c) {
        fn(CellRef{at.row + static_cast<int64_t>(r), at.col + static_cast<int64_t>(c)},
           rows[r][c]);
      }
    }
  }
};

// Rows after `after` move down by `count`; `values` (column -> cell, sorted by column)
// are written into the first inserted row, after + 1.
struct InsertRowsEdit {
  int64_t after = 0;
  int64_t count = 1;
  std::vector<std::pair<int64_t, Cell>> values;
  bool operator==(const InsertRowsEdit&) const = default;
};

// Rows at..at+count-1 disappear; rows below move up by `count`.
struct DeleteRowsEdit {
  int64_t at = 1;
  int64_t count = 1;
  bool operator==(const DeleteRowsEdit&) const = default;
};

struct InsertColumnsEdit {
  int64_t after = 0;  // 0 = before column A
  int64_t count = 1;
  bool operator==(const InsertColumnsEdit&) const = default;
};

struct DeleteColumnsEdit {
  int64_t at = 1;
  int64_t count = 1;
  bool operator==(const DeleteColumnsEdit&) const = default;
};

// Cells of an import payload, positioned relative to the anchor: ref (1, 1) lands on
// ImportEdit::at. Filled in by whoever reads and parses the payload (CSV/XLSX), not by
// ParseEdit. An empty Cell in the payload clears its position.
using ImportedCells = std::vector<PlacedCell>;

struct ImportEdit {
  enum class Format { kCsv, kXlsx };
  enum class Mode { kReplace, kMerge };
  Format format = Format::kCsv;
  CellRef at;
  Mode mode = Mode::kReplace;
  // XLSX only: the worksheet to read by name; "" = the first.
  std::string worksheet;
  // The hook for the payload: null until resolved. The reducer applies an unresolved
  // import as an import of no cells (a replace still clears) and counts it in its
  // stats, so a caller that forgot to resolve can tell.
  std::shared_ptr<const ImportedCells> cells;
  bool operator==(const ImportEdit&) const = default;
};

// Same effect as SetCellEdit; kept apart so that it re-encodes as itself (0-based).
struct SetCellValueAndFormatEdit {
  CellRef ref;  // 1-based like every CellRef; the body says row - 1, col - 1
  Cell cell;
  bool operator==(const SetCellValueAndFormatEdit&) const = default;
};

// An entry the reducer does not interpret: a type that is not built in (stored as
// given, skipped and counted), or a system entry (Snapshot, EndSegment).
struct SkippedEdit {
  std::string type;
  int64_t version = 0;
  bool reserved = false;  // Snapshot or EndSegment
  bool operator==(const SkippedEdit&) const = default;
};

using SheetEdit = std::variant<SetCellEdit, SetCellsEdit, InsertRowsEdit, DeleteRowsEdit,
                               InsertColumnsEdit, DeleteColumnsEdit, ImportEdit,
                               SetCellValueAndFormatEdit, SkippedEdit>;

// SetCell, SetCells, InsertRows, DeleteRows, InsertColumns, DeleteColumns, Import,
// SetCellValueAndFormat.
bool IsBuiltinType(std::string_view type);
// Snapshot, EndSegment: written only by the system.
bool IsReservedType(std::string_view type);

// Parses one entry for the reducer. Built-in types must have version 1 and a body that
// parses; reserved and unknown types become SkippedEdit (their body is not looked at),
// so a whole log replays through this function. Never fails for a non-built-in type.
Result<SheetEdit> ParseEdit(std::string_view type, int64_t version,
                            const nlohmann::json& body);

// What POST .../entries checks before writing anything: the type is non-empty and not
// reserved, and a built-in type's body parses. OK for any other type.
Status ValidateAppend(std::string_view type, int64_t version, const nlohmann::json& body);

// The entry type name of an edit ("SetCell", ...; a SkippedEdit's own type).
std::string_view EditTypeName(const SheetEdit& edit);

// The canonical body of a built-in edit: every field explicit (count, at, mode), cells
// as canonical cell specs, refs in upper case. ParseEdit(type, 1, EncodeEditBody(e))
// == e for every edit ParseEdit returned (an ImportEdit's resolved cells aside). A
// SkippedEdit has no body to give: null.
nlohmann::json EncodeEditBody(const SheetEdit& edit);

}  // namespace sheetlog
