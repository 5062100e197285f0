// Blob keys: which strings name an object in the blob store (the S3 stand-in), checked
// before any key is turned into a path, so that no key can reach outside the store's
// root directory.
//
// A valid key is 1..1024 bytes of '/'-separated parts. Each part:
//   - is 1..255 bytes (a part becomes one directory name; 255 is the usual NAME_MAX);
//   - is never "." or ".." (they would name the directory itself or its parent);
//   - is well-formed UTF-8 of printable characters: ASCII 0x20..0x7E except '\', or a
//     code point >= U+00A0 (no NUL, no C0/C1 control characters, no DEL).
// So a key never starts or ends with '/', never contains "//", and never contains '\'
// (the store reserves names with '\' for its own files, see blob_store.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "emulator/status.h"

namespace sheetlog {

inline constexpr size_t kMaxBlobKeyBytes = 1024;
inline constexpr size_t kMaxBlobKeyPartBytes = 255;

// OK if `key` is a valid blob key; otherwise InvalidArgument naming the rule broken and,
// where it helps, the offending part, e.g.
//   invalid blob key "a/../b": part ".." is not allowed
Status ValidateBlobKey(std::string_view key);

// OK if `part` is a valid single part of a key (the rules above, no '/').
Status ValidateBlobKeyPart(std::string_view part);

// True if `text` is well-formed UTF-8 of printable characters as defined above, where
// '\' counts as printable unless `allow_backslash` is false. Used for keys, tags and
// content types.
bool IsPrintableUtf8(std::string_view text, bool allow_backslash);

// `text` quoted for an error message: non-printable bytes as \xNN, at most ~80 bytes.
std::string QuoteForMessage(std::string_view text);

}  // namespace sheetlog
