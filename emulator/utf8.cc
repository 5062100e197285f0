#include "emulator/utf8.h"

namespace sheetlog {

Utf8Char DecodeUtf8(std::string_view text, size_t i) {
  auto byte = [&](size_t j) { return static_cast<uint8_t>(text[j]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) return Utf8Char{1, lead};
  size_t length;
  uint32_t code;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    code = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    code = lead & 0x07;
  } else {
    return {};  // continuation byte, overlong lead (C0, C1) or beyond U+10FFFF
  }
  if (i + length > text.size()) return {};
  for (size_t j = i + 1; j < i + length; ++j) {
    if ((byte(j) & 0xC0) != 0x80) return {};
    code = (code << 6) | (byte(j) & 0x3F);
  }
  if (length == 3 && code < 0x800) return {};                         // overlong
  if (length == 4 && (code < 0x10000 || code > 0x10FFFF)) return {};  // overlong / range
  if (code >= 0xD800 && code <= 0xDFFF) return {};                    // surrogate
  return Utf8Char{length, code};
}

}  // namespace sheetlog
