// Internal to src/api: the path patterns routes are registered with, matched without
// std::regex (the event thread matches every request head, so matching must be cheap).
// A pattern is literal text with captures of four kinds: ([^/]+) one path segment,
// (\d+) digits, (.+) the rest (one byte or more), (.*) the rest (maybe empty), with
// the meaning std::regex_match would give them. Any other regular-expression syntax is
// a programming error: the constructor throws std::logic_error (at start-up).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sheetlog::api {

class RoutePattern {
 public:
  // Throws std::logic_error for syntax other than the above.
  explicit RoutePattern(const std::string& pattern);

  // True if `path` matches the whole pattern; then *captures holds the whole path
  // followed by each capture (as std::smatch would).
  bool Match(const std::string& path, std::vector<std::string>* captures) const;

 private:
  enum class Kind { kLiteral, kSegment, kDigits, kRest, kRestOrEmpty };
  struct Token {
    Kind kind;
    std::string literal;
  };
  bool MatchFrom(size_t token, std::string_view rest,
                 std::vector<std::string>* captures) const;

  std::vector<Token> tokens_;
};

}  // namespace sheetlog::api
