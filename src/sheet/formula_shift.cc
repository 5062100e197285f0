// ShiftFormula: one pass over the formula's tokens. Contract in formula_shift.h.
#include "src/sheet/formula_shift.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/integer_text.h"
#include "src/sheet/xlsx.h"

namespace sheetlog {

namespace {

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '$';
}

}  // namespace

std::string ShiftFormula(std::string_view formula, int64_t rows, int64_t cols) {
  std::string out;
  size_t i = 0;
  while (i < formula.size()) {
    const char c = formula[i];
    if (c == '"' || c == '\'') {
      // A literal or quoted sheet name: up to the closing quote (doubled = escaped).
      size_t end = i + 1;
      while (end < formula.size()) {
        if (formula[end] == c) {
          if (end + 1 < formula.size() && formula[end + 1] == c) {
            end += 2;
            continue;
          }
          break;
        }
        ++end;
      }
      end = std::min(end + 1, formula.size());
      out.append(formula.substr(i, end - i));
      i = end;
      continue;
    }
    if (!IsNameChar(c)) {
      out.push_back(c);
      ++i;
      continue;
    }
    size_t end = i;
    while (end < formula.size() && IsNameChar(formula[end])) ++end;
    std::string_view token = formula.substr(i, end - i);
    i = end;
    // $?LETTERS$?DIGITS, not a function name (followed by '(') nor a sheet name ('!').
    size_t p = 0;
    const bool col_fixed = p < token.size() && token[p] == '$';
    if (col_fixed) ++p;
    const size_t letters_at = p;
    while (p < token.size() && token[p] >= 'A' && token[p] <= 'Z') ++p;
    const size_t letters = p - letters_at;
    const bool row_fixed = p < token.size() && token[p] == '$';
    if (row_fixed) ++p;
    const size_t digits_at = p;
    while (p < token.size() && token[p] >= '0' && token[p] <= '9') ++p;
    const bool next_is_call_or_sheet =
        end < formula.size() && (formula[end] == '(' || formula[end] == '!');
    if (letters == 0 || letters > 3 || p == digits_at || p != token.size() ||
        next_is_call_or_sheet) {
      out.append(token);
      continue;
    }
    Result<int64_t> col = ParseColumn(token.substr(letters_at, letters));
    Result<int64_t> row = ParseInteger(token.substr(digits_at));
    if (!col.ok() || !row.ok()) {
      out.append(token);
      continue;
    }
    // The row number may have up to 19 digits: a sum past int64 is off the grid too
    // (and adding would overflow). Both numbers parsed are >= 0.
    const int64_t col_shift = col_fixed ? 0 : cols;
    const int64_t row_shift = row_fixed ? 0 : rows;
    if ((col_shift > 0 && *col > INT64_MAX - col_shift) ||
        (row_shift > 0 && *row > INT64_MAX - row_shift)) {
      out.append("#REF!");
      continue;
    }
    const int64_t new_col = *col + col_shift;
    const int64_t new_row = *row + row_shift;
    if (new_col < 1 || new_col > kXlsxMaxColumns || new_row < 1 ||
        new_row > kXlsxMaxRows) {
      out.append("#REF!");
      continue;
    }
    out.append(col_fixed ? "$" : "");
    out.append(FormatColumn(new_col));
    out.append(row_fixed ? "$" : "");
    out.append(std::to_string(new_row));
  }
  return out;
}

}  // namespace sheetlog
