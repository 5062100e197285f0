#include "src/version.h"

// The one place the release is written is CMakeLists.txt's project(VERSION): the build
// passes it here, and the Debian package (scripts/package) reads it from the binary.
#ifndef SHEETLOG_VERSION
#error "SHEETLOG_VERSION is defined by CMakeLists.txt from project(VERSION)"
#endif

namespace sheetlog {
const char* Version() { return SHEETLOG_VERSION; }
}  // namespace sheetlog
