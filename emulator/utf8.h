// UTF-8 decoding, one character at a time, for the emulator's checks of text it stores
// or shows (blob keys, recorded error texts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sheetlog {

struct Utf8Char {
  size_t length = 0;  // 1..4 bytes; 0 if the bytes are not a well-formed character
  uint32_t code = 0;  // the code point, if length > 0
};

// The character starting at text[i] (REQUIRES: i < text.size()). Not well formed
// (length 0): a continuation byte or a lead byte that starts no sequence, a sequence cut
// short or interrupted, an overlong form, a UTF-16 surrogate, or beyond U+10FFFF. NUL is
// well formed (a caller that refuses it checks the code).
Utf8Char DecodeUtf8(std::string_view text, size_t i);

}  // namespace sheetlog
