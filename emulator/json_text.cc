#include "emulator/json_text.h"

namespace sheetlog {

nlohmann::json ParseJsonOrDiscarded(std::string_view text) {
  return nlohmann::json::parse(text.begin(), text.end(), nullptr,
                               /*allow_exceptions=*/false);
}

nlohmann::json ParseJson(std::string_view text) {
  return nlohmann::json::parse(text.begin(), text.end());
}

}  // namespace sheetlog
