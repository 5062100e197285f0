#include "src/sheet/cell.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>

namespace sheetlog {
namespace {

constexpr double kTwoPow53 = 9007199254740992.0;

// {"type": "CellError", ...}: an error value, where a value or a cell spec may stand.
bool IsCellErrorObject(const nlohmann::json& j) {
  return j.is_object() && j.contains("type") && j["type"] == "CellError";
}

}  // namespace

std::string_view JsonTypeName(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "number";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::array:
      return "array";
    default:
      return "binary";
  }
}

nlohmann::json CellValue::ToJson() const {
  if (is_number()) {
    double v = number();
    if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) <= kTwoPow53) {
      return static_cast<int64_t>(v);
    }
    return v;
  }
  if (is_string()) return string();
  if (is_boolean()) return boolean();
  if (is_error()) return nlohmann::json{{"type", "CellError"}, {"value", error()}};
  return nullptr;
}

Result<CellValue> CellValue::FromJson(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return CellValue::Null();
    case nlohmann::json::value_t::boolean:
      return CellValue::Boolean(j.get<bool>());
    case nlohmann::json::value_t::string:
      return CellValue::String(j.get<std::string>());
    case nlohmann::json::value_t::number_integer: {
      int64_t i = j.get<int64_t>();
      double d = static_cast<double>(i);
      // Compare in the integer domain; 2^63 itself (INT64_MAX rounded up) would
      // overflow the cast back.
      if (d >= 9223372036854775808.0 || static_cast<int64_t>(d) != i) {
        return InvalidArgument("integer " + std::to_string(i) +
                               " cannot be represented exactly as a number (limit 2^53)");
      }
      return CellValue::Number(d);
    }
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      double d = static_cast<double>(u);
      if (d >= 18446744073709551616.0 || static_cast<uint64_t>(d) != u) {
        return InvalidArgument("integer " + std::to_string(u) +
                               " cannot be represented exactly as a number (limit 2^53)");
      }
      return CellValue::Number(d);
    }
    case nlohmann::json::value_t::number_float: {
      double d = j.get<double>();
      if (!std::isfinite(d)) return InvalidArgument("number is not finite");
      return CellValue::Number(d);
    }
    case nlohmann::json::value_t::object: {
      if (!IsCellErrorObject(j)) break;
      for (const auto& [key, item] : j.items()) {
        if (key != "type" && key != "value") {
          return InvalidArgument("unknown field '" + key + "' in a CellError");
        }
      }
      const auto value = j.find("value");
      if (value == j.end() || !value->is_string()) {
        return InvalidArgument("a CellError needs a string 'value' such as \"#DIV/0!\"");
      }
      const std::string code = value->get<std::string>();
      if (std::find(std::begin(kCellErrorCodes), std::end(kCellErrorCodes), code) ==
          std::end(kCellErrorCodes)) {
        return InvalidArgument("'" + code +
                               "' is not an error value (#NULL!, #DIV/0!, #VALUE!, "
                               "#REF!, #NAME?, #NUM!, #N/A, #GETTING_DATA, #SPILL!, "
                               "#UNKNOWN!, #FIELD!, #CALC!)");
      }
      return CellValue::Error(code);
    }
    default:
      break;
  }
  return InvalidArgument("expected a number, string, boolean or null, got " +
                         std::string(JsonTypeName(j)));
}

std::string CellValue::DebugString() const {
  if (is_null()) return "null";
  return ToJson().dump();
}

nlohmann::json Cell::ToJson() const {
  if (format.empty() && cached.is_null()) return value.ToJson();
  nlohmann::json out{{"value", value.ToJson()}};
  if (!format.empty()) out["format"] = format;
  if (!cached.is_null()) out["cached"] = cached.get().ToJson();
  return out;
}

Result<Cell> Cell::FromJson(const nlohmann::json& j) {
  if (!j.is_object() || IsCellErrorObject(j)) {
    if (j.is_array()) {
      return InvalidArgument("expected a value or {\"value\", \"format\"}, got array");
    }
    ASSIGN_OR_RETURN(CellValue value, CellValue::FromJson(j));
    return Cell{std::move(value), ""};
  }
  Cell cell;
  bool has_value = false;
  for (const auto& [key, item] : j.items()) {
    if (key == "value") {
      auto value = CellValue::FromJson(item);
      if (!value.ok()) return value.status().Annotate("field 'value'");
      cell.value = std::move(value).value();
      has_value = true;
    } else if (key == "format") {
      if (!item.is_string()) {
        return InvalidArgument("field 'format' must be a string, got " +
                               std::string(JsonTypeName(item)));
      }
      cell.format = item.get<std::string>();
    } else if (key == "cached") {
      auto cached = CellValue::FromJson(item);
      if (!cached.ok()) return cached.status().Annotate("field 'cached'");
      cell.cached = std::move(cached).value();
    } else {
      return InvalidArgument("unknown field '" + key + "' in a cell");
    }
  }
  if (!has_value) return InvalidArgument("missing field 'value' in a cell");
  if (!cell.cached.is_null() && !cell.value.is_formula()) {
    return InvalidArgument(
        "field 'cached' is a formula's result: only a value starting with '=' has one");
  }
  return cell;
}

std::string Cell::DebugString() const {
  std::string out = value.DebugString();
  if (!cached.is_null()) out += " (cached " + cached.get().DebugString() + ")";
  if (!format.empty()) out += " [" + format + "]";
  return out;
}

void PrintTo(const CellValue& value, std::ostream* os) { *os << value.DebugString(); }
void PrintTo(const Cell& cell, std::ostream* os) { *os << cell.DebugString(); }

}  // namespace sheetlog
