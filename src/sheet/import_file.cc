#include "src/sheet/import_file.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <optional>
#include <thread>

#include "emulator/env/mutex.h"
#include "src/sheet/csv.h"
#include "src/sheet/formula_shift.h"
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

// Whether a file lists its cells in row-major order, each position once, fed each
// position as it comes.
class RowOrder {
 public:
  // False if `ref` does not come after the previous position.
  bool Follows(const CellRef& ref) {
    const bool after = !last_ || *last_ < ref;
    last_ = ref;
    return after;
  }

 private:
  std::optional<CellRef> last_;
};

// Cells per batch handed from the parsing thread to the reader, and batches in flight.
constexpr size_t kImportBatchCells = 4096;
constexpr size_t kImportBatchesAhead = 2;

class ImportCursor : public CellCursor {
 public:
  ImportCursor(const ImportEdit& edit, std::unique_ptr<PayloadSource> source,
               const ImportLimits& limits)
      : edit_(edit), source_(std::move(source)), limits_(limits) {
    edit_.cells.reset();
  }

  ~ImportCursor() override {
    {
      MutexLock lock(&mu_);
      cancelled_ = true;
    }
    stopping_.store(true);
    changed_.NotifyAll();
    if (parser_.joinable()) parser_.join();
  }

  Result<bool> Next(PlacedCell* cell) override {
    if (taken_ == batch_.size()) {
      batch_.clear();
      taken_ = 0;
      if (!parser_.joinable()) parser_ = std::thread([this] { Parse(); });
      MutexLock lock(&mu_);
      while (ready_.empty() && !finished_) changed_.Wait(mu_);
      if (ready_.empty()) {
        if (!status_.ok()) return status_;
        return false;
      }
      batch_ = std::move(ready_.front());
      ready_.pop_front();
      lock.Unlock();
      changed_.NotifyAll();
    }
    *cell = std::move(batch_[taken_++]);
    return true;
  }

 private:
  // On the parser thread.
  void Parse() {
    Status status = ParseAll();
    if (status.ok() && !pending_.empty()) status = Hand(std::move(pending_));
    MutexLock lock(&mu_);
    finished_ = true;
    if (!cancelled_) status_ = std::move(status);
    changed_.NotifyAll();
  }

  Status ParseAll() {
    if (edit_.format == ImportEdit::Format::kXlsx) {
      ASSIGN_OR_RETURN(bool in_order, ListedInOrder());
      if (!in_order) {
        ASSIGN_OR_RETURN(ImportedCells cells,
                         ReadImportedCells(edit_, *source_, limits_));
        for (PlacedCell& c : cells) RETURN_IF_ERROR(Add(c.ref, std::move(c.cell)));
        return Status::OK();
      }
    }
    RowOrder order;
    return ReadImportPayload(
        edit_, *source_,
        [&](const CellRef& ref, Cell cell) -> Status {
          if (!order.Follows(ref)) {
            return Internal("the import's cells changed order between two reads");
          }
          return Add(ref, std::move(cell));
        },
        limits_);
  }

  // True if the file lists each position once, in row-major order.
  Result<bool> ListedInOrder() {
    RowOrder order;
    bool in_order = true;
    Status read = ReadImportPayload(
        edit_, *source_,
        [&](const CellRef& ref, const Cell&) -> Status {
          // Both stop the read and never leave this class: the first is answered
          // with `false`, the second is dropped by Parse (the cursor is gone).
          if (!order.Follows(ref)) {
            in_order = false;
            return FailedPrecondition("the file does not list its cells in row order");
          }
          if (stopping_.load(std::memory_order_relaxed)) {
            return Unavailable("the import cursor was closed");
          }
          return Status::OK();
        },
        limits_);
    if (!in_order) return false;
    RETURN_IF_ERROR(read);
    return true;
  }

  // A file cell, placed at the anchor, into the batch being filled.
  Status Add(const CellRef& ref, Cell cell) {
    // Offsets stay far from int64 overflow: ReadImportPayload keeps them on the grid.
    pending_.push_back(
        {{edit_.at.row + ref.row - 1, edit_.at.col + ref.col - 1}, std::move(cell)});
    if (pending_.size() < kImportBatchCells) return Status::OK();
    return Hand(std::exchange(pending_, {}));
  }

  // Waits for room, then hands a batch over. Unavailable once the cursor is gone (a
  // status Parse drops: nobody reads it).
  Status Hand(std::vector<PlacedCell> batch) {
    MutexLock lock(&mu_);
    while (ready_.size() >= kImportBatchesAhead && !cancelled_) changed_.Wait(mu_);
    if (cancelled_) return Unavailable("the import cursor was closed");
    ready_.push_back(std::move(batch));
    changed_.NotifyAll();
    return Status::OK();
  }

  ImportEdit edit_;
  const std::unique_ptr<PayloadSource> source_;
  const ImportLimits limits_;
  std::vector<PlacedCell> pending_;  // parser thread only

  Mutex mu_;
  CondVar changed_;
  std::deque<std::vector<PlacedCell>> ready_;
  bool finished_ = false;
  bool cancelled_ = false;
  std::atomic<bool> stopping_{false};  // cancelled_, read without the lock
  Status status_;

  std::vector<PlacedCell> batch_;  // reader only
  size_t taken_ = 0;
  std::thread parser_;
};

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
  // An XLSX formula's relative references are relative to the cell it sits in: placed
  // at `at`, it moves with its cell, as a spreadsheet moves a pasted block
  // (ShiftFormula: "$D$2" stays, "D2" and "Data!D2" move, what leaves the grid becomes
  // #REF!). A CSV field is text as typed: "=SUM(D2:D6)" stays as written.
  const int64_t rows = edit.at.row - 1;
  const int64_t cols = edit.at.col - 1;
  if (rows == 0 && cols == 0) return ReadXlsx(source, edit.worksheet, limits, checked);
  return ReadXlsx(
      source, edit.worksheet, limits, [&](const CellRef& ref, Cell cell) -> Status {
        if (cell.value.is_formula()) {
          cell.value = CellValue::String(
              "=" +
              ShiftFormula(std::string_view(cell.value.string()).substr(1), rows, cols));
        }
        return checked(ref, std::move(cell));
      });
}

Status CheckImportPayload(const ImportEdit& edit, const PayloadSource& source,
                          const ImportLimits& limits) {
  RowOrder order;
  bool in_order = true;
  int64_t cells = 0;
  RETURN_IF_ERROR(ReadImportPayload(
      edit, source,
      [&](const CellRef& ref, const Cell&) {
        in_order &= order.Follows(ref);
        ++cells;
        return Status::OK();
      },
      limits));
  if (!in_order && cells > limits.max_unordered_cells) {
    return InvalidArgument("the file lists its " + std::to_string(cells) +
                           " cells out of row order (or a cell twice); such a file is "
                           "sorted in memory, so it may hold at most " +
                           std::to_string(limits.max_unordered_cells) +
                           " cells: save it again from a spreadsheet tool or split it");
  }
  return Status::OK();
}

Result<ImportedCells> ReadImportedCells(const ImportEdit& edit,
                                        const PayloadSource& source,
                                        const ImportLimits& limits) {
  ImportedCells cells;
  RowOrder order;
  bool sorted = true;
  RETURN_IF_ERROR(ReadImportPayload(
      edit, source,
      [&](const CellRef& ref, Cell cell) {
        sorted &= order.Follows(ref);
        cells.push_back({ref, std::move(cell)});
        return Status::OK();
      },
      limits));
  // A file may list a position twice or out of order: the last one wins.
  if (!sorted) SortKeepingLastWrite(&cells);
  return cells;
}

std::unique_ptr<CellCursor> OpenImportCursor(const ImportEdit& edit,
                                             std::unique_ptr<PayloadSource> source,
                                             const ImportLimits& limits) {
  return std::make_unique<ImportCursor>(edit, std::move(source), limits);
}

}  // namespace sheetlog
