#include "src/api/json_input.h"

#include <cstdio>
#include <utility>
#include <vector>

namespace sheetlog::api {

namespace {

using json = nlohmann::json;

// Length of the valid UTF-8 sequence starting at text[i], or 0 if there is none.
size_t ValidSequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char min_second = 0x80, max_second = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min_second = 0xA0;  // overlong
    if (lead == 0xED) max_second = 0x9F;  // surrogates U+D800..U+DFFF
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min_second = 0x90;  // overlong
    if (lead == 0xF4) max_second = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // continuation byte, C0/C1 (overlong), F5..FF
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < min_second || byte(i + 1) > max_second) return 0;
  for (size_t k = 2; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return length;
}

// Offset of the first byte that is not valid UTF-8, or npos.
size_t FirstInvalidUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = ValidSequenceLength(text, i);
    if (length == 0) return i;
    i += length;
  }
  return std::string_view::npos;
}

// nlohmann's what() without its "[json.exception.parse_error.101] " prefix.
std::string WithoutExceptionPrefix(const char* what) {
  std::string message(what);
  if (message.rfind("[json.exception.", 0) == 0) {
    const size_t end = message.find("] ");
    if (end != std::string::npos) message.erase(0, end + 2);
  }
  return EscapeInvalidUtf8(message);
}

// The deepest nesting of arrays and objects in `text`, scanning bytes without
// recursion and stopping as soon as `limit` is exceeded (then returns limit + 1).
// Brackets inside strings do not count. Malformed text gives some depth; the parser
// that runs afterwards reports the syntax error.
int ScanDepth(std::string_view text, int limit, size_t* deepest_at) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        ++depth;
        if (depth > deepest) {
          deepest = depth;
          if (deepest > limit) {
            *deepest_at = i;
            return deepest;
          }
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return deepest;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  return FirstInvalidUtf8(text) == std::string_view::npos;
}

Status CheckUtf8(std::string_view text, std::string_view what) {
  const size_t bad = FirstInvalidUtf8(text);
  if (bad == std::string_view::npos) return Status::OK();
  return InvalidArgument(std::string(what) + " is not valid UTF-8 (byte " +
                         std::to_string(bad) + ")");
}

std::string EscapeInvalidUtf8(std::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = ValidSequenceLength(text, i);
    if (length > 0) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    char escaped[8];
    std::snprintf(escaped, sizeof(escaped), "\\x%02X",
                  static_cast<unsigned char>(text[i]));
    out += escaped;
    ++i;
  }
  return out;
}

Result<json> ParseJsonStrict(std::string_view text, int max_depth) {
  const size_t bad = FirstInvalidUtf8(text);
  if (bad != std::string_view::npos) {
    return InvalidArgument("malformed JSON: the body is not valid UTF-8 (byte " +
                           std::to_string(bad) + ")");
  }
  size_t deepest_at = 0;
  if (ScanDepth(text, max_depth, &deepest_at) > max_depth) {
    return InvalidArgument("malformed JSON: arrays and objects are nested deeper than " +
                           std::to_string(max_depth) + " levels (at byte " +
                           std::to_string(deepest_at) + ")");
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // nlohmann's message names the byte offset and what it expected.
    return InvalidArgument("malformed JSON: " + WithoutExceptionPrefix(e.what()));
  } catch (const json::out_of_range& e) {
    // 406: a number that overflows a double ("number overflow parsing '1e400'").
    return InvalidArgument(
        "malformed JSON: a number is out of range (JSON numbers "
        "must fit a 64-bit float): " +
        WithoutExceptionPrefix(e.what()));
  } catch (const json::exception& e) {
    return InvalidArgument("malformed JSON: " + WithoutExceptionPrefix(e.what()));
  }
}

json StoredJsonForReply(std::string_view text) {
  Result<json> parsed = ParseJsonStrict(text);
  if (parsed.ok()) return std::move(parsed).value();
  return json(std::string(text));
}

int JsonDepth(const json& value) {
  int deepest = 0;
  std::vector<std::pair<const json*, int>> pending{{&value, 0}};
  while (!pending.empty()) {
    auto [node, depth] = pending.back();
    pending.pop_back();
    if (!node->is_structured()) continue;
    const int inner = depth + 1;
    if (inner > deepest) deepest = inner;
    for (const json& child : *node) pending.emplace_back(&child, inner);
  }
  return deepest;
}

std::string DumpJsonSafely(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace sheetlog::api
