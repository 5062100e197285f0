#include "src/sheet/sheet_edit.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

namespace sheetlog {
namespace {

using json = nlohmann::json;

constexpr std::array<std::string_view, 8> kBuiltinTypes = {
    "SetCell",       "SetCells",      "InsertRows", "DeleteRows",
    "InsertColumns", "DeleteColumns", "Import",     "SetCellValueAndFormat"};

// Reads the fields of one body object and builds messages of the form
// "<Type>: field '<path>' ..." so that every error names what the client must fix.
class BodyReader {
 public:
  BodyReader(std::string_view type, const json& body) : type_(type), body_(body) {}

  Status Start(std::initializer_list<std::string_view> allowed) {
    if (!body_.is_object()) {
      return InvalidArgument(std::string(type_) + ": body must be a JSON object, got " +
                             std::string(JsonTypeName(body_)));
    }
    for (const auto& [key, unused] : body_.items()) {
      (void)unused;
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        return InvalidArgument(std::string(type_) + ": unknown field '" + key + "'");
      }
    }
    return Status::OK();
  }

  bool Has(std::string_view field) const { return body_.contains(field); }
  const json& Get(std::string_view field) const { return body_.at(field); }

  // "<Type>: field '<field>' <what>"
  Status Error(std::string_view field, std::string_view what) const {
    return InvalidArgument(std::string(type_) + ": field '" + std::string(field) + "' " +
                           std::string(what));
  }
  // "<Type>: field '<field>': <cause>"
  Status Wrap(std::string_view field, const Status& cause) const {
    return InvalidArgument(std::string(type_) + ": field '" + std::string(field) +
                           "': " + cause.message());
  }
  Status Missing(std::string_view field) const {
    return InvalidArgument(std::string(type_) + ": missing field '" + std::string(field) +
                           "'");
  }

  // An integer in [lo, hi]; `what` describes the allowed values for the message.
  Result<int64_t> Integer(std::string_view field, const json& j, int64_t lo, int64_t hi,
                          std::string_view what) const {
    if (!j.is_number_integer()) {
      return Error(field, "must be " + std::string(what) + ", got " +
                              (j.is_number() ? j.dump() : std::string(JsonTypeName(j))));
    }
    if (j.is_number_unsigned() &&
        j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(field, "must be " + std::string(what) + ", got " + j.dump());
    }
    int64_t v = j.get<int64_t>();
    if (v < lo || v > hi) {
      return Error(field, "must be " + std::string(what) + ", got " + j.dump());
    }
    return v;
  }

  Result<CellRef> Ref(std::string_view field, const json& j) const {
    if (!j.is_string()) {
      return Error(field, "must be a cell reference string like \"C2\", got " +
                              std::string(JsonTypeName(j)));
    }
    auto ref = ParseCellRef(j.get<std::string>());
    if (!ref.ok()) return Wrap(field, ref.status());
    return *ref;
  }

  Result<CellValue> Value(std::string_view field, const json& j) const {
    auto value = CellValue::FromJson(j);
    if (!value.ok()) return Wrap(field, value.status());
    return std::move(value).value();
  }

  Result<Cell> CellSpec(std::string_view field, const json& j) const {
    auto cell = Cell::FromJson(j);
    if (!cell.ok()) return Wrap(field, cell.status());
    return std::move(cell).value();
  }

  // Optional "format": absent = "", otherwise a string.
  Result<std::string> Format() const {
    if (!Has("format")) return std::string();
    const json& j = Get("format");
    if (!j.is_string()) {
      return Error("format", "must be a string, got " + std::string(JsonTypeName(j)));
    }
    return j.get<std::string>();
  }

  // Optional "count" (default 1): positive, and start + count - 1 must stay inside the
  // grid of `limit` positions. `unit` is "row"/"column" for the message.
  Result<int64_t> Count(int64_t first_moved, int64_t limit, std::string_view unit) const {
    if (!Has("count")) {
      if (first_moved > limit) {
        return Error("count", "of 1 " + std::string(unit) + " overflows the grid (last " +
                                  std::string(unit) + " " + std::to_string(limit) + ")");
      }
      return 1;
    }
    ASSIGN_OR_RETURN(int64_t count,
                     Integer("count", Get("count"), 1,
                             std::numeric_limits<int64_t>::max(), "a positive integer"));
    if (count > limit - first_moved + 1) {
      return Error("count", "of " + std::to_string(count) + " " + std::string(unit) +
                                "s starting at " + std::string(unit) + " " +
                                std::to_string(first_moved) +
                                " overflows the grid (last " + std::string(unit) + " " +
                                std::to_string(limit) + ")");
    }
    return count;
  }

  std::string_view type() const { return type_; }

 private:
  std::string_view type_;
  const json& body_;
};

Result<SheetEdit> ParseSetCell(const json& body) {
  BodyReader r("SetCell", body);
  RETURN_IF_ERROR(r.Start({"ref", "value", "format"}));
  if (!r.Has("ref")) return r.Missing("ref");
  if (!r.Has("value")) return r.Missing("value");
  SetCellEdit edit;
  ASSIGN_OR_RETURN(edit.ref, r.Ref("ref", r.Get("ref")));
  ASSIGN_OR_RETURN(edit.cell.value, r.Value("value", r.Get("value")));
  ASSIGN_OR_RETURN(edit.cell.format, r.Format());
  return SheetEdit(std::move(edit));
}

Result<SheetEdit> ParseSetCells(const json& body) {
  BodyReader r("SetCells", body);
  RETURN_IF_ERROR(r.Start({"cells", "at", "rows"}));
  SetCellsEdit edit;
  if (r.Has("cells")) {
    if (r.Has("at") || r.Has("rows")) {
      return InvalidArgument(
          "SetCells: give either 'cells' or 'at' and 'rows', not both forms");
    }
    const json& cells = r.Get("cells");
    if (!cells.is_object()) {
      return r.Error("cells", "must be an object of cell references, got " +
                                  std::string(JsonTypeName(cells)));
    }
    edit.form = SetCellsEdit::Form::kMap;
    edit.cells.reserve(cells.size());
    for (const auto& [key, item] : cells.items()) {
      // The path is spelled only for an error: a body has up to millions of cells.
      auto ref = ParseCellRef(key);
      if (!ref.ok()) return r.Wrap("cells." + key, ref.status());
      Result<Cell> cell = Cell::FromJson(item);
      if (!cell.ok()) return r.Wrap("cells." + key, cell.status());
      edit.cells.push_back({*ref, std::move(cell).value()});
    }
    std::sort(edit.cells.begin(), edit.cells.end(),
              [](const PlacedCell& a, const PlacedCell& b) { return a.ref < b.ref; });
    // Distinct keys of one JSON object are distinct references (parsing is strict).
    return SheetEdit(std::move(edit));
  }
  if (!r.Has("rows")) return InvalidArgument("SetCells: missing field 'cells' or 'rows'");
  edit.form = SetCellsEdit::Form::kRows;
  edit.at = CellRef{1, 1};
  if (r.Has("at")) {
    ASSIGN_OR_RETURN(edit.at, r.Ref("at", r.Get("at")));
  }
  const json& rows = r.Get("rows");
  if (!rows.is_array()) {
    return r.Error("rows",
                   "must be an array of arrays, got " + std::string(JsonTypeName(rows)));
  }
  if (static_cast<int64_t>(rows.size()) > kMaxRow - edit.at.row + 1) {
    return r.Error("rows", "has " + std::to_string(rows.size()) + " rows from row " +
                               std::to_string(edit.at.row) +
                               ", which overflows the grid (last row " +
                               std::to_string(kMaxRow) + ")");
  }
  edit.rows.reserve(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& row = rows[i];
    auto row_path = [i] { return "rows[" + std::to_string(i) + "]"; };
    if (!row.is_array()) {
      return r.Error(row_path(),
                     "must be an array, got " + std::string(JsonTypeName(row)));
    }
    if (static_cast<int64_t>(row.size()) > kMaxColumn - edit.at.col + 1) {
      return r.Error(row_path(), "has " + std::to_string(row.size()) +
                                     " cells from column " + FormatColumn(edit.at.col) +
                                     ", which overflows the grid (last column " +
                                     FormatColumn(kMaxColumn) + ")");
    }
    std::vector<Cell> cells;
    cells.reserve(row.size());
    for (size_t j = 0; j < row.size(); ++j) {
      // The path is spelled only for an error: a body has up to millions of cells.
      Result<Cell> cell = Cell::FromJson(row[j]);
      if (!cell.ok()) {
        return r.Wrap(row_path() + "[" + std::to_string(j) + "]", cell.status());
      }
      cells.push_back(std::move(cell).value());
    }
    edit.rows.push_back(std::move(cells));
  }
  return SheetEdit(std::move(edit));
}

Result<SheetEdit> ParseInsertRows(const json& body) {
  BodyReader r("InsertRows", body);
  RETURN_IF_ERROR(r.Start({"after", "count", "values"}));
  if (!r.Has("after")) return r.Missing("after");
  InsertRowsEdit edit;
  ASSIGN_OR_RETURN(edit.after, r.Integer("after", r.Get("after"), 0, kMaxRow - 1,
                                         "a row number from 0 (insert at the top) to " +
                                             std::to_string(kMaxRow - 1)));
  ASSIGN_OR_RETURN(edit.count, r.Count(edit.after + 1, kMaxRow, "row"));
  if (r.Has("values")) {
    const json& values = r.Get("values");
    if (!values.is_object()) {
      return r.Error("values", "must be an object of column letters, got " +
                                   std::string(JsonTypeName(values)));
    }
    for (const auto& [key, item] : values.items()) {
      std::string path = "values." + key;
      auto col = ParseColumn(key);
      if (!col.ok()) return r.Wrap(path, col.status());
      ASSIGN_OR_RETURN(Cell cell, r.CellSpec(path, item));
      edit.values.emplace_back(*col, std::move(cell));
    }
    std::sort(edit.values.begin(), edit.values.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  return SheetEdit(std::move(edit));
}

Result<SheetEdit> ParseDeleteRows(const json& body) {
  BodyReader r("DeleteRows", body);
  RETURN_IF_ERROR(r.Start({"at", "count"}));
  if (!r.Has("at")) return r.Missing("at");
  DeleteRowsEdit edit;
  ASSIGN_OR_RETURN(edit.at,
                   r.Integer("at", r.Get("at"), 1, kMaxRow,
                             "a row number from 1 to " + std::to_string(kMaxRow)));
  ASSIGN_OR_RETURN(edit.count, r.Count(edit.at, kMaxRow, "row"));
  return SheetEdit(edit);
}

// A column given as letters ("C"), or the integer 0 where `zero_allowed`.
Result<int64_t> ColumnField(const BodyReader& r, std::string_view field,
                            bool zero_allowed) {
  const json& j = r.Get(field);
  if (zero_allowed && j.is_number_integer()) {
    if (j.is_number_unsigned() ? j.get<uint64_t>() == 0 : j.get<int64_t>() == 0) {
      return 0;
    }
    return r.Error(field,
                   "must be column letters like \"C\" or 0 (insert before "
                   "column A), got " +
                       j.dump());
  }
  if (!j.is_string()) {
    return r.Error(field, std::string("must be column letters like \"C\"") +
                              (zero_allowed ? " or 0" : "") + ", got " +
                              (j.is_number() ? j.dump() : std::string(JsonTypeName(j))));
  }
  auto col = ParseColumn(j.get<std::string>());
  if (!col.ok()) return r.Wrap(field, col.status());
  return *col;
}

Result<SheetEdit> ParseInsertColumns(const json& body) {
  BodyReader r("InsertColumns", body);
  RETURN_IF_ERROR(r.Start({"after", "count"}));
  if (!r.Has("after")) return r.Missing("after");
  InsertColumnsEdit edit;
  ASSIGN_OR_RETURN(edit.after, ColumnField(r, "after", /*zero_allowed=*/true));
  if (edit.after >= kMaxColumn) {
    return r.Error("after", "is the last column " + FormatColumn(kMaxColumn) +
                                ": there is no room after it");
  }
  ASSIGN_OR_RETURN(edit.count, r.Count(edit.after + 1, kMaxColumn, "column"));
  return SheetEdit(edit);
}

Result<SheetEdit> ParseDeleteColumns(const json& body) {
  BodyReader r("DeleteColumns", body);
  RETURN_IF_ERROR(r.Start({"at", "count"}));
  if (!r.Has("at")) return r.Missing("at");
  DeleteColumnsEdit edit;
  ASSIGN_OR_RETURN(edit.at, ColumnField(r, "at", /*zero_allowed=*/false));
  ASSIGN_OR_RETURN(edit.count, r.Count(edit.at, kMaxColumn, "column"));
  return SheetEdit(edit);
}

Result<SheetEdit> ParseImport(const json& body) {
  BodyReader r("Import", body);
  RETURN_IF_ERROR(r.Start({"format", "at", "mode", "sheet"}));
  if (!r.Has("format")) return r.Missing("format");
  ImportEdit edit;
  const json& format = r.Get("format");
  if (format == "csv") {
    edit.format = ImportEdit::Format::kCsv;
  } else if (format == "xlsx") {
    edit.format = ImportEdit::Format::kXlsx;
  } else {
    return r.Error("format", "must be \"csv\" or \"xlsx\", got " + format.dump());
  }
  edit.at = CellRef{1, 1};
  if (r.Has("at")) {
    ASSIGN_OR_RETURN(edit.at, r.Ref("at", r.Get("at")));
  }
  edit.mode = ImportEdit::Mode::kReplace;
  if (r.Has("mode")) {
    const json& mode = r.Get("mode");
    if (mode == "replace") {
      edit.mode = ImportEdit::Mode::kReplace;
    } else if (mode == "merge") {
      edit.mode = ImportEdit::Mode::kMerge;
    } else {
      return r.Error("mode", "must be \"replace\" or \"merge\", got " + mode.dump());
    }
  }
  if (r.Has("sheet")) {
    const json& sheet = r.Get("sheet");
    if (!sheet.is_string() || sheet.get<std::string>().empty()) {
      return r.Error("sheet", "must be a non-empty worksheet name");
    }
    if (edit.format != ImportEdit::Format::kXlsx) {
      return r.Error("sheet", "names a worksheet, which only format \"xlsx\" has");
    }
    edit.worksheet = sheet.get<std::string>();
  }
  return SheetEdit(std::move(edit));
}

Result<SheetEdit> ParseSetCellValueAndFormat(const json& body) {
  BodyReader r("SetCellValueAndFormat", body);
  RETURN_IF_ERROR(r.Start({"row", "column", "value", "format"}));
  if (!r.Has("row")) return r.Missing("row");
  if (!r.Has("column")) return r.Missing("column");
  // infinisheet writes an undefined value (no value) by leaving "value" out: like null.
  SetCellValueAndFormatEdit edit;
  ASSIGN_OR_RETURN(int64_t row,
                   r.Integer("row", r.Get("row"), 0, kMaxRow - 1,
                             "a 0-based row from 0 to " + std::to_string(kMaxRow - 1)));
  ASSIGN_OR_RETURN(int64_t col, r.Integer("column", r.Get("column"), 0, kMaxColumn - 1,
                                          "a 0-based column from 0 to " +
                                              std::to_string(kMaxColumn - 1)));
  edit.ref = CellRef{row + 1, col + 1};
  if (r.Has("value")) {
    ASSIGN_OR_RETURN(edit.cell.value, r.Value("value", r.Get("value")));
  }
  // infinisheet's format is a string or undefined; a null one means none too.
  if (!r.Has("format") || !r.Get("format").is_null()) {
    ASSIGN_OR_RETURN(edit.cell.format, r.Format());
  }
  return SheetEdit(std::move(edit));
}

json CellsOfRow(const std::vector<Cell>& row) {
  json out = json::array();
  for (const Cell& cell : row) out.push_back(cell.ToJson());
  return out;
}

}  // namespace

void SortKeepingLastWrite(std::vector<PlacedCell>* cells) {
  std::stable_sort(
      cells->begin(), cells->end(),
      [](const PlacedCell& a, const PlacedCell& b) { return a.ref < b.ref; });
  size_t kept = 0;
  for (size_t i = 0; i < cells->size(); ++i) {
    if (i + 1 < cells->size() && (*cells)[i + 1].ref == (*cells)[i].ref) continue;
    if (kept != i) (*cells)[kept] = std::move((*cells)[i]);
    ++kept;
  }
  cells->resize(kept);
}

bool IsBuiltinType(std::string_view type) {
  return std::find(kBuiltinTypes.begin(), kBuiltinTypes.end(), type) !=
         kBuiltinTypes.end();
}

bool IsReservedType(std::string_view type) {
  return type == "Snapshot" || type == "EndSegment";
}

Result<SheetEdit> ParseEdit(std::string_view type, int64_t version, const json& body) {
  if (!IsBuiltinType(type)) {
    return SheetEdit(SkippedEdit{std::string(type), version, IsReservedType(type)});
  }
  if (version != kBuiltinEditVersion) {
    return InvalidArgument(std::string(type) + ": version " + std::to_string(version) +
                           " is not supported (known versions: 1)");
  }
  if (type == "SetCell") return ParseSetCell(body);
  if (type == "SetCells") return ParseSetCells(body);
  if (type == "InsertRows") return ParseInsertRows(body);
  if (type == "DeleteRows") return ParseDeleteRows(body);
  if (type == "InsertColumns") return ParseInsertColumns(body);
  if (type == "DeleteColumns") return ParseDeleteColumns(body);
  if (type == "Import") return ParseImport(body);
  return ParseSetCellValueAndFormat(body);
}

Status ValidateAppend(std::string_view type, int64_t version, const json& body) {
  if (type.empty()) return InvalidArgument("entry type must not be empty");
  if (IsReservedType(type)) {
    return InvalidArgument("entry type '" + std::string(type) +
                           "' is reserved for the system");
  }
  if (!IsBuiltinType(type)) return Status::OK();
  return ParseEdit(type, version, body).status();
}

std::string_view EditTypeName(const SheetEdit& edit) {
  struct Visitor {
    std::string_view operator()(const SetCellEdit&) { return "SetCell"; }
    std::string_view operator()(const SetCellsEdit&) { return "SetCells"; }
    std::string_view operator()(const InsertRowsEdit&) { return "InsertRows"; }
    std::string_view operator()(const DeleteRowsEdit&) { return "DeleteRows"; }
    std::string_view operator()(const InsertColumnsEdit&) { return "InsertColumns"; }
    std::string_view operator()(const DeleteColumnsEdit&) { return "DeleteColumns"; }
    std::string_view operator()(const ImportEdit&) { return "Import"; }
    std::string_view operator()(const SetCellValueAndFormatEdit&) {
      return "SetCellValueAndFormat";
    }
    std::string_view operator()(const SkippedEdit& e) { return e.type; }
  };
  return std::visit(Visitor{}, edit);
}

json EncodeEditBody(const SheetEdit& edit) {
  struct Visitor {
    json operator()(const SetCellEdit& e) {
      json out{{"ref", FormatCellRef(e.ref)}, {"value", e.cell.value.ToJson()}};
      if (!e.cell.format.empty()) out["format"] = e.cell.format;
      return out;
    }
    json operator()(const SetCellsEdit& e) {
      if (e.form == SetCellsEdit::Form::kMap) {
        json cells = json::object();
        for (const PlacedCell& c : e.cells) cells[FormatCellRef(c.ref)] = c.cell.ToJson();
        return json{{"cells", std::move(cells)}};
      }
      json rows = json::array();
      for (const auto& row : e.rows) rows.push_back(CellsOfRow(row));
      return json{{"at", FormatCellRef(e.at)}, {"rows", std::move(rows)}};
    }
    json operator()(const InsertRowsEdit& e) {
      json out{{"after", e.after}, {"count", e.count}};
      if (!e.values.empty()) {
        json values = json::object();
        for (const auto& [col, cell] : e.values)
          values[FormatColumn(col)] = cell.ToJson();
        out["values"] = std::move(values);
      }
      return out;
    }
    json operator()(const DeleteRowsEdit& e) {
      return json{{"at", e.at}, {"count", e.count}};
    }
    json operator()(const InsertColumnsEdit& e) {
      json after = e.after == 0 ? json(0) : json(FormatColumn(e.after));
      return json{{"after", std::move(after)}, {"count", e.count}};
    }
    json operator()(const DeleteColumnsEdit& e) {
      return json{{"at", FormatColumn(e.at)}, {"count", e.count}};
    }
    json operator()(const ImportEdit& e) {
      json out{{"format", e.format == ImportEdit::Format::kCsv ? "csv" : "xlsx"},
               {"at", FormatCellRef(e.at)},
               {"mode", e.mode == ImportEdit::Mode::kReplace ? "replace" : "merge"}};
      if (!e.worksheet.empty()) out["sheet"] = e.worksheet;
      return out;
    }
    json operator()(const SetCellValueAndFormatEdit& e) {
      json out{{"row", e.ref.row - 1},
               {"column", e.ref.col - 1},
               {"value", e.cell.value.ToJson()}};
      if (!e.cell.format.empty()) out["format"] = e.cell.format;
      return out;
    }
    json operator()(const SkippedEdit&) { return nullptr; }
  };
  return std::visit(Visitor{}, edit);
}

}  // namespace sheetlog
