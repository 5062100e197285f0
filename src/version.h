#pragma once

namespace sheetlog {
// The sheetlog release, as printed by `sheetlog --version` and /healthz.
const char* Version();
}  // namespace sheetlog
