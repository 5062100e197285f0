// ReadXlsx (xlsx.h): the workbook and its relationships (which part holds the
// worksheet), the shared strings, the styles' number formats, and the worksheet's cells
// streamed to the sink, shared formulas expanded (ShiftFormula). The zip and XML layer
// is xlsx_package.h.
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "src/sheet/formula_shift.h"
#include "src/sheet/integer_text.h"
#include "src/sheet/xlsx.h"
#include "src/sheet/xlsx_package.h"

namespace sheetlog {

namespace {

using xlsx_package::Attribute;
using xlsx_package::ParsePart;
using xlsx_package::XmlHandler;
using xlsx_package::ZipPackage;

// ---- Workbook: which part holds the worksheet. ----

struct SheetEntry {
  std::string name;
  std::string relationship;
};

class WorkbookHandler : public XmlHandler {
 public:
  Status Start(std::string_view name, const char** attributes) override {
    if (name != "sheet") return Status::OK();
    const char* sheet_name = Attribute(attributes, "name");
    const char* id = nullptr;
    for (size_t i = 0; attributes[i] != nullptr; i += 2) {
      // r:id (the relationships namespace), not sheetId.
      std::string_view attribute(attributes[i]);
      if (attribute.size() > 3 && attribute.substr(attribute.size() - 3) == ":id") {
        id = attributes[i + 1];
      }
    }
    if (sheet_name != nullptr && id != nullptr) sheets.push_back({sheet_name, id});
    return Status::OK();
  }
  Status End(std::string_view) override { return Status::OK(); }

  std::vector<SheetEntry> sheets;
};

class RelationshipsHandler : public XmlHandler {
 public:
  struct Target {
    std::string path;
    bool worksheet = false;
  };
  Status Start(std::string_view name, const char** attributes) override {
    if (name != "Relationship") return Status::OK();
    const char* id = Attribute(attributes, "Id");
    const char* target = Attribute(attributes, "Target");
    const char* type = Attribute(attributes, "Type");
    if (id == nullptr || target == nullptr) return Status::OK();
    std::string path = target;
    // Targets are relative to xl/ unless absolute within the package.
    path = path.rfind('/', 0) == 0 ? path.substr(1) : "xl/" + path;
    std::string_view type_text = type != nullptr ? type : "";
    const std::string_view suffix = "/worksheet";
    const bool worksheet = type_text.size() >= suffix.size() &&
                           type_text.substr(type_text.size() - suffix.size()) == suffix;
    targets[id] = {path, worksheet};
    return Status::OK();
  }
  Status End(std::string_view) override { return Status::OK(); }

  std::map<std::string, Target> targets;
};

// ---- Shared strings. ----

class SharedStringsHandler : public XmlHandler {
 public:
  explicit SharedStringsHandler(int64_t max_bytes) : max_bytes_(max_bytes) {}

  Status Start(std::string_view name, const char**) override {
    if (name == "si") {
      in_item_ = true;
      current_.clear();
    } else if (name == "rPh") {
      ++phonetic_depth_;
    } else if (name == "t") {
      in_text_ = in_item_ && phonetic_depth_ == 0;
    }
    return Status::OK();
  }
  Status End(std::string_view name) override {
    if (name == "si") {
      in_item_ = false;
      strings.push_back(std::move(current_));
      current_.clear();
    } else if (name == "rPh") {
      --phonetic_depth_;
    } else if (name == "t") {
      in_text_ = false;
    }
    return Status::OK();
  }
  Status Text(std::string_view text) override {
    if (!in_text_) return Status::OK();
    bytes_ += static_cast<int64_t>(text.size());
    if (bytes_ > max_bytes_) {
      return InvalidArgument("XLSX: the shared strings hold more than " +
                             std::to_string(max_bytes_) + " bytes");
    }
    current_.append(text);
    return Status::OK();
  }

  std::vector<std::string> strings;

 private:
  int64_t max_bytes_;
  int64_t bytes_ = 0;
  bool in_item_ = false;
  bool in_text_ = false;
  int phonetic_depth_ = 0;
  std::string current_;
};

// ---- Styles: the number format of each cell style. ----

// ECMA-376 part 1, 18.8.30: the built-in number formats (0 = General).
std::string BuiltinNumberFormat(int64_t id) {
  static const std::map<int64_t, const char*> kFormats = {
      {1, "0"},
      {2, "0.00"},
      {3, "#,##0"},
      {4, "#,##0.00"},
      {9, "0%"},
      {10, "0.00%"},
      {11, "0.00E+00"},
      {12, "# ?/?"},
      {13, "# ?\?/?\?"},
      {14, "mm-dd-yy"},
      {15, "d-mmm-yy"},
      {16, "d-mmm"},
      {17, "mmm-yy"},
      {18, "h:mm AM/PM"},
      {19, "h:mm:ss AM/PM"},
      {20, "h:mm"},
      {21, "h:mm:ss"},
      {22, "m/d/yy h:mm"},
      {37, "#,##0 ;(#,##0)"},
      {38, "#,##0 ;[Red](#,##0)"},
      {39, "#,##0.00;(#,##0.00)"},
      {40, "#,##0.00;[Red](#,##0.00)"},
      {45, "mm:ss"},
      {46, "[h]:mm:ss"},
      {47, "mmss.0"},
      {48, "##0.0E+0"},
      {49, "@"}};
  auto it = kFormats.find(id);
  return it == kFormats.end() ? "" : it->second;
}

class StylesHandler : public XmlHandler {
 public:
  Status Start(std::string_view name, const char** attributes) override {
    if (name == "numFmt") {
      const char* id = Attribute(attributes, "numFmtId");
      const char* code = Attribute(attributes, "formatCode");
      if (id != nullptr && code != nullptr) {
        Result<int64_t> number = ParseInteger(id);
        if (number.ok()) custom_[*number] = code;
      }
    } else if (name == "cellXfs") {
      in_cell_xfs_ = true;
    } else if (name == "xf" && in_cell_xfs_) {
      const char* id = Attribute(attributes, "numFmtId");
      Result<int64_t> number = ParseInteger(id != nullptr ? id : "0");
      style_format_ids_.push_back(number.ok() ? *number : 0);
    }
    return Status::OK();
  }
  Status End(std::string_view name) override {
    if (name == "cellXfs") in_cell_xfs_ = false;
    return Status::OK();
  }

  // The format code of each cell style (index = the s attribute of a cell).
  std::vector<std::string> Formats() const {
    std::vector<std::string> out;
    for (int64_t id : style_format_ids_) {
      auto it = custom_.find(id);
      std::string code = it != custom_.end() ? it->second : BuiltinNumberFormat(id);
      if (code == "General") code.clear();
      out.push_back(std::move(code));
    }
    return out;
  }

 private:
  std::map<int64_t, std::string> custom_;
  std::vector<int64_t> style_format_ids_;
  bool in_cell_xfs_ = false;
};

// ---- The worksheet. ----

class WorksheetHandler : public XmlHandler {
 public:
  WorksheetHandler(std::string sheet_name, const std::vector<std::string>& strings,
                   const std::vector<std::string>& formats, const ImportCellSink& sink)
      : sheet_name_(std::move(sheet_name)),
        strings_(strings),
        formats_(formats),
        sink_(sink) {}

  Status Start(std::string_view name, const char** attributes) override {
    if (name == "row") {
      const char* r = Attribute(attributes, "r");
      if (r != nullptr) {
        Result<int64_t> row = ParseInteger(r);
        if (!row.ok() || *row < 1 || *row > kXlsxMaxRows) {
          return Error("row '" + std::string(r) + "' is not a row number");
        }
        row_ = *row;
      } else {
        ++row_;
      }
      col_ = 0;
    } else if (name == "c") {
      return StartCell(attributes);
    } else if (in_cell_) {
      if (name == "v") {
        in_value_ = true;
      } else if (name == "f") {
        in_formula_ = true;
        has_formula_ = true;
        const char* type = Attribute(attributes, "t");
        const char* index = Attribute(attributes, "si");
        if (type != nullptr && std::string_view(type) == "shared" && index != nullptr) {
          Result<int64_t> si = ParseInteger(index);
          if (!si.ok())
            return Error("bad shared formula index '" + std::string(index) + "'");
          shared_index_ = *si;
        }
      } else if (name == "is") {
        in_inline_ = true;
      } else if (name == "rPh") {
        ++phonetic_depth_;
      } else if (name == "t" && in_inline_ && phonetic_depth_ == 0) {
        in_inline_text_ = true;
      }
    }
    return Status::OK();
  }

  Status End(std::string_view name) override {
    if (name == "c") return EndCell();
    if (name == "v") in_value_ = false;
    if (name == "f") in_formula_ = false;
    if (name == "is") in_inline_ = false;
    if (name == "rPh") --phonetic_depth_;
    if (name == "t") in_inline_text_ = false;
    return Status::OK();
  }

  Status Text(std::string_view text) override {
    if (in_value_) value_.append(text);
    if (in_formula_) formula_.append(text);
    if (in_inline_text_) inline_text_.append(text);
    return Status::OK();
  }

 private:
  Status Error(const std::string& what) const {
    std::string where = "XLSX sheet '" + sheet_name_ + "'";
    if (in_cell_) where += " cell " + FormatCellRef(ref_);
    return InvalidArgument(where + ": " + what);
  }

  Status StartCell(const char** attributes) {
    in_cell_ = true;
    const char* r = Attribute(attributes, "r");
    if (r != nullptr) {
      Result<CellRef> ref = ParseCellRef(r);
      if (!ref.ok() || ref->row > kXlsxMaxRows || ref->col > kXlsxMaxColumns) {
        in_cell_ = false;
        return Error("bad cell reference '" + std::string(r) + "'");
      }
      ref_ = *ref;
    } else {
      ref_ = CellRef{std::max<int64_t>(row_, 1), col_ + 1};
    }
    row_ = ref_.row;
    col_ = ref_.col;
    const char* type = Attribute(attributes, "t");
    type_ = type != nullptr ? type : "n";
    style_ = 0;
    if (const char* s = Attribute(attributes, "s")) {
      Result<int64_t> style = ParseInteger(s);
      if (!style.ok() || *style < 0)
        return Error("bad style index '" + std::string(s) + "'");
      style_ = *style;
    }
    value_.clear();
    formula_.clear();
    inline_text_.clear();
    has_formula_ = false;
    shared_index_ = -1;
    phonetic_depth_ = 0;
    return Status::OK();
  }

  Status EndCell() {
    Cell cell;
    if (style_ > 0 && static_cast<size_t>(style_) < formats_.size()) {
      cell.format = formats_[static_cast<size_t>(style_)];
    }
    ASSIGN_OR_RETURN(std::optional<std::string> formula, Formula());
    if (formula) {
      cell.value = CellValue::String("=" + *formula);
      ASSIGN_OR_RETURN(cell.cached, Value());  // the result the writer computed
    } else {
      ASSIGN_OR_RETURN(cell.value, Value());
    }
    in_cell_ = false;
    in_value_ = in_formula_ = in_inline_ = in_inline_text_ = false;
    if (cell.empty()) return Status::OK();
    return sink_(ref_, std::move(cell));
  }

  // The cell's formula text (no '='), if it has one.
  Result<std::optional<std::string>> Formula() {
    if (!has_formula_) return std::optional<std::string>();
    if (shared_index_ < 0) {
      if (formula_.empty()) return std::optional<std::string>();
      return std::optional<std::string>(formula_);
    }
    if (!formula_.empty()) {  // the master of a shared formula
      shared_[shared_index_] = {formula_, ref_};
      return std::optional<std::string>(formula_);
    }
    auto master = shared_.find(shared_index_);
    if (master == shared_.end()) {
      return Error("shared formula " + std::to_string(shared_index_) +
                   " is used before it is defined");
    }
    return std::optional<std::string>(ShiftFormula(master->second.text,
                                                   ref_.row - master->second.at.row,
                                                   ref_.col - master->second.at.col));
  }

  Result<CellValue> Value() const {
    if (type_ == "s") {
      Result<int64_t> index = ParseInteger(value_);
      if (!index.ok() || *index < 0 || static_cast<size_t>(*index) >= strings_.size()) {
        return Error("shared string index '" + value_ + "' is not in the table (" +
                     std::to_string(strings_.size()) + " strings)");
      }
      return CellValue::String(strings_[static_cast<size_t>(*index)]);
    }
    if (type_ == "inlineStr") return CellValue::String(inline_text_);
    if (type_ == "str" || type_ == "e" || type_ == "d") {
      return value_.empty() ? CellValue::Null() : CellValue::String(value_);
    }
    if (type_ == "b") {
      if (value_ == "1" || value_ == "true") return CellValue::Boolean(true);
      if (value_ == "0" || value_ == "false") return CellValue::Boolean(false);
      if (value_.empty()) return CellValue::Null();
      return Error("bad boolean '" + value_ + "'");
    }
    if (type_ != "n") return Error("unknown cell type '" + type_ + "'");
    if (value_.empty()) return CellValue::Null();
    double number = 0;
    auto [end, error] =
        std::from_chars(value_.data(), value_.data() + value_.size(), number);
    if (error != std::errc() || end != value_.data() + value_.size() ||
        !std::isfinite(number)) {
      return Error("bad number '" + value_ + "'");
    }
    return CellValue::Number(number);
  }

  struct SharedFormula {
    std::string text;
    CellRef at;
  };

  std::string sheet_name_;
  const std::vector<std::string>& strings_;
  const std::vector<std::string>& formats_;
  const ImportCellSink& sink_;
  std::map<int64_t, SharedFormula> shared_;

  int64_t row_ = 0;
  int64_t col_ = 0;
  bool in_cell_ = false;
  CellRef ref_;
  std::string type_;
  int64_t style_ = 0;
  std::string value_;
  std::string formula_;
  std::string inline_text_;
  bool has_formula_ = false;
  int64_t shared_index_ = -1;
  bool in_value_ = false;
  bool in_formula_ = false;
  bool in_inline_ = false;
  bool in_inline_text_ = false;
  int phonetic_depth_ = 0;
};

}  // namespace

Status ReadXlsx(const PayloadSource& source, const std::string& worksheet,
                const ImportLimits& limits, const ImportCellSink& sink) {
  ZipPackage zip;
  RETURN_IF_ERROR(zip.Open(source));
  const int64_t part_limit = limits.max_xml_part_bytes;
  if (!zip.Has("xl/workbook.xml")) {
    return InvalidArgument("XLSX: not a spreadsheet package (no xl/workbook.xml)");
  }
  WorkbookHandler workbook;
  RETURN_IF_ERROR(ParsePart(zip, "xl/workbook.xml", part_limit, &workbook));
  RelationshipsHandler relationships;
  RETURN_IF_ERROR(
      ParsePart(zip, "xl/_rels/workbook.xml.rels", part_limit, &relationships));

  const SheetEntry* chosen = nullptr;
  std::string part;
  std::string names;
  for (const SheetEntry& sheet : workbook.sheets) {
    auto target = relationships.targets.find(sheet.relationship);
    if (target == relationships.targets.end() || !target->second.worksheet) continue;
    names += (names.empty() ? "'" : ", '") + sheet.name + "'";
    if (chosen == nullptr && (worksheet.empty() || sheet.name == worksheet)) {
      chosen = &sheet;
      part = target->second.path;
    }
  }
  if (chosen == nullptr) {
    if (worksheet.empty()) return InvalidArgument("XLSX: the workbook has no worksheet");
    return InvalidArgument("XLSX: no worksheet named '" + worksheet +
                           "' (the workbook has " +
                           (names.empty() ? std::string("none") : names) + ")");
  }

  SharedStringsHandler strings(limits.max_shared_string_bytes);
  if (zip.Has("xl/sharedStrings.xml")) {
    RETURN_IF_ERROR(ParsePart(zip, "xl/sharedStrings.xml", part_limit, &strings));
  }
  StylesHandler styles;
  if (zip.Has("xl/styles.xml")) {
    RETURN_IF_ERROR(ParsePart(zip, "xl/styles.xml", part_limit, &styles));
  }
  const std::vector<std::string> formats = styles.Formats();
  WorksheetHandler cells(chosen->name, strings.strings, formats, sink);
  return ParsePart(zip, part, part_limit, &cells);
}

}  // namespace sheetlog
