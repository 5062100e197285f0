#include "src/version.h"

namespace sheetlog {
const char* Version() { return "0.1.0"; }
}  // namespace sheetlog
