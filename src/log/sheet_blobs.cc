#include "src/log/sheet_blobs.h"

#include <algorithm>

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

std::vector<std::string> DeletableBlobs(const std::vector<std::string>& keys,
                                        std::string_view sheet_id,
                                        const std::set<std::string>& held) {
  const std::vector<std::string> own = SheetBlobPrefixes(sheet_id);
  std::vector<std::string> out;
  for (const std::string& key : keys) {
    if (held.count(key) != 0) continue;
    const bool owned = std::any_of(own.begin(), own.end(), [&](const std::string& p) {
      return key.compare(0, p.size(), p) == 0;
    });
    if (owned) out.push_back(key);
  }
  return out;
}

}  // namespace sheetlog
