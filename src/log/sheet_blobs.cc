#include "src/log/sheet_blobs.h"

namespace sheetlog {

std::optional<std::string_view> ServerBlobArea(std::string_view key) {
  for (std::string_view area : kServerBlobAreas) {
    if (key.substr(0, area.size()) == area) return area;
  }
  return std::nullopt;
}

std::vector<std::string> SheetBlobPrefixes(std::string_view sheet_id) {
  std::vector<std::string> prefixes;
  for (std::string_view area : kServerBlobAreas) {
    prefixes.push_back(std::string(area) + std::string(sheet_id) + "/");
  }
  return prefixes;
}

}  // namespace sheetlog
