// Strict reading of request text: the one JSON parser for request bodies, and the
// UTF-8 checks for every other piece of request text (path captures, query values,
// header-derived strings) that can end up in a stored row or a response.
//
// Why this exists: nlohmann::json parses iteratively and frees iteratively, but
// copying and dump() recurse once per nesting level, so a body nested 100,000 levels
// deep overflowed the handler thread's stack. A number that does not fit a double
// (1e400, a 400-digit integer) raised json::out_of_range, which the route wrapper
// turned into a 500. Bytes that are not UTF-8 made dump() throw while the error
// response itself was being written (a 500 with an empty body). Everything here
// answers those with a Status the route turns into a 400 ValidationError instead.
//
// None of these functions throws (except std::bad_alloc), and none recurses on the
// input: each is safe to run on arbitrary bytes, e.g. from a fuzzer.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "emulator/status.h"

namespace sheetlog::api {

// Deepest nesting of arrays and objects a request body may have. `[[1]]` has depth 2,
// a scalar depth 0. Real bodies need 3 or 4; 64 leaves room for client-defined entry
// types while keeping recursion in copies and dump() far from the stack's end.
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON document (RFC 8259; leading/trailing whitespace allowed,
// nothing else after the value).
// Returns InvalidArgument with a message naming what is wrong and where when:
//   - the text is not JSON ("malformed JSON: ... at byte N"),
//   - arrays/objects nest deeper than `max_depth` ("... nested deeper than 64 levels"),
//   - a number does not fit a double ("number out of range: 1e400"),
//   - any byte sequence, inside or outside strings, is not UTF-8, or a \u escape
//     names a lone surrogate.
// The message is itself valid UTF-8 (offending bytes are shown as \xNN).
// REQUIRES: max_depth >= 0.
Result<nlohmann::json> ParseJsonStrict(std::string_view text,
                                       int max_depth = kMaxJsonDepth);

// True if `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates
// U+D800..U+DFFF, nothing above U+10FFFF). The empty string is valid. NUL is valid.
bool IsValidUtf8(std::string_view text);

// OK if `text` is valid UTF-8, else InvalidArgument("<what> is not valid UTF-8 (byte
// N)"). `what` names the input for the client, e.g. "query parameter 'prefix'".
Status CheckUtf8(std::string_view text, std::string_view what);

// `text` with every byte that is not part of a valid UTF-8 sequence written as the
// four characters \xNN; valid text is returned unchanged. For putting client input
// into error messages and logs.
std::string EscapeInvalidUtf8(std::string_view text);

// JSON text the server stored itself (an entry body, a blob payload) as a value for a
// response: the parsed value when ParseJsonStrict accepts it, otherwise the text as a
// JSON string (e.g. a payload that is not JSON, or a body stored before the depth
// limit existed), so reading it back can never fail or overflow the stack. Never fails.
nlohmann::json StoredJsonForReply(std::string_view text);

// Depth of the deepest nesting in an already-built value (0 for a scalar), computed
// without recursion. For values that did not come through ParseJsonStrict.
int JsonDepth(const nlohmann::json& value);

// Serializes `value` compactly and never throws on strings that are not UTF-8 (such
// bytes become U+FFFD). The backstop for writing responses: a reply must never fail
// half-way because of one stored string.
std::string DumpJsonSafely(const nlohmann::json& value);

}  // namespace sheetlog::api
