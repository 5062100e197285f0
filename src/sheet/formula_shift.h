// Moving a formula's relative references, as a spreadsheet does when a formula is
// copied from one cell to another. The XLSX reader uses it to expand shared formulas:
// each cell of a shared formula holds the master's text with its relative references
// moved by the cell's offset from the master.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sheetlog {

// `formula` (without its '=') with every A1 reference moved by `rows` and `cols`.
//   references   $?COL$?ROW with 1..3 upper-case column letters and a row number, not
//                followed by '(' (a function, "LOG10(") or '!' (a sheet name); each
//                end of a range ("A1:B2") is one. The $-anchored parts stay; the row
//                is written without leading zeros.
//   left alone   string literals ("..." with "" inside) and quoted sheet names ('...'
//                with '' inside), the sheet part of "Sheet1!A1", names and functions,
//                lower-case letters, tokens with more than 3 letters or anything after
//                the digits, whole-column and whole-row references ("A:A", "1:1"),
//                R1C1 references, and a row number too long for int64.
//   off the grid a reference that lands outside XLSX's grid (A..XFD, 1..1048576) —
//                or was outside it and still is (column XFE, row 0), or whose shifted
//                row or column is past int64 — becomes "#REF!", as spreadsheet tools do.
// An unterminated literal runs to the end and is kept as it is.
std::string ShiftFormula(std::string_view formula, int64_t rows, int64_t cols);

}  // namespace sheetlog
