#include "src/api/byte_range.h"

#include <charconv>

namespace sheetlog::api {

namespace {

// A non-empty run of digits that fits int64_t, or -1.
int64_t ParseDigits(std::string_view text) {
  if (text.empty()) return -1;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
  }
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return -1;
  return value;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = (a[i] >= 'A' && a[i] <= 'Z') ? a[i] - 'A' + 'a' : a[i];
    const char y = (b[i] >= 'A' && b[i] <= 'Z') ? b[i] - 'A' + 'a' : b[i];
    if (x != y) return false;
  }
  return true;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace

ByteRange ParseByteRange(std::string_view header, int64_t size) {
  ByteRange whole;
  header = Trim(header);
  const size_t equals = header.find('=');
  if (equals == std::string_view::npos) return whole;
  if (!EqualsIgnoringCase(Trim(header.substr(0, equals)), "bytes")) return whole;
  const std::string_view spec = Trim(header.substr(equals + 1));
  if (spec.find(',') != std::string_view::npos) return whole;  // several: ignored
  const size_t dash = spec.find('-');
  if (dash == std::string_view::npos) return whole;
  const std::string_view first_text = spec.substr(0, dash);
  const std::string_view last_text = spec.substr(dash + 1);

  ByteRange unsatisfiable;
  unsatisfiable.kind = ByteRange::Kind::kUnsatisfiable;
  ByteRange range;
  range.kind = ByteRange::Kind::kPartial;
  if (first_text.empty()) {  // bytes=-suffix
    const int64_t suffix = ParseDigits(last_text);
    if (suffix < 0) return whole;
    if (suffix == 0 || size == 0) return unsatisfiable;
    range.first = suffix >= size ? 0 : size - suffix;
    range.last = size - 1;
    return range;
  }
  const int64_t first = ParseDigits(first_text);
  if (first < 0) return whole;
  int64_t last = size - 1;
  if (!last_text.empty()) {
    last = ParseDigits(last_text);
    if (last < 0 || last < first) return whole;  // invalid: ignored
  }
  if (first >= size) return unsatisfiable;
  range.first = first;
  range.last = last < size - 1 ? last : size - 1;
  return range;
}

}  // namespace sheetlog::api
