#include "src/sheet/xlsx.h"

#include <expat.h>
#include <xlsxwriter.h>
#include <zip.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

namespace sheetlog {

namespace {

constexpr size_t kInflateChunkBytes = 64 * 1024;

// ---- The zip package, read through a PayloadSource (libzip's function source). ----

class ZipSourceAdapter {
 public:
  explicit ZipSourceAdapter(const PayloadSource& source) : source_(source) {
    zip_error_init(&error_);
  }
  ~ZipSourceAdapter() { zip_error_fini(&error_); }

  static zip_int64_t Callback(void* self, void* data, zip_uint64_t length,
                              zip_source_cmd_t command) {
    return static_cast<ZipSourceAdapter*>(self)->Handle(data, length, command);
  }

 private:
  zip_int64_t Handle(void* data, zip_uint64_t length, zip_source_cmd_t command) {
    const auto size = static_cast<zip_uint64_t>(source_.size());
    switch (command) {
      case ZIP_SOURCE_OPEN:
        position_ = 0;
        return 0;
      case ZIP_SOURCE_READ: {
        const zip_uint64_t n = std::min<zip_uint64_t>(length, size - position_);
        if (n == 0) return 0;
        Result<std::string> piece =
            source_.ReadAt(static_cast<int64_t>(position_), static_cast<int64_t>(n));
        if (!piece.ok() || piece->size() != n) {
          zip_error_set(&error_, ZIP_ER_READ, EIO);
          return -1;
        }
        std::memcpy(data, piece->data(), n);
        position_ += n;
        return static_cast<zip_int64_t>(n);
      }
      case ZIP_SOURCE_CLOSE:
      case ZIP_SOURCE_FREE:
        return 0;
      case ZIP_SOURCE_STAT: {
        auto* stat = static_cast<zip_stat_t*>(data);
        zip_stat_init(stat);
        stat->size = size;
        stat->valid |= ZIP_STAT_SIZE;
        return sizeof(zip_stat_t);
      }
      case ZIP_SOURCE_ERROR:
        return zip_error_to_data(&error_, data, length);
      case ZIP_SOURCE_SEEK: {
        const zip_int64_t next =
            zip_source_seek_compute_offset(position_, size, data, length, &error_);
        if (next < 0) return -1;
        position_ = static_cast<zip_uint64_t>(next);
        return 0;
      }
      case ZIP_SOURCE_TELL:
        return static_cast<zip_int64_t>(position_);
      case ZIP_SOURCE_SUPPORTS:
        return zip_source_make_command_bitmap(
            ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
            ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL,
            ZIP_SOURCE_SUPPORTS, -1);
      default:
        zip_error_set(&error_, ZIP_ER_OPNOTSUPP, 0);
        return -1;
    }
  }

  const PayloadSource& source_;
  zip_error_t error_;
  zip_uint64_t position_ = 0;
};

class ZipPackage {
 public:
  ZipPackage() = default;
  ZipPackage(const ZipPackage&) = delete;
  ZipPackage& operator=(const ZipPackage&) = delete;
  ~ZipPackage() {
    if (zip_ != nullptr) zip_discard(zip_);
  }

  Status Open(const PayloadSource& source) {
    adapter_ = std::make_unique<ZipSourceAdapter>(source);
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* zip_source =
        zip_source_function_create(&ZipSourceAdapter::Callback, adapter_.get(), &error);
    if (zip_source == nullptr) {
      zip_error_fini(&error);
      return Internal("libzip: cannot create a source");
    }
    zip_ = zip_open_from_source(zip_source, ZIP_RDONLY, &error);
    if (zip_ == nullptr) {
      std::string why = zip_error_strerror(&error);
      zip_source_free(zip_source);
      zip_error_fini(&error);
      return InvalidArgument("XLSX: the file is truncated or not a zip package (" + why +
                             ")");
    }
    zip_error_fini(&error);
    return Status::OK();
  }

  bool Has(const std::string& name) const {
    return zip_name_locate(zip_, name.c_str(), 0) >= 0;
  }

  // Inflates part `name` and passes it on in pieces. Refuses a part whose directory
  // entry claims more than `limit` bytes before inflating anything, and one that
  // inflates past its claim.
  Status Stream(const std::string& name, int64_t limit,
                const std::function<Status(std::string_view)>& chunk) {
    zip_stat_t stat;
    if (zip_stat(zip_, name.c_str(), 0, &stat) != 0) {
      return InvalidArgument("XLSX: the package has no part '" + name + "'");
    }
    if ((stat.valid & ZIP_STAT_SIZE) == 0) {
      return InvalidArgument("XLSX part '" + name + "' does not declare its size");
    }
    if (stat.size > static_cast<zip_uint64_t>(limit)) {
      return InvalidArgument("XLSX part '" + name + "' claims " +
                             std::to_string(stat.size) +
                             " bytes uncompressed, more than the limit of " +
                             std::to_string(limit) + " bytes");
    }
    zip_file_t* file = zip_fopen_index(zip_, stat.index, 0);
    if (file == nullptr) {
      return InvalidArgument("XLSX part '" + name +
                             "' cannot be opened: " + zip_strerror(zip_));
    }
    std::vector<char> buffer(kInflateChunkBytes);
    zip_uint64_t total = 0;
    Status status;
    while (status.ok()) {
      const zip_int64_t n = zip_fread(file, buffer.data(), buffer.size());
      if (n < 0) {
        status = InvalidArgument("XLSX part '" + name +
                                 "' is damaged: " + zip_file_strerror(file));
        break;
      }
      if (n == 0) break;
      total += static_cast<zip_uint64_t>(n);
      if (total > stat.size) {
        status = InvalidArgument("XLSX part '" + name +
                                 "' inflates past its declared size of " +
                                 std::to_string(stat.size) + " bytes");
        break;
      }
      status = chunk(std::string_view(buffer.data(), static_cast<size_t>(n)));
    }
    zip_fclose(file);
    return status;
  }

 private:
  std::unique_ptr<ZipSourceAdapter> adapter_;
  zip_t* zip_ = nullptr;
};

// ---- XML parts through expat. ----

std::string_view LocalName(const char* name) {
  std::string_view text(name);
  const size_t colon = text.rfind(':');
  return colon == std::string_view::npos ? text : text.substr(colon + 1);
}

// The value of the attribute whose local name is `local` (any prefix), or nullptr.
const char* Attribute(const char** attributes, std::string_view local) {
  for (size_t i = 0; attributes[i] != nullptr; i += 2) {
    if (LocalName(attributes[i]) == local) return attributes[i + 1];
  }
  return nullptr;
}

class XmlHandler {
 public:
  virtual ~XmlHandler() = default;
  virtual Status Start(std::string_view name, const char** attributes) = 0;
  virtual Status End(std::string_view name) = 0;
  virtual Status Text(std::string_view) { return Status::OK(); }
};

class XmlStream {
 public:
  XmlStream(std::string part, XmlHandler* handler)
      : part_(std::move(part)), handler_(handler), parser_(XML_ParserCreate(nullptr)) {
    XML_SetUserData(parser_, this);
    XML_SetElementHandler(parser_, &XmlStream::OnStart, &XmlStream::OnEnd);
    XML_SetCharacterDataHandler(parser_, &XmlStream::OnText);
    // No document type declarations at all: that is where entity bombs live, and no
    // spreadsheet part needs one.
    XML_SetStartDoctypeDeclHandler(parser_, &XmlStream::OnDoctype);
  }
  ~XmlStream() { XML_ParserFree(parser_); }

  Status Feed(std::string_view bytes, bool last) {
    if (XML_Parse(parser_, bytes.data(), static_cast<int>(bytes.size()), last ? 1 : 0) ==
        XML_STATUS_OK) {
      return Status::OK();
    }
    if (!status_.ok()) return status_;
    return InvalidArgument("XLSX part '" + part_ + "' is not well-formed XML (line " +
                           std::to_string(XML_GetCurrentLineNumber(parser_)) + ": " +
                           XML_ErrorString(XML_GetErrorCode(parser_)) + ")");
  }

 private:
  void Stop(Status status) {
    if (status.ok() || !status_.ok()) return;
    status_ = std::move(status);
    XML_StopParser(parser_, XML_FALSE);
  }
  static void OnStart(void* self, const char* name, const char** attributes) {
    auto* s = static_cast<XmlStream*>(self);
    if (s->status_.ok()) s->Stop(s->handler_->Start(LocalName(name), attributes));
  }
  static void OnEnd(void* self, const char* name) {
    auto* s = static_cast<XmlStream*>(self);
    if (s->status_.ok()) s->Stop(s->handler_->End(LocalName(name)));
  }
  static void OnText(void* self, const char* text, int length) {
    auto* s = static_cast<XmlStream*>(self);
    if (s->status_.ok()) {
      s->Stop(s->handler_->Text(std::string_view(text, static_cast<size_t>(length))));
    }
  }
  static void OnDoctype(void* self, const char*, const char*, const char*, int) {
    auto* s = static_cast<XmlStream*>(self);
    s->Stop(InvalidArgument("XLSX part '" + s->part_ +
                            "' has a DOCTYPE declaration, which spreadsheet files "
                            "never need (refused: entity expansion bombs live there)"));
  }

  std::string part_;
  XmlHandler* handler_;
  XML_Parser parser_;
  Status status_;
};

Status ParsePart(ZipPackage& zip, const std::string& part, int64_t limit,
                 XmlHandler* handler) {
  XmlStream xml(part, handler);
  RETURN_IF_ERROR(zip.Stream(part, limit, [&](std::string_view bytes) {
    return xml.Feed(bytes, /*last=*/false);
  }));
  return xml.Feed({}, /*last=*/true);
}

Result<int64_t> ParseInteger(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument("not an integer: '" + std::string(text) + "'");
  }
  return value;
}

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

// ---- Shared formulas: the master's text with its relative references moved. ----

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '$';
}

// Moves every A1 reference in `formula` by (rows, cols), leaving $-anchored parts,
// string literals and quoted sheet names alone. A reference moved off the grid
// becomes #REF!, as spreadsheet tools do.
std::string ShiftFormula(std::string_view formula, int64_t rows, int64_t cols) {
  std::string out;
  size_t i = 0;
  while (i < formula.size()) {
    const char c = formula[i];
    if (c == '"' || c == '\'') {
      // A literal or quoted sheet name: up to the closing quote (doubled = escaped).
      size_t end = i + 1;
      while (end < formula.size()) {
        if (formula[end] == c) {
          if (end + 1 < formula.size() && formula[end + 1] == c) {
            end += 2;
            continue;
          }
          break;
        }
        ++end;
      }
      end = std::min(end + 1, formula.size());
      out.append(formula.substr(i, end - i));
      i = end;
      continue;
    }
    if (!IsNameChar(c)) {
      out.push_back(c);
      ++i;
      continue;
    }
    size_t end = i;
    while (end < formula.size() && IsNameChar(formula[end])) ++end;
    std::string_view token = formula.substr(i, end - i);
    i = end;
    // $?LETTERS$?DIGITS, not a function name (followed by '(') nor a sheet name ('!').
    size_t p = 0;
    const bool col_fixed = p < token.size() && token[p] == '$';
    if (col_fixed) ++p;
    const size_t letters_at = p;
    while (p < token.size() && token[p] >= 'A' && token[p] <= 'Z') ++p;
    const size_t letters = p - letters_at;
    const bool row_fixed = p < token.size() && token[p] == '$';
    if (row_fixed) ++p;
    const size_t digits_at = p;
    while (p < token.size() && token[p] >= '0' && token[p] <= '9') ++p;
    const bool next_is_call_or_sheet =
        end < formula.size() && (formula[end] == '(' || formula[end] == '!');
    if (letters == 0 || letters > 3 || p == digits_at || p != token.size() ||
        next_is_call_or_sheet) {
      out.append(token);
      continue;
    }
    Result<int64_t> col = ParseColumn(token.substr(letters_at, letters));
    Result<int64_t> row = ParseInteger(token.substr(digits_at));
    if (!col.ok() || !row.ok()) {
      out.append(token);
      continue;
    }
    const int64_t new_col = *col + (col_fixed ? 0 : cols);
    const int64_t new_row = *row + (row_fixed ? 0 : rows);
    if (new_col < 1 || new_col > kXlsxMaxColumns || new_row < 1 ||
        new_row > kXlsxMaxRows) {
      out.append("#REF!");
      continue;
    }
    out.append(col_fixed ? "$" : "");
    out.append(FormatColumn(new_col));
    out.append(row_fixed ? "$" : "");
    out.append(std::to_string(new_row));
  }
  return out;
}

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

// ---- Writing. ----

struct XlsxFileWriter::Impl {
  lxw_workbook* workbook = nullptr;
  lxw_worksheet* worksheet = nullptr;
  std::map<std::string, lxw_format*> formats;
  bool closed = false;
};

XlsxFileWriter::XlsxFileWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

XlsxFileWriter::~XlsxFileWriter() {
  // libxlsxwriter frees a workbook only by closing it; the caller drops the file.
  if (impl_ && !impl_->closed) workbook_close(impl_->workbook);
}

Result<std::unique_ptr<XlsxFileWriter>> XlsxFileWriter::Create(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  lxw_workbook_options options = {};
  options.constant_memory = LXW_TRUE;
  impl->workbook = workbook_new_opt(path.c_str(), &options);
  if (impl->workbook == nullptr) return Internal("libxlsxwriter: cannot create " + path);
  impl->worksheet = workbook_add_worksheet(impl->workbook, "Sheet1");
  if (impl->worksheet == nullptr) {
    workbook_close(impl->workbook);
    return Internal("libxlsxwriter: cannot add a worksheet");
  }
  return std::unique_ptr<XlsxFileWriter>(new XlsxFileWriter(std::move(impl)));
}

Status XlsxFileWriter::Write(const CellRef& ref, const Cell& cell) {
  if (ref.row > kXlsxMaxRows || ref.col > kXlsxMaxColumns) {
    return InvalidArgument("cell " + FormatCellRef(ref) +
                           " is outside XLSX's grid (1048576 rows, 16384 columns)");
  }
  lxw_format* format = nullptr;
  if (!cell.format.empty()) {
    auto [it, added] = impl_->formats.emplace(cell.format, nullptr);
    if (added) {
      it->second = workbook_add_format(impl_->workbook);
      format_set_num_format(it->second, cell.format.c_str());
    }
    format = it->second;
  }
  const auto row = static_cast<lxw_row_t>(ref.row - 1);
  const auto col = static_cast<lxw_col_t>(ref.col - 1);
  const CellValue& value = cell.value;
  lxw_error error = LXW_NO_ERROR;
  if (value.is_number()) {
    error = worksheet_write_number(impl_->worksheet, row, col, value.number(), format);
  } else if (value.is_boolean()) {
    error = worksheet_write_boolean(impl_->worksheet, row, col, value.boolean(), format);
  } else if (value.is_formula() && cell.cached.get().is_number()) {
    error =
        worksheet_write_formula_num(impl_->worksheet, row, col, value.string().c_str(),
                                    format, cell.cached.get().number());
  } else if (value.is_formula() && cell.cached.get().is_string()) {
    error =
        worksheet_write_formula_str(impl_->worksheet, row, col, value.string().c_str(),
                                    format, cell.cached.get().string().c_str());
  } else if (value.is_formula()) {
    // No cached result (or a boolean one, which libxlsxwriter cannot write): the
    // reader computes it.
    error = worksheet_write_formula(impl_->worksheet, row, col, value.string().c_str(),
                                    format);
  } else if (value.is_string()) {
    error = worksheet_write_string(impl_->worksheet, row, col, value.string().c_str(),
                                   format);
  } else if (value.is_error()) {
    // libxlsxwriter writes no error cells: the error's text, as a spreadsheet shows it.
    error =
        worksheet_write_string(impl_->worksheet, row, col, value.error().c_str(), format);
  } else {
    error = worksheet_write_blank(impl_->worksheet, row, col, format);
  }
  if (error != LXW_NO_ERROR) {
    return InvalidArgument("cell " + FormatCellRef(ref) +
                           " cannot be written as XLSX: " + lxw_strerror(error));
  }
  return Status::OK();
}

Status XlsxFileWriter::Close() {
  impl_->closed = true;
  lxw_error error = workbook_close(impl_->workbook);
  if (error != LXW_NO_ERROR) {
    return Internal(std::string("libxlsxwriter: ") + lxw_strerror(error));
  }
  return Status::OK();
}

}  // namespace sheetlog
