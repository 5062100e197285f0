#pragma once

namespace sheetlog {
// The sheetlog release (CMakeLists.txt's project VERSION), as printed by `sheetlog
// version`, GET /version and /healthz, and recorded in the data directories it migrates.
const char* Version();
}  // namespace sheetlog
