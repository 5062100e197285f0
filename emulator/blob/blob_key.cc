#include "emulator/blob/blob_key.h"

#include <cstdint>
#include <cstdio>

#include "emulator/utf8.h"

namespace sheetlog {
namespace {

// Length of the UTF-8 sequence starting at text[i] if it is well formed and encodes a
// printable code point (>= U+00A0), else 0. REQUIRES: text[i] >= 0x80.
size_t PrintableMultiByteLength(std::string_view text, size_t i) {
  const Utf8Char ch = DecodeUtf8(text, i);
  return ch.code >= 0xA0 ? ch.length : 0;  // below: a C1 control (or not well formed)
}

Status KeyError(std::string_view key, std::string_view why) {
  return InvalidArgument("invalid blob key " + QuoteForMessage(key) + ": " +
                         std::string(why));
}

}  // namespace

bool IsPrintableUtf8(std::string_view text, bool allow_backslash) {
  for (size_t i = 0; i < text.size();) {
    uint8_t c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F) return false;
      if (c == '\\' && !allow_backslash) return false;
      ++i;
      continue;
    }
    size_t length = PrintableMultiByteLength(text, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string QuoteForMessage(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    uint8_t c = static_cast<uint8_t>(text[i]);
    if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += "\"";
  return out;
}

namespace {

// Checks one part; errors name `shown` (the whole key, or the part alone).
Status CheckPart(std::string_view shown, std::string_view part) {
  if (part.empty()) return KeyError(shown, "empty part");
  if (part.size() > kMaxBlobKeyPartBytes) {
    return KeyError(shown, "a part is " + std::to_string(part.size()) +
                               " bytes, more than " +
                               std::to_string(kMaxBlobKeyPartBytes));
  }
  if (part == "." || part == "..") {
    return KeyError(shown, "part \"" + std::string(part) + "\" is not allowed");
  }
  if (part.find('/') != std::string_view::npos)
    return KeyError(shown, "part contains '/'");
  if (part.find('\0') != std::string_view::npos) return KeyError(shown, "contains NUL");
  if (part.find('\\') != std::string_view::npos) {
    return KeyError(shown, "contains a backslash");
  }
  if (!IsPrintableUtf8(part, /*allow_backslash=*/false)) {
    return KeyError(shown, "contains a control character or malformed UTF-8");
  }
  return Status::OK();
}

}  // namespace

Status ValidateBlobKeyPart(std::string_view part) { return CheckPart(part, part); }

Status ValidateBlobKey(std::string_view key) {
  if (key.empty()) return KeyError(key, "empty key");
  if (key.size() > kMaxBlobKeyBytes) {
    return KeyError(key, "key is " + std::to_string(key.size()) + " bytes, more than " +
                             std::to_string(kMaxBlobKeyBytes));
  }
  if (key.front() == '/') return KeyError(key, "must not start with '/' (absolute path)");
  if (key.back() == '/') return KeyError(key, "must not end with '/' (empty part)");
  size_t start = 0;
  while (true) {
    size_t slash = key.find('/', start);
    size_t end = slash == std::string_view::npos ? key.size() : slash;
    std::string_view part = key.substr(start, end - start);
    if (part.empty()) return KeyError(key, "empty part (\"//\")");
    RETURN_IF_ERROR(CheckPart(key, part));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Status::OK();
}

}  // namespace sheetlog
