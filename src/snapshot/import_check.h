// The spreadsheet's rule for upload payloads (Uploads::Options::validate_payload): an
// Import file is read in full when its upload completes, so a file that does not parse
// is refused (400 naming the line or cell) before its entry exists and can never fail
// later in the snapshot pipeline. Other entry types' payloads are opaque.
#pragma once

#include "src/log/uploads.h"

namespace sheetlog {

Uploads::Validator ImportPayloadCheck();

}  // namespace sheetlog
