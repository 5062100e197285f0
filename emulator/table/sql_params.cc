// TranslateSqlParams (sql_params.h): `?N` -> each backend's placeholders, outside
// quotes and comments.
#include "emulator/table/sql_params.h"

#include "emulator/table/table.h"

namespace sheetlog {

namespace {

bool SqlParamIsDigit(char c) { return c >= '0' && c <= '9'; }

// A character of an unquoted identifier (or keyword), on both dialects: letters,
// digits, `_`, `$`, and the bytes of non-ASCII UTF-8.
bool SqlParamIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || SqlParamIsDigit(c) ||
         c == '_' || c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

bool SqlParamIdentStart(char c) {
  return SqlParamIdentChar(c) && !SqlParamIsDigit(c) && c != '$';
}

// One past the end of the quoted text whose opening quote is at `open`, closed by
// `close`: a doubled `close` inside is the character itself (unless `close` is `]`);
// with `backslashes`, a backslash escapes the next character (PostgreSQL's E'...').
size_t QuotedEnd(std::string_view sql, size_t open, char close, bool backslashes) {
  size_t j = open + 1;
  while (j < sql.size()) {
    const char c = sql[j];
    if (backslashes && c == '\\') {
      j += 2;
    } else if (c != close) {
      ++j;
    } else if (close != ']' && j + 1 < sql.size() && sql[j + 1] == close) {
      j += 2;
    } else {
      return j + 1;
    }
  }
  return sql.size();
}

// One past the end of the /* */ comment opening at `open`; `nested`: PostgreSQL's,
// where comments nest.
size_t BlockCommentEnd(std::string_view sql, size_t open, bool nested) {
  int depth = 1;
  size_t j = open + 2;
  while (j + 1 < sql.size()) {
    if (sql[j] == '*' && sql[j + 1] == '/') {
      j += 2;
      if (--depth == 0) return j;
    } else if (nested && sql[j] == '/' && sql[j + 1] == '*') {
      j += 2;
      ++depth;
    } else {
      ++j;
    }
  }
  return sql.size();
}

// If a PostgreSQL dollar quote ($$ or $tag$) opens at `open`, one past the end of the
// quoted body and its closing tag (the end of `sql` if unterminated); else 0.
size_t DollarQuoteEnd(std::string_view sql, size_t open) {
  size_t k = open + 1;
  if (k < sql.size() && SqlParamIdentStart(sql[k])) {
    while (k < sql.size() && SqlParamIdentChar(sql[k]) && sql[k] != '$') ++k;
  }
  if (k >= sql.size() || sql[k] != '$') return 0;
  const std::string_view tag = sql.substr(open, k - open + 1);
  const size_t close = sql.find(tag, k + 1);
  return close == std::string_view::npos ? sql.size() : close + tag.size();
}

Status BadParam(std::string_view sql, size_t at, const std::string& what) {
  std::string message = "SQL parameters are written ?1, ?2, ...: " + what +
                        " at offset " + std::to_string(at) + " of: ";
  message.append(sql.substr(0, 200));
  if (sql.size() > 200) message += "...";
  return InvalidArgument(message);
}

}  // namespace

Result<std::string> TranslateSqlParams(std::string_view sql, SqlDialect dialect) {
  const bool postgres = dialect == SqlDialect::kPostgres;
  std::string out;
  out.reserve(sql.size());
  size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    const char next = i + 1 < sql.size() ? sql[i + 1] : '\0';
    const bool after_ident = i > 0 && SqlParamIdentChar(sql[i - 1]);
    size_t end = 0;  // set: sql[i, end) is copied as it is
    if (c == '\'') {
      // E'...' (not the end of a longer word): PostgreSQL's backslash escapes.
      const bool escapes = postgres && i > 0 &&
                           (sql[i - 1] == 'E' || sql[i - 1] == 'e') &&
                           (i < 2 || !SqlParamIdentChar(sql[i - 2]));
      end = QuotedEnd(sql, i, '\'', escapes);
    } else if (c == '"') {
      end = QuotedEnd(sql, i, '"', false);
    } else if (!postgres && c == '`') {
      end = QuotedEnd(sql, i, '`', false);
    } else if (!postgres && c == '[') {
      end = QuotedEnd(sql, i, ']', false);
    } else if (c == '-' && next == '-') {
      end = sql.find('\n', i);
      if (end == std::string_view::npos) end = sql.size();
    } else if (c == '/' && next == '*') {
      end = BlockCommentEnd(sql, i, /*nested=*/postgres);
    } else if (c == '$' && !after_ident) {
      if (SqlParamIsDigit(next)) return BadParam(sql, i, "a raw $N parameter");
      if (postgres) end = DollarQuoteEnd(sql, i);
    } else if (c == '?') {
      size_t j = i + 1;
      int number = 0;
      while (j < sql.size() && SqlParamIsDigit(sql[j])) {
        number = number * 10 + (sql[j] - '0');
        if (number > kMaxSqlParam) {
          return BadParam(sql, i, "a number above " + std::to_string(kMaxSqlParam));
        }
        ++j;
      }
      if (j == i + 1) return BadParam(sql, i, "a `?` without its number");
      if (number == 0) return BadParam(sql, i, "?0 (numbers start at 1)");
      // Not "$" + ...: GCC 12 at -O3 reports a false -Warray-bounds in the inlined
      // operator+.
      out.push_back(postgres ? '$' : '?');
      out.append(sql.substr(i + 1, j - i - 1));
      i = j;
      continue;
    }
    if (end == 0) end = i + 1;  // an ordinary character
    out.append(sql.substr(i, end - i));
    i = end;
  }
  return out;
}

}  // namespace sheetlog
