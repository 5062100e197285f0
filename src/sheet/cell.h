// Cell values and cells.
//
// A CellValue is null (empty), a number (a double: integers are exact up to 2^53), a
// string, a boolean, or an error value (infinisheet's CellError: one of the codes of
// kCellErrorCodes, such as "#DIV/0!"). A string that starts with '=' is a formula,
// kept as text.
// A Cell is a value plus an optional number/display format ("" = none). A cell with a
// null value and no format is *empty*: the sheet does not store it, and writing an
// empty cell clears the position. A null value with a format is a formatted blank cell
// and is stored. A formula may carry its *cached* result: the value the spreadsheet
// tool that wrote it last computed (an imported XLSX keeps it; sheetlog does not
// evaluate formulas, so it is never recomputed and a client may show it as is).
//
// JSON: a value is a JSON number, string, boolean or null, or an error value
// {"type": "CellError", "value": "#DIV/0!"}; other objects and arrays are rejected
// where a value is expected. A JSON integer that a double cannot represent
// exactly (beyond 2^53, e.g. 9007199254740993) is rejected rather than silently
// rounded. A *cell spec* (where the API accepts a cell) is either a bare value or
// {"value": v, "format"?: str, "cached"?: v} ("cached" only with a formula value; null
// means none).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "emulator/status.h"

namespace sheetlog {

// The error values a cell may hold (infinisheet's CellErrorValue, Excel's error codes).
inline constexpr std::string_view kCellErrorCodes[] = {
    "#NULL!", "#DIV/0!",       "#VALUE!", "#REF!",     "#NAME?",  "#NUM!",
    "#N/A",   "#GETTING_DATA", "#SPILL!", "#UNKNOWN!", "#FIELD!", "#CALC!"};

class CellValue {
 public:
  CellValue() = default;  // null
  static CellValue Null() { return CellValue(); }
  static CellValue Number(double v) { return CellValue(Rep(v)); }
  static CellValue String(std::string v) { return CellValue(Rep(std::move(v))); }
  static CellValue Boolean(bool v) { return CellValue(Rep(v)); }
  // REQUIRES: `code` is one of kCellErrorCodes (FromJson checks it).
  static CellValue Error(std::string code) {
    return CellValue(Rep(ErrorCode{std::move(code)}));
  }

  bool is_null() const { return std::holds_alternative<std::monostate>(rep_); }
  bool is_number() const { return std::holds_alternative<double>(rep_); }
  bool is_string() const { return std::holds_alternative<std::string>(rep_); }
  bool is_boolean() const { return std::holds_alternative<bool>(rep_); }
  bool is_error() const { return std::holds_alternative<ErrorCode>(rep_); }
  // A string beginning with '='.
  bool is_formula() const {
    return is_string() && !string().empty() && string()[0] == '=';
  }

  // REQUIRES: the matching is_*().
  double number() const { return std::get<double>(rep_); }
  const std::string& string() const { return std::get<std::string>(rep_); }
  bool boolean() const { return std::get<bool>(rep_); }
  const std::string& error() const { return std::get<ErrorCode>(rep_).code; }

  // Numbers that are integral and within +-2^53 encode as JSON integers (100, not
  // 100.0), others as JSON floats.
  nlohmann::json ToJson() const;
  // InvalidArgument for objects, arrays, inexact integers, non-finite numbers. The
  // message does not name a field; callers add that context.
  static Result<CellValue> FromJson(const nlohmann::json& j);

  // Numbers compare by value (0.0 == -0.0).
  bool operator==(const CellValue&) const = default;

  // For test failure messages: 1.5, "text", true, null.
  std::string DebugString() const;

 private:
  struct ErrorCode {
    std::string code;
    bool operator==(const ErrorCode&) const = default;
  };
  using Rep = std::variant<std::monostate, double, bool, std::string, ErrorCode>;
  explicit CellValue(Rep rep) : rep_(std::move(rep)) {}
  Rep rep_;
};

// A formula's cached result, or none: a CellValue kept out of line, so that the many
// cells without one pay one pointer for it, not a whole CellValue. Immutable and
// shared between copies.
class CachedResult {
 public:
  CachedResult() = default;
  // A null value is no result. Implicit: a result is spelled as its value.
  CachedResult(CellValue value)
      : value_(value.is_null() ? nullptr
                               : std::make_shared<const CellValue>(std::move(value))) {}

  bool is_null() const { return value_ == nullptr; }
  // The result; a null CellValue for none.
  const CellValue& get() const { return value_ ? *value_ : kNone; }

  bool operator==(const CachedResult& other) const { return get() == other.get(); }

 private:
  static inline const CellValue kNone;
  std::shared_ptr<const CellValue> value_;
};

struct Cell {
  Cell() = default;
  // Not explicit: {value, format} and {value, format, cached} spell cells everywhere.
  Cell(CellValue value_in, std::string format_in = "", CachedResult cached_in = {})
      : value(std::move(value_in)),
        format(std::move(format_in)),
        cached(std::move(cached_in)) {}

  CellValue value;
  std::string format;   // "" = no format
  CachedResult cached;  // a formula's cached result; none for non-formulas

  // Null value and no format: not stored; writing it clears the position.
  bool empty() const { return value.is_null() && format.empty(); }

  // Canonical cell spec: the bare value without a format or cached result, else
  // {"value", "format"?, "cached"?}.
  nlohmann::json ToJson() const;
  // Accepts a bare value or {"value": v, "format"?: str, "cached"?: v} (no other
  // fields; a non-null "cached" only with a formula value).
  static Result<Cell> FromJson(const nlohmann::json& j);

  bool operator==(const Cell&) const = default;
  std::string DebugString() const;
};

// "number", "string", "boolean", "null", "object", "array": for error messages.
std::string_view JsonTypeName(const nlohmann::json& j);

// gtest printers.
void PrintTo(const CellValue& value, std::ostream* os);
void PrintTo(const Cell& cell, std::ostream* os);

}  // namespace sheetlog
