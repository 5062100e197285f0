#include "emulator/table/request_units.h"

#include <algorithm>

namespace sheetlog {

double WriteUnitsForItem(int64_t item_bytes) {
  int64_t units =
      (std::max<int64_t>(item_bytes, 0) + kWriteUnitBytes - 1) / kWriteUnitBytes;
  return static_cast<double>(std::max<int64_t>(units, 1));
}

double ReadUnitsForBytes(int64_t total_bytes, bool strongly_consistent) {
  int64_t units =
      (std::max<int64_t>(total_bytes, 0) + kReadUnitBytes - 1) / kReadUnitBytes;
  double strong = static_cast<double>(std::max<int64_t>(units, 1));
  return strongly_consistent ? strong : strong / 2;
}

int64_t NumberSize(const std::string& decimal_text) {
  // Only the mantissa's significant digits count: sign, decimal point, exponent, and
  // leading and trailing zeros are not stored (DynamoDB keeps numbers normalized).
  std::string digits;
  for (char c : decimal_text) {
    if (c == 'e' || c == 'E') break;
    if (c >= '0' && c <= '9') digits.push_back(c);
  }
  size_t first = digits.find_first_not_of('0');
  int64_t significant = 0;
  if (first != std::string::npos) {
    size_t last = digits.find_last_not_of('0');
    significant = static_cast<int64_t>(last - first + 1);
  }
  significant = std::max<int64_t>(significant, 1);  // zero still takes a digit
  return (significant + 1) / 2 + 1;
}

int64_t IntegerNumberSize(int64_t v) {
  // Same as NumberSize(std::to_string(v)) without the string: count the digits of |v|
  // after dropping trailing zeros.
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (u == 0) return 2;
  while (u % 10 == 0) u /= 10;
  int64_t significant = 0;
  while (u != 0) {
    u /= 10;
    ++significant;
  }
  return (significant + 1) / 2 + 1;
}

}  // namespace sheetlog
