// Import payloads: the CSV or XLSX file an Import entry carries (api.md "Import"),
// read from anywhere that can serve byte ranges, into cells.
//
// The same function serves both ends of an import's life: Complete of the upload runs it
// to refuse a file that does not parse (nothing is written), and the reducer's callers
// run it again to get the cells. It is deterministic, so a file accepted once always
// yields the same cells.
//
// Cells come out relative to the file: (1, 1) is the file's first row and column, to be
// placed at the entry's anchor by the reducer. Errors are InvalidArgument and name the
// place: "CSV line 7, field 3: ...", "XLSX sheet 'Data' cell B7: ...".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/cell.h"
#include "src/sheet/cell_cursor.h"
#include "src/sheet/sheet_edit.h"

namespace sheetlog {

// Random access to the bytes of a file.
class PayloadSource {
 public:
  virtual ~PayloadSource() = default;
  virtual int64_t size() const = 0;
  // Up to `length` bytes from `offset` (fewer only at the end).
  virtual Result<std::string> ReadAt(int64_t offset, int64_t length) const = 0;
};

// A source over bytes held in memory (tests, small files). Keeps a view: `bytes` must
// outlive it.
class StringPayloadSource : public PayloadSource {
 public:
  explicit StringPayloadSource(std::string_view bytes) : bytes_(bytes) {}
  int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }
  Result<std::string> ReadAt(int64_t offset, int64_t length) const override;

 private:
  std::string_view bytes_;
};

// What one import may hold. Snapshot builds and reads stream an import's cells
// (OpenImportCursor), so the cap on cells is far above what memory could hold; a file
// that lists its cells out of order must be sorted in memory and has a lower one.
struct ImportLimits {
  int64_t max_cells = 100'000'000;
  int64_t max_unordered_cells = 5'000'000;
  // XLSX: the most bytes one XML part may inflate to (a larger size claimed in the zip
  // directory is refused before anything is inflated), and the shared-strings table.
  int64_t max_xml_part_bytes = int64_t{1} << 30;
  int64_t max_shared_string_bytes = int64_t{256} << 20;
};

using ImportCellSink = std::function<Status(const CellRef& ref, Cell cell)>;

// Reads the payload of `edit` (its format and worksheet) and hands every non-empty
// cell, relative to the file, to `sink`. Also refuses cells that would land outside the
// grid when placed at edit.at, and more than limits.max_cells cells. XLSX formulas come
// with their relative references already moved by edit.at's offset from A1 (as a
// spreadsheet pastes them there: ShiftFormula); CSV fields are kept as written.
Status ReadImportPayload(const ImportEdit& edit, const PayloadSource& source,
                         const ImportCellSink& sink, const ImportLimits& limits = {});

// What completing an upload runs: ReadImportPayload keeping nothing, and refusing a
// file that lists more than limits.max_unordered_cells cells out of order.
Status CheckImportPayload(const ImportEdit& edit, const PayloadSource& source,
                          const ImportLimits& limits = {});

// ReadImportPayload into a list, sorted by position, one cell per position: what
// ImportEdit::cells holds.
Result<ImportedCells> ReadImportedCells(const ImportEdit& edit,
                                        const PayloadSource& source,
                                        const ImportLimits& limits = {});

// The cells of an import as a sorted stream, placed at edit.at (the positions they take
// on the sheet), in memory bounded by a few thousand cells whatever the file's size:
// how a large import reaches a snapshot build or a read (seed 001's merge-import
// design). The file is parsed on a thread of the cursor's own, started by the first
// Next() and handing over batches; destroying the cursor stops it.
//
// Files list their cells row by row (CSV always; XLSX as Excel, LibreOffice, Gnumeric
// and openpyxl write it). An XLSX file is first read once to check that; one that lists
// a position out of order or twice is read into memory instead (ReadImportedCells, at
// most limits.max_cells cells) and served sorted, last write winning.
std::unique_ptr<CellCursor> OpenImportCursor(const ImportEdit& edit,
                                             std::unique_ptr<PayloadSource> source,
                                             const ImportLimits& limits = {});

}  // namespace sheetlog
