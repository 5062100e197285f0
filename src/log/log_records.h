// The event log's records (seed 001): a sheet, a segment, an entry, and what the
// operations of EventLog (event_log.h) take and return. Plain values; the item codecs
// that map them to the Sheet, Segment and Entry tables live in event_log*.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "emulator/status.h"
#include "emulator/table/request_units.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

struct SheetInfo {
  std::string id;
  std::string name;
  int64_t created = 0;  // unix seconds
  int64_t snapshot_every = 100;
  int64_t segment_entries = 10000;
  int64_t first_seq = 0;  // first retained seq (after truncation)
  // Root key of a snapshot holding every entry before first_seq, left by an exact
  // truncation (TruncateExact); nullopt when there is none.
  std::optional<std::string> base_root;
  // A fork (EventLog::Fork): the sheet it was forked from, whose history before
  // first_seq is the fork's; nullopt for a sheet made by CreateLog.
  std::optional<std::string> fork_of;
  // A fork's first_seq when it was made: seqs before it are the source's history
  // while first_seq is still there (the fork's own truncation ends that).
  std::optional<int64_t> fork_seq;
  // Blob keys of other sheets the fork uses (its shared snapshot's objects, its copied
  // entries' external bodies): held, never deleted, while this sheet exists.
  std::vector<std::string> shared_blobs;
};

struct SegmentInfo {
  int64_t num = 0;
  int64_t first_seq = 0;
  int64_t created = 0;
  std::optional<int64_t> last_snapshot;  // entry num of the newest completed snapshot
  std::optional<std::string> archive;
};

struct EntryRecord {
  int64_t seq = 0;
  int64_t segment = 0;
  int64_t num = 0;
  int64_t created = 0;
  std::string type;
  int64_t version = 1;
  std::optional<std::string> body;  // JSON text; nullopt = null
  std::optional<std::string> external;
  std::optional<std::string> snapshot_root;
  // JSON object of the metadata fields ever set on the entry (infinisheet's
  // LogMetadata: "snapshot", "history", "pending"), each a string or null once
  // cleared; nullopt when none was ever set. Metadata never changes seq numbering.
  std::optional<std::string> metadata;
};

// The metadata fields an entry may carry (kEntryMetadataFields) and what a client set
// last: a server Snapshot entry or a client-set "snapshot" field, whichever is newer.
inline constexpr const char* kEntryMetadataFields[] = {"snapshot", "history", "pending"};

struct SnapshotRef {
  int64_t seq = 0;
  std::optional<std::string> root;      // completed Snapshot entry: its root manifest
  std::optional<std::string> snapshot;  // client-set "snapshot" metadata
};

struct TruncateResult {
  int64_t first_seq = 0;                  // the first retained seq afterwards
  std::vector<int64_t> dropped_segments;  // by this call
  int64_t dropped_entries = 0;
  std::vector<std::string> archives;  // keys written by this call
  // Blobs only the dropped entries referenced (external bodies when not archived,
  // snapshot roots), for the caller to delete.
  std::vector<std::string> released_blobs;
};

struct AppendRequest {
  std::string sheet_id;
  std::string type;
  int64_t version = 1;
  std::optional<std::string> body;  // canonical JSON text, nullopt = null
  std::optional<std::string> external;
  std::optional<int64_t> expect_seq;
  // Metadata written with the entry: a JSON object text of string fields (see
  // EntryRecord::metadata); nullopt for none.
  std::optional<std::string> metadata;
  // Also read what LastSnapshot() would answer, in the append's own transaction
  // (AppendResult::last_snapshot), instead of in read transactions afterwards.
  bool read_last_snapshot = false;
  // Set only by the system, to append Snapshot entries.
  bool allow_reserved = false;
  // For a Snapshot entry: write it only if the sheet's snapshot_every says one is due
  // (the snapshot policy's append, so that concurrent writers add one, not several);
  // FailedPrecondition("snapshot not due") otherwise. False: append one now (on
  // demand).
  bool only_if_due = false;
  // More writes that must commit atomically with the entry (e.g. marking an upload as
  // referenced). Runs in the entry's transaction right after its put; an error undoes
  // both.
  std::function<Status(Connection&, const EntryRecord&, UnitMeter*)> also_write;
};

struct AppendResult {
  EntryRecord entry;
  // The policies after the append (best effort; their failures do not fail the append).
  bool snapshot_appended = false;
  bool segment_created = false;
  // With AppendRequest::read_last_snapshot: LastSnapshot() as of the append's commit,
  // when the append could read it in its transaction (last_snapshot_read); callers
  // ask LastSnapshot() otherwise.
  bool last_snapshot_read = false;
  std::optional<SnapshotRef> last_snapshot = std::nullopt;
};

struct ReadRange {
  std::vector<EntryRecord> entries;
  int64_t from = 0;
  int64_t to = 0;  // the requested exclusive bound, or the next seq for "end"
  // Nothing more exists in [from, to) now: the page reached `to` or the head,
  // whichever comes first.
  bool complete = false;
  int64_t next = 0;  // the seq the next page starts at (one past the last entry read)
};

struct LoadResult {
  // The completed snapshot the entries start from (its Snapshot entry), if any.
  std::optional<EntryRecord> snapshot;
  std::vector<EntryRecord> entries;  // after the snapshot, in order
  int64_t next_seq = 0;
};

}  // namespace sheetlog
