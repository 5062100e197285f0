#include "src/api/route_pattern.h"

#include <stdexcept>

namespace sheetlog::api {

RoutePattern::RoutePattern(const std::string& pattern) {
  static const std::pair<std::string_view, Kind> kCaptures[] = {
      {"([^/]+)", Kind::kSegment},
      {"(\\d+)", Kind::kDigits},
      {"(.+)", Kind::kRest},
      {"(.*)", Kind::kRestOrEmpty}};
  std::string_view rest = pattern;
  while (!rest.empty()) {
    bool captured = false;
    for (const auto& [text, kind] : kCaptures) {
      if (rest.substr(0, text.size()) == text) {
        tokens_.push_back({kind, ""});
        rest.remove_prefix(text.size());
        captured = true;
        break;
      }
    }
    if (captured) continue;
    char c = rest.front();
    if (std::string_view("()[]{}.*+?\\|^$").find(c) != std::string_view::npos) {
      throw std::logic_error("route pattern '" + pattern +
                             "' uses syntax RoutePattern does not support");
    }
    if (tokens_.empty() || tokens_.back().kind != Kind::kLiteral) {
      tokens_.push_back({Kind::kLiteral, ""});
    }
    tokens_.back().literal.push_back(c);
    rest.remove_prefix(1);
  }
}

bool RoutePattern::Match(const std::string& path,
                         std::vector<std::string>* captures) const {
  captures->clear();
  captures->push_back(path);
  if (MatchFrom(0, path, captures)) return true;
  captures->clear();
  return false;
}

bool RoutePattern::MatchFrom(size_t index, std::string_view rest,
                             std::vector<std::string>* captures) const {
  if (index == tokens_.size()) return rest.empty();
  const Token& token = tokens_[index];
  if (token.kind == Kind::kLiteral) {
    if (rest.substr(0, token.literal.size()) != token.literal) return false;
    return MatchFrom(index + 1, rest.substr(token.literal.size()), captures);
  }
  // The longest run the capture may take; then shorter ones (backtracking).
  size_t longest = 0;
  switch (token.kind) {
    case Kind::kSegment:
      while (longest < rest.size() && rest[longest] != '/') ++longest;
      break;
    case Kind::kDigits:
      while (longest < rest.size() && rest[longest] >= '0' && rest[longest] <= '9') {
        ++longest;
      }
      break;
    case Kind::kRest:
    case Kind::kRestOrEmpty:
      longest = rest.size();
      break;
    case Kind::kLiteral:
      break;
  }
  const size_t shortest = token.kind == Kind::kRestOrEmpty ? 0 : 1;
  for (size_t length = longest + 1; length-- > shortest;) {
    captures->push_back(std::string(rest.substr(0, length)));
    if (MatchFrom(index + 1, rest.substr(length), captures)) return true;
    captures->pop_back();
    if (length == 0) break;
  }
  return false;
}

}  // namespace sheetlog::api
