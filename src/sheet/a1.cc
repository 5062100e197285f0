#include "src/sheet/a1.h"

#include <algorithm>

namespace sheetlog {
namespace {

bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Longest input an error message quotes in full: a reference is a few bytes, and a
// message must not echo a megabyte of garbage back to the client.
constexpr size_t kMaxQuotedBytes = 64;

// 'text', or its first kMaxQuotedBytes (cut before a UTF-8 continuation byte) followed
// by "...' (N bytes)".
std::string Quote(std::string_view text) {
  // Appends instead of "'" + std::string(text): GCC 12 at -O3 warns (-Wrestrict) on
  // that form.
  std::string out;
  out += '\'';
  if (text.size() <= kMaxQuotedBytes) {
    out.append(text);
    out += '\'';
    return out;
  }
  size_t cut = kMaxQuotedBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  out.append(text.substr(0, cut));
  out += "...' (";
  out += std::to_string(text.size());
  out += " bytes)";
  return out;
}

Status BadRef(std::string_view text, std::string_view why) {
  return InvalidArgument("bad cell reference " + Quote(text) + ": " + std::string(why));
}

// Column letters without the error context of a whole reference.
// Returns an empty message on success.
std::string ColumnProblem(std::string_view letters, int64_t* col) {
  if (letters.empty()) return "missing column letters";
  int64_t value = 0;
  for (char c : letters) {
    if (IsLower(c)) return "column letters must be upper case";
    if (!IsUpper(c)) return "column letters must be A..Z";
    value = value * 26 + (c - 'A' + 1);
    if (value > kMaxColumn) {
      return "column is beyond the last column " + FormatColumn(kMaxColumn);
    }
  }
  *col = value;
  return "";
}

}  // namespace

Result<int64_t> ParseColumn(std::string_view letters) {
  int64_t col = 0;
  std::string problem = ColumnProblem(letters, &col);
  if (!problem.empty()) {
    return InvalidArgument("bad column " + Quote(letters) + ": " + problem);
  }
  return col;
}

std::string FormatColumn(int64_t col) {
  assert(col >= 1 && col <= kMaxColumn);
  std::string out;
  while (col > 0) {
    --col;  // bijective base 26: digits are 1..26, not 0..25
    out.push_back(static_cast<char>('A' + col % 26));
    col /= 26;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

Result<CellRef> ParseCellRef(std::string_view text) {
  if (text.empty()) return BadRef(text, "empty");
  size_t split = 0;
  while (split < text.size() && (IsUpper(text[split]) || IsLower(text[split]))) ++split;
  std::string_view letters = text.substr(0, split);
  std::string_view digits = text.substr(split);
  if (letters.empty()) {
    return BadRef(text, "expected column letters followed by a row number");
  }
  if (digits.empty()) return BadRef(text, "missing row number");
  for (char c : digits) {
    if (!IsDigit(c)) {
      return BadRef(text, "expected column letters followed by a row number");
    }
  }
  CellRef ref;
  std::string problem = ColumnProblem(letters, &ref.col);
  if (!problem.empty()) return BadRef(text, problem);
  if (digits.size() > 1 && digits[0] == '0') {
    return BadRef(text, "row number has a leading zero");
  }
  int64_t row = 0;
  for (char c : digits) {
    row = row * 10 + (c - '0');
    if (row > kMaxRow) {
      return BadRef(text, "row is beyond the last row " + std::to_string(kMaxRow));
    }
  }
  if (row == 0) return BadRef(text, "rows start at 1");
  ref.row = row;
  return ref;
}

std::string FormatCellRef(const CellRef& ref) {
  return FormatColumn(ref.col) + std::to_string(ref.row);
}

Result<CellRange> ParseRange(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    auto ref = ParseCellRef(text);
    if (!ref.ok()) {
      return InvalidArgument("bad range " + Quote(text) + ": " + ref.status().message());
    }
    return CellRange{*ref, *ref};
  }
  if (text.find(':', colon + 1) != std::string_view::npos) {
    return InvalidArgument("bad range " + Quote(text) + ": more than one ':'");
  }
  auto a = ParseCellRef(text.substr(0, colon));
  if (!a.ok()) {
    return InvalidArgument("bad range " + Quote(text) + ": " + a.status().message());
  }
  auto b = ParseCellRef(text.substr(colon + 1));
  if (!b.ok()) {
    return InvalidArgument("bad range " + Quote(text) + ": " + b.status().message());
  }
  return CellRange{{std::min(a->row, b->row), std::min(a->col, b->col)},
                   {std::max(a->row, b->row), std::max(a->col, b->col)}};
}

std::string FormatRange(const CellRange& range) {
  return FormatCellRef(range.first) + ":" + FormatCellRef(range.last);
}

bool InGrid(const CellRef& ref) {
  return ref.row >= 1 && ref.row <= kMaxRow && ref.col >= 1 && ref.col <= kMaxColumn;
}

}  // namespace sheetlog
