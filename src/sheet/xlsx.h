// XLSX (Office Open XML spreadsheets, ECMA-376) in and out.
//
// Reading (ReadXlsx): libzip opens the package through a PayloadSource, expat streams
// each XML part; nothing but the shared-strings table and the styles is held in memory.
//   which sheet  the first worksheet of xl/workbook.xml, or the one named
//   strings      shared (t="s") and inline (t="inlineStr"); rich-text runs joined,
//                phonetic runs left out
//   numbers      as doubles; dates are numbers (Excel's day serials) with their format
//   booleans     t="b"
//   errors       t="e": the error text ("#DIV/0!") as a string
//   formulas     the formula text with '=' in front ("=SUM(A1:A3)"), as sheetlog keeps
//                formulas; shared formulas are expanded with their relative references
//                moved. The cached result (<v>) is kept as the cell's `cached` value.
//   formats      the cell's number format code ("0.00%", "yyyy-mm-dd"); General is ""
//   styled blank a cell with a number format and no value is a formatted blank cell
// Refused, with nothing read past the problem: not a zip or a damaged one ("truncated
// or not a zip file"), a part that claims or inflates to more than the limit, XML with
// a DOCTYPE (entity expansion bombs), malformed XML, a bad cell reference, number or
// shared-string index.
//
// Writing (XlsxFileWriter): libxlsxwriter in constant_memory mode, one row at a time;
// a formula with a cached number or string result is written with it, any other
// formula with no cached result at all (no <v>, not libxlsxwriter's 0), so the reader
// computes it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/cell.h"
#include "src/sheet/import_file.h"

namespace sheetlog {

// XLSX's grid: 1048576 rows, 16384 columns (XFD).
inline constexpr int64_t kXlsxMaxRows = 1048576;
inline constexpr int64_t kXlsxMaxColumns = 16384;

// `worksheet` "" = the first. Cells reach `sink` in the order of the sheet's XML (row
// by row in files written by Excel, LibreOffice, Gnumeric and openpyxl).
Status ReadXlsx(const PayloadSource& source, const std::string& worksheet,
                const ImportLimits& limits, const ImportCellSink& sink);

// Writes one worksheet named "Sheet1" to a file. Cells must come in row-major order,
// each position once (constant_memory mode flushes a row when the next one starts).
class XlsxFileWriter {
 public:
  static Result<std::unique_ptr<XlsxFileWriter>> Create(const std::string& path);
  ~XlsxFileWriter();

  // InvalidArgument for a position outside XLSX's grid or a string past 32767
  // characters (XLSX's limit).
  Status Write(const CellRef& ref, const Cell& cell);
  // Finishes the file. Must be called once; the destructor of an unclosed writer
  // discards it.
  Status Close();

 private:
  struct Impl;
  explicit XlsxFileWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sheetlog
