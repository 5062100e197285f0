// `sheetlog serve --seed DIR` (or SHEETLOG_SEED): what fills an empty store at start,
// before the server listens.
//
// DIR is one of two things:
//   - a backup (`sheetlog backup`): DIR/manifest.json exists. Restored as `sheetlog
//     restore` does (RestoreBackup, every file checked against its checksum first);
//     only into SQLite with the directory blob store.
//   - fixtures: every other DIR. Its regular files, by name (others are refused, so a
//     typo never goes unnoticed; names starting with '.' are ignored):
//       NAME.csv           the cells of sheet NAME (UTF-8 CSV, as POST .../uploads with
//                          an Import {"format": "csv"} reads it; A1 = first field)
//       NAME.xlsx          the cells of sheet NAME from the workbook's first worksheet
//                          (as an Import {"format": "xlsx"})
//       NAME.entries.json  a JSON array of entries appended to sheet NAME after its
//                          cells, in order: {"type": T, "body"?: B, "version"?: V}
//                          (as POST .../entries takes them; built-in types' bodies
//                          checked the same way; not Import, Snapshot or EndSegment)
//     A sheet has at most one of NAME.csv and NAME.xlsx; NAME.entries.json alone makes
//     a sheet of those entries only. Sheets are created in NAME order.
//
// Every file is read and checked (ReadSeed) before anything is written; a refusal
// names the file and where in it: "DIR/orders.csv:17: field 2: ...",
// "DIR/book.xlsx: XLSX sheet 'Data' cell B7: ...", "DIR/orders.entries.json:12:
// entry 3: SetCell: field 'ref': ...".
//
// A file's cells reach the log as SetCells entries ({"cells": {...}} in the map form,
// split so each body stays within the inline limit), the same cells an import of the
// file shows: ReadImportedCells is the import's own parser.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/status.h"

namespace sheetlog {

class App;
struct AppOptions;

// One sheet of a fixtures seed, checked and ready to append.
struct SeedSheet {
  std::string name;
  // The files it came from (for messages).
  std::vector<std::string> files;
  struct Entry {
    std::string type;
    int64_t version = 1;
    std::optional<std::string> body;  // canonical JSON text; nullopt = null
  };
  // Cells first (SetCells), then the entries file's entries.
  std::vector<Entry> entries;
  int64_t cells = 0;
};

struct Seed {
  std::string dir;
  // A backup: restore it; else `sheets`.
  bool backup = false;
  std::vector<SeedSheet> sheets;
};

// Reads and checks every file of DIR (see the top of this file). `inline_limit`: the
// most bytes of JSON one SetCells body takes (AppOptions::inline_limit), so loading
// writes no blob for cells. InvalidArgument naming file and place on a bad file;
// NotFound if DIR is missing.
Result<Seed> ReadSeed(const std::string& dir, int64_t inline_limit);

// The SetCells bodies (canonical JSON text) of `cells` parsed from `bytes` as `format`
// ("csv" or "xlsx"), each at most `inline_limit` bytes unless one cell alone is larger.
// InvalidArgument with the import's own message ("CSV line 7, field 3: ...").
Result<std::vector<std::string>> SeedCellBodies(const std::string& bytes,
                                                const std::string& format,
                                                int64_t inline_limit, int64_t* cells);

// The entries of a NAME.entries.json text, checked. InvalidArgument "LINE: entry N: ..."
// (LINE counting from 1; 0 when the text is not JSON at all).
Result<std::vector<SeedSheet::Entry>> ParseSeedEntries(const std::string& text);

// Whether the store of `app` holds no sheet (PostgreSQL, where no data directory tells).
Result<bool> StoreHasNoSheets(App& app);

struct SeedLoadReport {
  int64_t sheets = 0;
  int64_t entries = 0;
  int64_t cells = 0;
};

// Creates the fixtures' sheets and appends their entries through the log's group
// commit: the first entries of every sheet go out together, then the second, and so
// on (entries of one sheet stay in order). Run before the workers start and before
// the server listens. On an error, `created` holds the ids of the sheets made so far
// (the caller undoes them).
Result<SeedLoadReport> LoadSeed(const Seed& seed, App& app,
                                std::vector<std::string>* created);

// What `serve --seed` does around App::Open (the layout above).
//
// Before anything is written, every seed file is read and checked (ReadSeed). Whether
// the store is empty: a SQLite data directory that is missing or empty (or holds only
// the marker of a seed that never finished, .sheetlog-seeding); --in-memory, always;
// PostgreSQL, no sheet in the store (checked once open). A store with data is left
// alone, with one log line. A seed that fails while loading leaves the store as it
// was: a SQLite data directory emptied again, the sheets made on PostgreSQL deleted;
// so the next start tries the seed again.
class Seeding {
 public:
  explicit Seeding(std::string dir) : dir_(std::move(dir)) {}
  ~Seeding();

  // Before App::Open: reads the seed, decides whether it loads, and restores a backup.
  // May change `options` (a backup restored for --in-memory goes to a temporary
  // directory of its own).
  Status PrepareStore(AppOptions& options);

  // After App::Open, before the workers start and the server listens: loads the
  // fixtures. On an error the caller exits; the store is as it was.
  Status Load(std::unique_ptr<App>& app);

  // The seed is whole: the next start sees a data directory with data.
  void Done();

  // Takes back what the seed wrote. `app`, when given, is closed first (SQLite) or
  // used to delete the sheets in `created` (PostgreSQL).
  void Undo(std::unique_ptr<App>* app, const std::vector<std::string>& created = {});

  // Started from the seed (in the start-up log line).
  bool loading() const { return seed_.has_value(); }

 private:
  std::string dir_;
  std::optional<Seed> seed_;
  bool sqlite_ = true;
  std::string data_dir_;  // a SQLite data directory the seed writes into
  std::string marker_;
  std::string temp_dir_;
  int64_t read_ms_ = 0;  // ReadSeed's time, for the log line
};

}  // namespace sheetlog
