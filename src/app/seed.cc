#include "src/app/seed.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "emulator/backup/backup.h"
#include "emulator/env/clock.h"
#include "emulator/table/request_units.h"
#include "src/app/app.h"
#include "src/log/event_log.h"
#include "src/log/log_records.h"
#include "src/log/uploads.h"
#include "src/sheet/import_file.h"
#include "src/sheet/sheet_edit.h"

namespace sheetlog {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kEntriesSuffix = ".entries.json";

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return InvalidArgument(path + ": cannot be read");
  return text.str();
}

// "CSV line 7, field 3: what" -> "PATH:7: field 3: what"; "CSV line 7: what" ->
// "PATH:7: what"; any other import message -> "PATH: message".
std::string WhereInFile(const std::string& path, const std::string& message) {
  constexpr std::string_view kCsvLine = "CSV line ";
  if (message.rfind(kCsvLine, 0) == 0) {
    size_t end = kCsvLine.size();
    while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end])))
      ++end;
    if (end > kCsvLine.size()) {
      const std::string line = message.substr(kCsvLine.size(), end - kCsvLine.size());
      std::string rest = message.substr(end);
      if (rest.rfind(", ", 0) == 0 || rest.rfind(": ", 0) == 0) rest = rest.substr(2);
      return path + ":" + line + ": " + rest;
    }
  }
  return path + ": " + message;
}

// The SetCells bodies of `cells[begin, end)`, split until each fits within `limit`.
void EncodeCells(const ImportedCells& cells, size_t begin, size_t end, int64_t limit,
                 std::vector<std::string>* out) {
  SetCellsEdit edit;
  edit.form = SetCellsEdit::Form::kMap;
  edit.cells.assign(cells.begin() + static_cast<std::ptrdiff_t>(begin),
                    cells.begin() + static_cast<std::ptrdiff_t>(end));
  std::string body = EncodeEditBody(SheetEdit(std::move(edit))).dump();
  if (static_cast<int64_t>(body.size()) <= limit || end - begin == 1) {
    out->push_back(std::move(body));
    return;
  }
  // As many equal parts as the size says, so most bodies are encoded twice at most;
  // a part still too large (cells of uneven sizes) is split again.
  const size_t parts = std::min<size_t>(
      end - begin, static_cast<size_t>(static_cast<int64_t>(body.size()) / limit + 1));
  const size_t count = end - begin;
  for (size_t part = 0; part < parts; ++part) {
    EncodeCells(cells, begin + count * part / parts, begin + count * (part + 1) / parts,
                limit, out);
  }
}

// Line (from 1) of the start of each element of the top-level JSON array `text`
// (which parsed): strings are skipped, so brackets inside them do not count.
std::vector<int> ElementLines(std::string_view text) {
  std::vector<int> lines;
  int line = 1;
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  bool want_element = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      if (c == '\n') ++line;
      continue;
    }
    if (c == '\n') ++line;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    if (depth == 1 && want_element && c != ']') {
      lines.push_back(line);
      want_element = false;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
      if (depth == 1) want_element = true;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 1) {
      want_element = true;
    }
  }
  return lines;
}

// Line (from 1) of byte `offset` of `text`.
int LineOf(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(
                 text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

// The files of one sheet name.
struct SheetFiles {
  std::optional<std::string> cells_file;  // .csv or .xlsx
  std::string format;                     // "csv" or "xlsx"
  std::optional<std::string> entries_file;
};

}  // namespace

Result<std::vector<std::string>> SeedCellBodies(const std::string& bytes,
                                                const std::string& format,
                                                int64_t inline_limit, int64_t* cells) {
  ImportEdit edit;  // at A1, replace, the first worksheet: what a plain import does
  edit.format = format == "xlsx" ? ImportEdit::Format::kXlsx : ImportEdit::Format::kCsv;
  StringPayloadSource source(bytes);
  ASSIGN_OR_RETURN(ImportedCells imported, ReadImportedCells(edit, source));
  *cells = static_cast<int64_t>(imported.size());
  std::vector<std::string> bodies;
  if (imported.empty()) return bodies;
  // Some room under the limit for what the log adds to a body's size estimate.
  EncodeCells(imported, 0, imported.size(), std::max<int64_t>(inline_limit - 64, 256),
              &bodies);
  return bodies;
}

Result<std::vector<SeedSheet::Entry>> ParseSeedEntries(const std::string& text) {
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::parse_error& e) {
    return InvalidArgument(std::to_string(LineOf(text, e.byte > 0 ? e.byte - 1 : 0)) +
                           ": not JSON: " + e.what());
  }
  if (!parsed.is_array()) return InvalidArgument("1: expected a JSON array of entries");
  const std::vector<int> lines = ElementLines(text);
  std::vector<SeedSheet::Entry> entries;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const json& item = parsed[i];
    const std::string where = std::to_string(i < lines.size() ? lines[i] : 1) +
                              ": entry " + std::to_string(i + 1) + ": ";
    if (!item.is_object()) return InvalidArgument(where + "expected an object");
    for (const auto& [key, value] : item.items()) {
      if (key != "type" && key != "body" && key != "version") {
        return InvalidArgument(where + "unknown field '" + key +
                               "' (type, body, version)");
      }
    }
    SeedSheet::Entry entry;
    const auto type = item.find("type");
    if (type == item.end() || !type->is_string() || type->get<std::string>().empty()) {
      return InvalidArgument(where + "field 'type' is required (a non-empty string)");
    }
    entry.type = type->get<std::string>();
    if (entry.type.size() > 64) {
      return InvalidArgument(where + "field 'type' is longer than 64 bytes");
    }
    if (IsReservedType(entry.type)) {
      return InvalidArgument(where + "entry type '" + entry.type +
                             "' is reserved for the system");
    }
    if (entry.type == "Import") {
      return InvalidArgument(where +
                             "Import is not a seed entry: put the file beside it as "
                             "NAME.csv or NAME.xlsx");
    }
    if (const auto version = item.find("version"); version != item.end()) {
      if (!version->is_number_integer() || version->get<int64_t>() < 1 ||
          version->get<int64_t>() > 1000000) {
        return InvalidArgument(where + "field 'version' must be in 1..1000000");
      }
      entry.version = version->get<int64_t>();
    }
    const json body = item.contains("body") ? item["body"] : json(nullptr);
    if (Status valid = ValidateAppend(entry.type, entry.version, body); !valid.ok()) {
      return InvalidArgument(where + valid.message());
    }
    if (!body.is_null()) entry.body = body.dump();
    entries.push_back(std::move(entry));
  }
  return entries;
}

Result<Seed> ReadSeed(const std::string& dir, int64_t inline_limit) {
  Seed seed;
  seed.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return NotFound(dir + " is not a directory");
  }
  if (fs::exists(fs::path(dir) / "manifest.json", ec)) {
    seed.backup = true;  // RestoreBackup checks it whole before writing anything
    return seed;
  }
  std::map<std::string, SheetFiles> by_name;
  std::vector<fs::directory_entry> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    files.push_back(*it);
  }
  if (ec) return InvalidArgument(dir + ": cannot be listed: " + ec.message());
  std::sort(files.begin(), files.end());
  for (const fs::directory_entry& file : files) {
    const std::string name = file.path().filename().string();
    const std::string path = (fs::path(dir) / name).string();
    if (name.empty() || name[0] == '.') continue;
    if (!file.is_regular_file(ec)) {
      return InvalidArgument(path +
                             ": not a regular file (a seed holds NAME.csv, "
                             "NAME.xlsx and NAME.entries.json files)");
    }
    std::string sheet;
    if (EndsWith(name, kEntriesSuffix)) {
      sheet = name.substr(0, name.size() - kEntriesSuffix.size());
      if (!sheet.empty()) by_name[sheet].entries_file = path;
    } else if (EndsWith(name, ".csv") || EndsWith(name, ".xlsx")) {
      const bool csv = EndsWith(name, ".csv");
      sheet = name.substr(0, name.size() - (csv ? 4 : 5));
      SheetFiles& files_of = by_name[sheet];
      if (!sheet.empty() && files_of.cells_file) {
        return InvalidArgument(path + ": sheet '" + sheet +
                               "' already has its cells in " + *files_of.cells_file +
                               " (one CSV or XLSX per sheet)");
      }
      files_of.cells_file = path;
      files_of.format = csv ? "csv" : "xlsx";
    }
    if (sheet.empty()) {
      return InvalidArgument(path +
                             ": not a seed file (NAME.csv, NAME.xlsx or "
                             "NAME.entries.json; a backup has manifest.json)");
    }
    if (sheet.size() > 1024) {
      return InvalidArgument(path + ": the sheet name is longer than 1024 bytes");
    }
  }
  for (auto& [name, files_of] : by_name) {
    SeedSheet sheet;
    sheet.name = name;
    if (files_of.cells_file) {
      sheet.files.push_back(*files_of.cells_file);
      ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(*files_of.cells_file));
      Result<std::vector<std::string>> bodies =
          SeedCellBodies(bytes, files_of.format, inline_limit, &sheet.cells);
      if (!bodies.ok()) {
        return InvalidArgument(
            WhereInFile(*files_of.cells_file, bodies.status().message()));
      }
      for (std::string& body : *bodies) {
        sheet.entries.push_back({"SetCells", kBuiltinEditVersion, std::move(body)});
      }
    }
    if (files_of.entries_file) {
      sheet.files.push_back(*files_of.entries_file);
      ASSIGN_OR_RETURN(std::string text, ReadWholeFile(*files_of.entries_file));
      Result<std::vector<SeedSheet::Entry>> entries = ParseSeedEntries(text);
      if (!entries.ok()) {
        return InvalidArgument(*files_of.entries_file + ":" + entries.status().message());
      }
      for (SeedSheet::Entry& entry : *entries) sheet.entries.push_back(std::move(entry));
    }
    seed.sheets.push_back(std::move(sheet));
  }
  return seed;
}

Result<bool> StoreHasNoSheets(App& app) {
  UnitMeter meter;
  ASSIGN_OR_RETURN(std::vector<SheetInfo> sheets, app.log()->ListSheets("", 1, &meter));
  return sheets.empty();
}

Result<SeedLoadReport> LoadSeed(const Seed& seed, App& app,
                                std::vector<std::string>* created) {
  SeedLoadReport report;
  std::vector<std::string> ids;
  std::vector<UnitMeter> meters(seed.sheets.size());
  size_t rounds = 0;
  for (size_t i = 0; i < seed.sheets.size(); ++i) {
    const SeedSheet& sheet = seed.sheets[i];
    // The defaults of POST /v1/sheets.
    ASSIGN_OR_RETURN(SheetInfo info,
                     app.log()->CreateLog(sheet.name, 100, 10000, &meters[i]));
    ids.push_back(info.id);
    created->push_back(info.id);
    rounds = std::max(rounds, sheet.entries.size());
    report.cells += sheet.cells;
  }
  report.sheets = static_cast<int64_t>(ids.size());
  // Round r appends every sheet's entry r at once: the group commit writes them in a
  // few transactions instead of one each, and a sheet's entries stay in order because
  // round r + 1 starts only once round r is durable.
  std::mutex mutex;
  std::condition_variable done_cv;
  for (size_t round = 0; round < rounds; ++round) {
    size_t pending = 0;
    Status failed = Status::OK();
    std::string failed_sheet;
    for (size_t i = 0; i < seed.sheets.size(); ++i) {
      if (round >= seed.sheets[i].entries.size()) continue;
      const SeedSheet::Entry& entry = seed.sheets[i].entries[round];
      AppendRequest request;
      request.sheet_id = ids[i];
      request.type = entry.type;
      request.version = entry.version;
      request.body = entry.body;
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++pending;
      }
      app.uploads()->AppendAsync(
          std::move(request), &meters[i],
          [&, i](Result<AppendResult> result, int64_t /*next_seq*/) {
            std::lock_guard<std::mutex> lock(mutex);
            if (!result.ok() && failed.ok()) {
              failed = result.status();
              failed_sheet = seed.sheets[i].name;
            }
            if (--pending == 0) done_cv.notify_all();
          });
      ++report.entries;
    }
    std::unique_lock<std::mutex> lock(mutex);
    done_cv.wait(lock, [&] { return pending == 0; });
    if (!failed.ok()) {
      return failed.Annotate("seeding sheet '" + failed_sheet + "'");
    }
  }
  return report;
}

namespace {

// Present in a SQLite data directory while a seed loads into it: a start that finds it
// knows the directory holds a seed that never finished (a crash, a kill) and nothing
// else, and starts it again from empty.
constexpr const char* kSeedingMarker = ".sheetlog-seeding";

// Removes everything inside `dir` but the seeding marker, leaving `dir` itself (it may
// be a mount point); then the marker too when `marker_too`. The marker goes last, so a
// crash in the middle still leaves a directory the next start empties again.
void EmptyDirectory(const std::string& dir, bool marker_too) {
  std::error_code ec;
  std::vector<std::filesystem::path> doomed;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->path().filename() != kSeedingMarker) doomed.push_back(it->path());
  }
  std::error_code ignored;
  for (const std::filesystem::path& path : doomed) {
    std::filesystem::remove_all(path, ignored);
  }
  if (marker_too)
    std::filesystem::remove(std::filesystem::path(dir) / kSeedingMarker, ignored);
}

}  // namespace

Seeding::~Seeding() {
  if (!temp_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(temp_dir_, ignored);
  }
}

Status Seeding::PrepareStore(AppOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Result<Seed> read = ReadSeed(dir_, options.inline_limit);
  read_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - start)
                 .count();
  if (!read.ok()) return InvalidArgument("seed refused: " + read.status().message());
  seed_ = std::move(*read);
  sqlite_ = options.postgres_store.empty();
  if (seed_->backup && (!sqlite_ || options.s3_blobs)) {
    return InvalidArgument("seed refused: " + dir_ +
                           " is a backup, which seeds only the SQLite store with the "
                           "directory blob store (no --store postgres://, no --blobs)");
  }
  if (sqlite_ && !options.in_memory) {
    namespace fs = std::filesystem;
    const fs::path data(options.data_dir);
    std::error_code ec;
    if (fs::exists(data / kSeedingMarker, ec)) {
      spdlog::warn(
          "seed: the previous start's seed of {} did not finish; emptying it "
          "and seeding again from {}",
          options.data_dir, dir_);
      EmptyDirectory(options.data_dir, /*marker_too=*/false);
    } else if (fs::exists(data, ec) && !fs::is_empty(data, ec)) {
      spdlog::info("seed {} skipped: data directory {} already holds data", dir_,
                   options.data_dir);
      seed_.reset();
      return Status::OK();
    }
    fs::create_directories(data, ec);
    marker_ = (data / kSeedingMarker).string();
    if (ec || !std::ofstream(marker_).good()) {
      return Internal("seed: cannot write " + marker_);
    }
    data_dir_ = options.data_dir;
  }
  if (!seed_->backup) return Status::OK();
  if (options.in_memory) {
    std::error_code ec;
    const std::filesystem::path base = std::filesystem::exists("/dev/shm", ec)
                                           ? "/dev/shm"
                                           : std::filesystem::temp_directory_path();
    std::string pattern = (base / "sheetlog-mem-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return Internal("seed: cannot create a temporary data directory under " +
                      base.string());
    }
    temp_dir_ = pattern;
    options.in_memory = false;  // this directory, removed at exit by ~Seeding
    options.data_dir = temp_dir_;
  }
  Result<RestoreReport> restored = RestoreBackup(
      dir_, (std::filesystem::path(options.data_dir) / "sheetlog.db").string(),
      (std::filesystem::path(options.data_dir) / "blobs").string(),
      SystemClock::Default());
  if (!restored.ok()) {
    Undo(nullptr);
    return InvalidArgument("seed refused: backup " + dir_ + ": " +
                           restored.status().message());
  }
  spdlog::info("seed: restored backup {} from {} ({} objects)", restored->id, dir_,
               restored->blobs);
  return Status::OK();
}

Status Seeding::Load(std::unique_ptr<App>& app) {
  if (!seed_) return Status::OK();
  if (!seed_->backup) {
    if (!sqlite_) {
      Result<bool> empty = StoreHasNoSheets(*app);
      if (!empty.ok()) return empty.status().Annotate("seed");
      if (!*empty) {
        spdlog::info("seed {} skipped: the store {} already holds sheets", dir_,
                     app->store_description());
        return Status::OK();
      }
    }
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> created;
    Result<SeedLoadReport> loaded = LoadSeed(*seed_, *app, &created);
    if (!loaded.ok()) {
      Undo(&app, created);
      return loaded.status().Annotate("seed " + dir_ + " not loaded, nothing kept");
    }
    spdlog::info(
        "seed: {} sheets, {} entries ({} cells) from {}: read and checked in {} "
        "ms, loaded in {} ms",
        loaded->sheets, loaded->entries, loaded->cells, dir_, read_ms_,
        std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start)
            .count());
  }
  Done();
  return Status::OK();
}

void Seeding::Done() {
  if (!marker_.empty()) {
    std::error_code ignored;
    std::filesystem::remove(marker_, ignored);
    marker_.clear();
  }
}

void Seeding::Undo(std::unique_ptr<App>* app, const std::vector<std::string>& created) {
  if (!sqlite_ && app != nullptr && *app != nullptr) {
    for (const std::string& id : created) {
      UnitMeter meter;
      if (Result<std::vector<std::string>> deleted =
              (*app)->log()->DeleteSheet(id, &meter);
          !deleted.ok()) {
        spdlog::error("seed: deleting sheet {} again failed: {}", id,
                      deleted.status().ToString());
      }
    }
    (*app)->PurgeDeletedSheets();
    return;
  }
  if (app != nullptr) app->reset();
  if (!data_dir_.empty()) {
    EmptyDirectory(data_dir_, /*marker_too=*/true);  // as it was: the next start seeds
    marker_.clear();
  }
}

}  // namespace sheetlog
