// Whole decimal integers in spreadsheet files (XLSX row numbers and ids, A1 rows in
// formulas): the whole text, no sign other than '-', no spaces, within int64.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "emulator/status.h"

namespace sheetlog {

// InvalidArgument ("not an integer: '<text>'") unless `text` is exactly one in range.
inline Result<int64_t> ParseInteger(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument("not an integer: '" + std::string(text) + "'");
  }
  return value;
}

}  // namespace sheetlog
