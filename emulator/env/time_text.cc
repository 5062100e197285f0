#include "emulator/env/time_text.h"

#include <time.h>

#include <charconv>

namespace sheetlog {

std::optional<int64_t> ParseTimePoint(const std::string& text) {
  int64_t seconds = 0;
  const char* end = text.data() + text.size();
  auto [rest_of_number, error] = std::from_chars(text.data(), end, seconds);
  if (!text.empty() && error == std::errc() && rest_of_number == end) return seconds;
  struct tm parts = {};
  const char* rest = strptime(text.c_str(), "%Y-%m-%d", &parts);
  if (rest == nullptr) return std::nullopt;
  if (*rest == 'T') {
    rest = strptime(rest + 1, "%H:%M:%S", &parts);
    if (rest == nullptr) return std::nullopt;
    if (std::string(rest) != "Z" && std::string(rest) != "+00:00") return std::nullopt;
  } else if (*rest != '\0') {
    return std::nullopt;
  }
  return static_cast<int64_t>(timegm(&parts));
}

}  // namespace sheetlog
