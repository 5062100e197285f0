// Importing and exporting a 10^6-cell sheet as CSV and XLSX (bench/README.md "Import
// and export files").
//
//   build/<dir>/import_bench
//
// Inputs are written once to temporary files (100,000 rows x 10 columns: integers,
// decimals, short strings, booleans; the XLSX by libxlsxwriter, the CSV by the export
// writer). Each case then runs in its own forked child, so its peak RSS (VmHWM of
// /proc/self/status) is its own:
//   validate    ReadImportPayload counting cells: what Complete runs (streams the file)
//   resolve     ReadImportedCells: the list of cells whole-sheet replays apply
//   stream      OpenImportCursor drained: how snapshot builds and reads take an import
//   snapshot    a replace Import's next snapshot built from the blob (PlanSheet +
//               SnapshotBuilder, default 1 MiB chunks, blob store without fsync)
//   export      the same 10^6 cells written as CSV text / an XLSX file
// The file is read through a PayloadSource over the file (pread), as the server reads
// a blob. Record results in bench/README.md with the date and machine.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zip.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/scratch_file.h"
#include "src/sheet/csv.h"
#include "src/sheet/import_file.h"
#include "src/sheet/xlsx.h"
#include "src/snapshot/sheet_plan.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kRows = 100000;
constexpr int64_t kColumns = 10;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Require(const Status& status, const std::string& what) {
  if (!status.ok()) {
    std::fprintf(stderr, "import_bench: %s: %s\n", what.c_str(),
                 status.ToString().c_str());
    std::exit(1);
  }
}

// kB from a line of /proc/self/status.
int64_t StatusKb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

class FileSource : public PayloadSource {
 public:
  explicit FileSource(const std::string& path) : fd_(open(path.c_str(), O_RDONLY)) {
    size_ = lseek(fd_, 0, SEEK_END);
  }
  ~FileSource() override { close(fd_); }
  int64_t size() const override { return size_; }
  Result<std::string> ReadAt(int64_t offset, int64_t length) const override {
    std::string out(
        static_cast<size_t>(std::max<int64_t>(0, std::min(length, size_ - offset))),
        '\0');
    const ssize_t n = pread(fd_, out.data(), out.size(), offset);
    if (n < 0) return Internal("pread failed");
    out.resize(static_cast<size_t>(n));
    return out;
  }

 private:
  int fd_;
  int64_t size_ = 0;
};

Cell CellAt(int64_t row, int64_t col) {
  switch (col % 4) {
    case 0:
      return {CellValue::Number(static_cast<double>(row * kColumns + col)), ""};
    case 1:
      return {CellValue::Number(static_cast<double>(row) / 8.0 + 0.001), ""};
    case 2:
      return {CellValue::String("item " + std::to_string(row % 977)), ""};
    default:
      return {CellValue::Boolean(row % 2 == 0), ""};
  }
}

void WriteInputs(const std::string& csv_path, const std::string& xlsx_path) {
  std::ofstream csv(csv_path, std::ios::binary);
  auto writer = XlsxFileWriter::Create(xlsx_path);
  Require(writer.status(), "xlsx writer");
  std::vector<CellValue> record(kColumns);
  std::string text;
  for (int64_t r = 1; r <= kRows; ++r) {
    for (int64_t c = 1; c <= kColumns; ++c) {
      Cell cell = CellAt(r, c);
      Require((*writer)->Write({r, c}, cell), "xlsx write");
      record[static_cast<size_t>(c - 1)] = cell.value;
    }
    text.clear();
    AppendCsvRecord(record, &text);
    csv << text;
  }
  Require((*writer)->Close(), "xlsx close");
}

// Runs `body` in a child; it prints its own line.
void InChild(const std::function<void()>& body) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
}

enum class Read { kValidate, kResolve, kStream, kSnapshot };

std::unique_ptr<BlobStore> OpenBlobs(const std::string& root) {
  BlobStoreOptions options;
  options.root = root;
  options.sync = false;
  auto store = DirectoryBlobStore::Open(options, SystemClock::Default());
  Require(store.status(), "blob store");
  return std::move(store).value();
}

// The file as a blob (put from the parent, so the children start small).
void PutBlob(const std::string& root, const std::string& key, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  Require(OpenBlobs(root)->Put(key, bytes.str()).status(), "put " + key);
}

// A replace Import of blob `key`'s file, built into a snapshot: its cells.
int64_t BuildSnapshot(const std::string& blob_root, const std::string& key,
                      const ImportEdit& edit) {
  std::unique_ptr<BlobStore> blobs = OpenBlobs(blob_root);
  EntryRecord entry;
  entry.seq = 1;
  entry.type = "Import";
  entry.body = EncodeEditBody(edit).dump();
  entry.external = key;
  auto plan = PlanSheet(blobs.get(), std::nullopt, {entry});
  Require(plan.status(), "plan");
  auto builder = NewSnapshotBuilder(blobs.get(), SnapshotId{"bench-sheet", 0, 1, 1},
                                    *plan, SnapshotBuilder::Options{});
  while (true) {
    Result<bool> done = builder->WriteNextChunk();
    Require(done.status(), "build");
    if (*done) break;
  }
  Require(builder->Finish().status(), "finish");
  return builder->manifest().cells;
}

void ImportCase(const char* name, const std::string& path, ImportEdit::Format format,
                Read read, const std::string& blob_root = "",
                const std::string& key = "") {
  InChild([&] {
    FileSource source(path);
    ImportEdit edit;
    edit.format = format;
    edit.at = {1, 1};
    const int64_t rss_before = StatusKb("VmRSS");
    const auto start = Clock::now();
    int64_t cells = 0;
    if (read == Read::kSnapshot) {
      cells = BuildSnapshot(blob_root, key, edit);
    } else if (read == Read::kStream) {
      auto cursor = OpenImportCursor(edit, std::make_unique<FileSource>(path));
      PlacedCell cell;
      while (true) {
        Result<bool> more = cursor->Next(&cell);
        Require(more.status(), name);
        if (!*more) break;
        ++cells;
      }
    } else if (read == Read::kResolve) {
      Result<ImportedCells> list = ReadImportedCells(edit, source);
      Require(list.status(), name);
      cells = static_cast<int64_t>(list->size());
    } else {
      Require(ReadImportPayload(edit, source,
                                [&](const CellRef&, Cell) {
                                  ++cells;
                                  return Status::OK();
                                }),
              name);
    }
    const double seconds = SecondsSince(start);
    std::printf(
        "| %s | %.1f MB | %lld | %.2f s | %.1f MB/s | %.2fM cells/s | %lld MB | %lld MB "
        "|\n",
        name, static_cast<double>(source.size()) / 1e6, static_cast<long long>(cells),
        seconds, static_cast<double>(source.size()) / 1e6 / seconds,
        static_cast<double>(cells) / 1e6 / seconds,
        static_cast<long long>(rss_before / 1024),
        static_cast<long long>(StatusKb("VmHWM") / 1024));
  });
}

void ExportCase(const char* name, bool xlsx) {
  InChild([&] {
    auto file = ScratchFile::Create(xlsx ? ".xlsx" : ".csv");
    Require(file.status(), "scratch");
    const int64_t rss_before = StatusKb("VmRSS");
    const auto start = Clock::now();
    int64_t bytes = 0;
    if (xlsx) {
      auto writer = XlsxFileWriter::Create((*file)->path());
      Require(writer.status(), name);
      for (int64_t r = 1; r <= kRows; ++r) {
        for (int64_t c = 1; c <= kColumns; ++c) {
          Require((*writer)->Write({r, c}, CellAt(r, c)), name);
        }
      }
      Require((*writer)->Close(), name);
      bytes = (*file)->Size().value();
    } else {
      // Band by band, as the route writes it (the text goes to the socket there).
      std::vector<CellValue> record(kColumns);
      std::string text;
      for (int64_t r = 1; r <= kRows; ++r) {
        for (int64_t c = 1; c <= kColumns; ++c) {
          record[static_cast<size_t>(c - 1)] = CellAt(r, c).value;
        }
        AppendCsvRecord(record, &text);
        if (text.size() > (1 << 16)) {
          bytes += static_cast<int64_t>(text.size());
          text.clear();
        }
      }
      bytes += static_cast<int64_t>(text.size());
    }
    const double seconds = SecondsSince(start);
    const double cells = static_cast<double>(kRows * kColumns);
    std::printf(
        "| %s | %.1f MB | %lld | %.2f s | %.1f MB/s | %.2fM cells/s | %lld MB | %lld MB "
        "|\n",
        name, static_cast<double>(bytes) / 1e6, static_cast<long long>(cells), seconds,
        static_cast<double>(bytes) / 1e6 / seconds, cells / 1e6 / seconds,
        static_cast<long long>(rss_before / 1024),
        static_cast<long long>(StatusKb("VmHWM") / 1024));
  });
}

// The uncompressed size of the worksheet XML in the package at `path`.
int64_t WorksheetXmlBytes(const std::string& path) {
  int error = 0;
  zip_t* zip = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (zip == nullptr) return -1;
  zip_stat_t stat;
  const int found = zip_stat(zip, "xl/worksheets/sheet1.xml", 0, &stat);
  zip_discard(zip);
  return found == 0 ? static_cast<int64_t>(stat.size) : -1;
}

int Main() {
  testing::TempDir dir;
  const std::string csv = dir.File("cells.csv");
  const std::string xlsx = dir.File("cells.xlsx");
  WriteInputs(csv, xlsx);
  std::printf("xlsx worksheet XML: %.1f MB uncompressed\n\n",
              static_cast<double>(WorksheetXmlBytes(xlsx)) / 1e6);
  std::printf(
      "| case | file | cells | time | MB/s | cells/s | RSS before | peak RSS |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  const std::string blobs = dir.File("blobs");
  PutBlob(blobs, "payload/cells.csv", csv);
  PutBlob(blobs, "payload/cells.xlsx", xlsx);
  ImportCase("csv validate", csv, ImportEdit::Format::kCsv, Read::kValidate);
  ImportCase("csv resolve", csv, ImportEdit::Format::kCsv, Read::kResolve);
  ImportCase("csv stream", csv, ImportEdit::Format::kCsv, Read::kStream);
  ImportCase("csv -> snapshot", csv, ImportEdit::Format::kCsv, Read::kSnapshot, blobs,
             "payload/cells.csv");
  ImportCase("xlsx validate", xlsx, ImportEdit::Format::kXlsx, Read::kValidate);
  ImportCase("xlsx resolve", xlsx, ImportEdit::Format::kXlsx, Read::kResolve);
  ImportCase("xlsx stream", xlsx, ImportEdit::Format::kXlsx, Read::kStream);
  ImportCase("xlsx -> snapshot", xlsx, ImportEdit::Format::kXlsx, Read::kSnapshot, blobs,
             "payload/cells.xlsx");
  ExportCase("csv export", false);
  ExportCase("xlsx export", true);
  return 0;
}

}  // namespace
}  // namespace sheetlog

int main() { return sheetlog::Main(); }
