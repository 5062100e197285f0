#include "src/sheet/import_file.h"

#include <algorithm>

#include "src/sheet/csv.h"
#include "src/sheet/xlsx.h"

namespace sheetlog {

namespace {

constexpr int64_t kCsvReadBytes = int64_t{1} << 20;

Status ReadCsv(const PayloadSource& source, const ImportCellSink& sink) {
  CsvParser parser(sink);
  for (int64_t offset = 0; offset < source.size();) {
    ASSIGN_OR_RETURN(std::string piece, source.ReadAt(offset, kCsvReadBytes));
    if (piece.empty()) return Internal("the CSV file ended before its size");
    offset += static_cast<int64_t>(piece.size());
    RETURN_IF_ERROR(parser.Feed(piece));
  }
  return parser.Finish();
}

}  // namespace

Result<std::string> StringPayloadSource::ReadAt(int64_t offset, int64_t length) const {
  if (offset < 0 || length < 0) return InvalidArgument("negative read range");
  if (offset >= size()) return std::string();
  return std::string(
      bytes_.substr(static_cast<size_t>(offset), static_cast<size_t>(length)));
}

Status ReadImportPayload(const ImportEdit& edit, const PayloadSource& source,
                         const ImportCellSink& sink, const ImportLimits& limits) {
  int64_t cells = 0;
  // Checks every cell before the caller sees it: the count, and that it lands on the
  // grid (a file position p lands on at + p - 1).
  ImportCellSink checked = [&](const CellRef& ref, Cell cell) -> Status {
    if (++cells > limits.max_cells) {
      return InvalidArgument("the file holds more than " +
                             std::to_string(limits.max_cells) +
                             " cells, the most one import may hold; split it");
    }
    if (ref.row > kMaxRow - edit.at.row + 1 || ref.col > kMaxColumn - edit.at.col + 1) {
      return InvalidArgument("the file's row " + std::to_string(ref.row) + ", column " +
                             std::to_string(ref.col) +
                             " would land past the grid's last row or column when "
                             "placed at " +
                             FormatCellRef(edit.at));
    }
    return sink(ref, std::move(cell));
  };
  if (edit.format == ImportEdit::Format::kCsv) return ReadCsv(source, checked);
  return ReadXlsx(source, edit.worksheet, limits, checked);
}

Result<ImportedCells> ReadImportedCells(const ImportEdit& edit,
                                        const PayloadSource& source,
                                        const ImportLimits& limits) {
  ImportedCells cells;
  bool sorted = true;
  RETURN_IF_ERROR(ReadImportPayload(
      edit, source,
      [&](const CellRef& ref, Cell cell) {
        if (!cells.empty() && !(cells.back().ref < ref)) sorted = false;
        cells.push_back({ref, std::move(cell)});
        return Status::OK();
      },
      limits));
  // A file may list a position twice or out of order: the last one wins.
  if (!sorted) SortKeepingLastWrite(&cells);
  return cells;
}

}  // namespace sheetlog
