// The web console's files (console/ at the repository root), compiled into the binary by
// cmake/embed_console.cmake so that the console works offline with nothing installed
// beside the binary.
#pragma once

#include <string_view>
#include <vector>

namespace sheetlog::api {

struct ConsoleAsset {
  std::string_view path;          // relative to console/, e.g. "app.js", "pages/log.js"
  std::string_view content_type;  // e.g. "text/javascript; charset=utf-8"
  std::string_view bytes;
};

// Every asset, in path order. Defined in the generated console_assets.cc.
const std::vector<ConsoleAsset>& ConsoleAssets();

}  // namespace sheetlog::api
