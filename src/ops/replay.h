// Replaying a retained log in memory, for the operator tools (verify,
// rebuild-snapshots): the sheet after every entry read so far, compared with the
// completed snapshots met on the way.
//
// A log truncated at the front (seed 003) cannot be replayed from the empty sheet:
// the replay is then "unknown" until the first completed snapshot, whose cells it
// adopts as its base (the one snapshot that can only be trusted, not checked).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "emulator/blob/blob_store.h"
#include "emulator/status.h"
#include "src/log/event_log.h"
#include "src/sheet/sheet.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog {

struct SnapshotComparison {
  bool compared = false;  // false: the replay adopted the snapshot as its base
  int64_t snapshot_cells = 0;
  int64_t replay_cells = 0;
  int64_t differing_cells = 0;  // positions whose cell differs (or is only on one side)
  // The first differing position in row-major order and what each side holds there
  // (Cell::DebugString(), or "empty").
  std::optional<CellRef> first_difference;
  std::string first_in_snapshot;
  std::string first_in_replay;

  // "3 cells differ (snapshot 10 cells, replay 11); first at B2: snapshot 7, replay 5".
  std::string Summary() const;
};

class LogReplay {
 public:
  // from_empty: the log is retained from seq 0, so the replay starts from the empty
  // sheet; false: unknown until the next completed snapshot.
  void Reset(bool from_empty);
  bool known() const { return known_; }
  const Sheet& sheet() const { return sheet_; }

  // Applies one entry that is not a completed snapshot (Snapshot and EndSegment entries
  // change nothing). Nothing while unknown. An entry whose body cannot be read or
  // parsed is an error, and the replay becomes unknown.
  Status Apply(const EntryRecord& entry, BlobStore* blobs);

  // A completed snapshot met in the log: compared with the replay when known, else
  // adopted as the base (the replay becomes known). Errors are the reader's (a missing
  // or damaged chunk); the replay is then unchanged.
  Result<SnapshotComparison> CompareOrAdopt(const SnapshotReader& snapshot);

 private:
  bool known_ = false;
  Sheet sheet_;
};

// Compares a snapshot's cells with `expected` (sorted by ref), streaming the snapshot.
Result<SnapshotComparison> CompareSnapshot(const SnapshotReader& snapshot,
                                           const std::vector<PlacedCell>& expected);

}  // namespace sheetlog
