// CSV in and out (RFC 4180).
//
// Output: the encoding GET .../export?format=csv streams.
//   number   shortest text that reads back to the same double (100, 0.1, 1e+300)
//   string   as is; quoted when it holds a comma, quote, CR or LF, or starts or ends
//            with a space (quotes inside are doubled). Formulas are strings ("=A1+1").
//   boolean  TRUE / FALSE, as spreadsheet tools write them
//   null     an empty field
// Rows end with CRLF, as RFC 4180 says. A cell's format is not part of CSV.
//
// Input: what an Import of format "csv" reads (CsvParser).
//   Encoding  UTF-8, with or without a byte order mark (EF BB BF, skipped). Any other
//             byte sequence that is not UTF-8 is refused, naming line and field.
//   Records   end with CRLF, LF or a lone CR; the last one may lack its line end. A
//             blank line is a record of one empty field: a blank row in the sheet.
//   Fields    separated by commas. A field that starts with '"' is quoted: it runs to
//             the next lone quote, '""' inside stands for one quote, and commas, CR and
//             LF inside are part of the value. After the closing quote only a comma or a
//             line end may follow. A quote inside an unquoted field is kept as is.
//             An unterminated quoted field is refused: "CSV line 7: unterminated quoted
//             field (opened at line 3, field 2)".
//   Typing    quoted or not, the same rules (CsvFieldValue), as spreadsheet tools do:
//     ""                              an empty cell (nothing is written)
//     TRUE / FALSE, any letter case   a boolean
//     -?digits[.digits][e[+-]digits]  a number, also -?.digits; but
//         a leading zero before more digits ("007", "00.5") stays a string,
//         an integer beyond +-2^53 stays a string (it would lose digits: card numbers),
//         a '+' sign, spaces around, thousands separators, '%' or currency: strings
//     anything else                   a string (one starting with '=' is a formula)
//   Limits    a field holds at most 1 MiB; rows and columns stop at the grid's end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/cell.h"

namespace sheetlog {

// Appends one field (no separator) to `out`.
void AppendCsvField(const CellValue& value, std::string* out);

// Appends `values` as one record, fields separated by commas, ended by CRLF.
void AppendCsvRecord(const std::vector<CellValue>& values, std::string* out);

// The typed value of one field's text (already unquoted), by the rules above.
CellValue CsvFieldValue(std::string_view text);

// True if `text` is well-formed UTF-8 (no overlong forms, surrogates or code points
// past U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Reads CSV pushed in pieces of any size and hands every non-empty field to the sink in
// file order, as (record number, field number) from (1, 1), with its typed value. The
// sink's error stops the parse and is returned by Feed/Finish. Memory: one field.
class CsvParser {
 public:
  using Sink = std::function<Status(const CellRef& ref, Cell cell)>;
  static constexpr size_t kMaxFieldBytes = size_t{1} << 20;

  explicit CsvParser(Sink sink) : sink_(std::move(sink)) {}

  // InvalidArgument with "CSV line N, field M: ..." for input that breaks the rules.
  Status Feed(std::string_view bytes);
  // The end of the input: the last record need not have a line end.
  Status Finish();

  // Records read so far (a record is counted when it ends).
  int64_t records() const { return record_ - 1; }

 private:
  enum class State { kFieldStart, kUnquoted, kQuoted, kQuoteInQuoted, kAfterCr };

  Status Error(const std::string& what) const;
  Status EndField();
  Status EndRecord();
  Status AddChar(char c);

  Sink sink_;
  State state_ = State::kFieldStart;
  std::string field_;
  size_t bom_seen_ = 0;     // bytes of the BOM matched so far
  bool at_start_ = true;    // nothing but a BOM prefix read yet
  int64_t line_ = 1;        // physical line of the byte being read
  int64_t record_ = 1;      // record being read
  int64_t column_ = 1;      // field being read within the record
  int64_t quote_line_ = 0;  // where the open quoted field started
};

}  // namespace sheetlog
