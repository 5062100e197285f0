// JSON text to nlohmann::json, compiled once. nlohmann's parser is a template
// (lexer, parser, SAX callbacks) instantiated in every translation unit that calls
// json::parse: ~10 s of compile time each under the sanitizer build. Every layer parses
// through these two functions instead, so that cost is paid in json_text.cc alone.
//
// Request bodies from clients are not parsed here: src/api/json_input.h reads them
// strictly (depth, UTF-8, number range).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace sheetlog {

// Parses `text`; on malformed text returns a value whose is_discarded() is true (as
// json::parse(text, nullptr, false) does). Never throws.
nlohmann::json ParseJsonOrDiscarded(std::string_view text);

// Parses `text` that is known to be JSON (tests, text this process wrote). Throws
// nlohmann::json::parse_error on malformed text.
nlohmann::json ParseJson(std::string_view text);

}  // namespace sheetlog
