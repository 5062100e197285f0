// CSV output of cell values (RFC 4180): the encoding GET .../export?format=csv streams.
//
//   number   shortest text that reads back to the same double (100, 0.1, 1e+300)
//   string   as is; quoted when it holds a comma, quote, CR or LF, or starts or ends
//            with a space (quotes inside are doubled). Formulas are strings ("=A1+1").
//   boolean  TRUE / FALSE, as spreadsheet tools write them
//   null     an empty field
// Rows end with CRLF, as RFC 4180 says. A cell's format is not part of CSV.
#pragma once

#include <string>
#include <vector>

#include "src/sheet/cell.h"

namespace sheetlog {

// Appends one field (no separator) to `out`.
void AppendCsvField(const CellValue& value, std::string* out);

// Appends `values` as one record, fields separated by commas, ended by CRLF.
void AppendCsvRecord(const std::vector<CellValue>& values, std::string* out);

}  // namespace sheetlog
