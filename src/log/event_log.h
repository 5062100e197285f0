// The event log of seed 001: Create Log, Add Entry, Create New Segment, Load
// Spreadsheet, Update Loaded Spreadsheet, reading ranges, and Truncate (seed 003).
//
// Entries live in segments; every segment starts with a Snapshot entry (num 0) and
// every segment but the last ends with an EndSegment entry. Besides (segment, num),
// every entry carries a flat `seq` numbering the whole sheet 0..N without gaps:
// seq = segment.first_seq + num.
//
// Add Entry follows the seed's steps literally — read the newest segment, read its head
// entry, conditional put at head + 1 (attribute_not_exists), on EndSegment go back to
// the segment read, on a lost condition retry with exponential backoff and full jitter —
// with one local refinement: steps 1–3 run inside one group-commit write transaction
// (emulator/sqlite), so the reads are strongly consistent and concurrent appends on this
// machine do not lose conditions to one another; the retry loop still guards against
// any other writer of the same file.
//
// The records it takes and returns: log_records.h. The implementation, by job:
// event_log.cc (item codecs, Create Log, metadata, snapshot completion, deletion),
// event_log_add_entry.cc, event_log_read.cc, event_log_truncate.cc (with the archive
// format in archive_format.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/table/table.h"
#include "emulator/table/transactions.h"
#include "src/log/log_records.h"
#include "src/log/pending_snapshots.h"

namespace sheetlog {

// Thread-safe: every method may be called from any thread (HTTP workers, the snapshot
// worker, retention); concurrent appends to one sheet are ordered by the conditional put.
class EventLog {
 public:
  struct Options {
    // Add Entry attempts before giving up with Unavailable. Default: 8.
    int max_attempts = 8;
    // Backoff base and cap for retries (full jitter). Default: 1 ms, 100 ms.
    int64_t backoff_base_micros = 1000;
    int64_t backoff_cap_micros = 100000;
    // Entries per segment query page (DynamoDB also stops at 1 MB).
    int page_size = 1000;
    // true: Add Entry's reads run inside the group-commit write transaction (strongly
    // consistent; appends on this machine never lose conditions to each other).
    // false: the seed's literal form — eventually consistent reads on a read
    // connection, then the conditional put — where concurrent appenders race and retry.
    // Default: true.
    bool reads_in_write_transaction = true;
    // One Add Entry attempt at a time per sheet in this process (a lock per sheet,
    // striped), for a table store where appends of this process to one sheet would
    // otherwise race each other for head + 1 in transactions of their own and exhaust
    // their attempts. They queue instead; the conditional put and its retries still
    // arbitrate between processes. Add Entry without waiting (AddEntryAsync) then waits.
    // Default: false (both backends' group commit runs this node's asynchronous appends
    // one after another, in one transaction per batch).
    bool serialize_appends_per_sheet = false;
    // Group commit's appends as one statement: AddEntryAsync's ordinary appends (not a
    // Snapshot entry, no client snapshot, no also_write) that queue while a write is
    // in flight are planned together, reading each sheet once, and put with one
    // multi-row conditional insert (Table::PutAllIfAbsent); should any of them lose
    // its condition to another process, the batch is undone and each runs Add Entry's
    // steps on its own. Requires reads_in_write_transaction. Default: true.
    bool batch_appends = true;
    // Test hook, literal form only: runs between the reads and the conditional put,
    // where another writer may slip in.
    std::function<void()> test_between_read_and_put;
  };

  EventLog(Transactions* db, Clock* clock, FaultInjector* faults, Options options);

  // Create Log: one transaction writing Segment 0 and entry 0 (Snapshot, body null).
  Result<SheetInfo> CreateLog(const std::string& name, int64_t snapshot_every,
                              int64_t segment_entries, UnitMeter* meter);

  Result<SheetInfo> GetSheet(const std::string& sheet_id, UnitMeter* meter);
  // Sheets ordered by id, after `after` (exclusive), at most `limit`.
  Result<std::vector<SheetInfo>> ListSheets(const std::string& after, int limit,
                                            UnitMeter* meter);
  // Deletes the sheet's entries, segments, pending snapshots, metadata and upload rows,
  // and writes its tombstone (sheet_deletion.h), in one transaction. Returns the blob
  // keys it referenced (external bodies, snapshot roots, archives); SheetPurger::Purge
  // deletes those and every other object of the sheet. NotFound if no such sheet.
  Result<std::vector<std::string>> DeleteSheet(const std::string& sheet_id,
                                               UnitMeter* meter);
  // The log's part of an admin reset (App::Reset), inside the caller's transaction:
  // deletes every sheet with its segments, entries and pending snapshots, and returns
  // how many sheets there were. No tombstones, no blobs: upload rows and tombstones are
  // their owners' (Uploads::DeleteAll, DeleteAllSheetDeletions), and the caller deletes
  // every object. The entries' deletes reach the change feed as any delete does.
  Result<int64_t> DeleteAll(Connection& conn);

  // Truncate (seed 003's checkpoint-based expiry): drops the entries of whole segments
  // that end before `before_seq` and lie behind a completed snapshot (a later segment
  // has one), oldest first; the newest segment is never dropped. With `archive_to`,
  // each dropped segment is first written to it as JSON lines (one entry per line, as
  // api.md shows entries, bodies inline) at ArchiveKey(), and the key is recorded on
  // the segment. Segment rows stay (they carry the archive key); the sheet's first_seq
  // moves to the first retained entry and reads before it answer Gone. Idempotent: a
  // repeat, or a before_seq that frees nothing, changes nothing.
  Result<TruncateResult> Truncate(const std::string& sheet_id, int64_t before_seq,
                                  BlobStore* archive_to, UnitMeter* meter);
  static std::string ArchiveKey(const std::string& sheet_id, int64_t segment);

  // Exact truncation (infinisheet's truncate(start)): afterwards the log starts at
  // `before_seq`. Drops every entry before it, cutting a segment in the middle if
  // need be, and records `base_root` (a snapshot holding every entry before
  // `before_seq`, which the caller built first) as the sheet's base_root, so cells
  // reads and snapshot builds at and after the cut still work. Archives like Truncate
  // (a segment archived twice keeps one object with every dropped entry in order).
  // OutOfRange if before_seq is below first_seq or beyond the next seq; before_seq ==
  // first_seq changes nothing (base_root is then not recorded). Unavailable if
  // another truncation moved first_seq meanwhile. The previous base_root and the
  // blobs only the dropped entries referenced come back in released_blobs.
  Result<TruncateResult> TruncateExact(const std::string& sheet_id, int64_t before_seq,
                                       const std::optional<std::string>& base_root,
                                       BlobStore* archive_to, UnitMeter* meter);

  // Fork (POST /v1/sheets/{id}/fork): a new sheet whose log is the source's up to
  // `at` (default: the head), with a future of its own. Copies only the entries from
  // the newest completed snapshot at or before `at` (which becomes the fork's
  // first_seq and base_root, as after an exact truncation) and the segment rows they
  // lie in; the snapshot's objects and the copied external bodies are shared and
  // listed in the fork's shared_blobs (held: see HeldBlobs). Cells reads before the
  // fork's first_seq go on to the source (ReadSheetHistory). When `at` is an
  // EndSegment, the next segment's Snapshot entry comes along (same cells), so the
  // fork's head is at + 1. All in one transaction, conditional on the source's
  // first_seq being what the plan read: a crash leaves no fork or a whole one.
  // NotFound (source), OutOfRange (`at` negative or past the head), Gone (`at`
  // before first_seq, or no retained snapshot covers it), Unavailable (the source
  // kept being truncated meanwhile).
  struct ForkRequest {
    std::string source_id;
    std::optional<int64_t> at;
    std::string name;
    // The objects a snapshot root names besides itself (its chunks): the snapshot
    // layer reads manifests, the log does not. Null: the root alone is held.
    std::function<Result<std::vector<std::string>>(const std::string& root)>
        snapshot_objects;
  };
  Result<SheetInfo> Fork(const ForkRequest& request, UnitMeter* meter);

  // Every blob key some sheet holds for a fork (the union of SheetInfo::shared_blobs):
  // whoever deletes a sheet's objects reads it after its own commit and leaves these
  // (sheet_blobs.h's DeletableBlobs). A strongly consistent scan of the Sheet table.
  Result<std::set<std::string>> HeldBlobs(UnitMeter* meter);

  // infinisheet's setMetadata: sets each field of `patch` (a JSON object of
  // kEntryMetadataFields, each a string, or null to clear it) on entry `seq`, leaving
  // the other fields as they are; all or nothing. Returns the entry afterwards.
  // NotFound (sheet), OutOfRange if seq is at or beyond the next seq, Gone if it was
  // truncated, InvalidArgument if patch is not such an object.
  Result<EntryRecord> SetMetadata(const std::string& sheet_id, int64_t seq,
                                  const std::string& patch, UnitMeter* meter);

  // The newest snapshot a reader may start from: the newer of the newest completed
  // Snapshot entry and the newest retained entry with a client-set "snapshot"
  // metadata field; nullopt if neither exists.
  Result<std::optional<SnapshotRef>> LastSnapshot(const std::string& sheet_id,
                                                  UnitMeter* meter);

  // Add Entry (seed 001) plus the snapshot and segment policies (seed 000).
  // Errors: NotFound (sheet), InvalidArgument (reserved type), ConditionFailed with
  // `*next_seq_out` set when expect_seq is not the next seq, Unavailable after
  // max_attempts lost conditions.
  Result<AppendResult> AddEntry(const AppendRequest& request, UnitMeter* meter,
                                int64_t* next_seq_out = nullptr);

  // AddEntry without holding the caller while the entry commits: `done` gets what
  // AddEntry would have returned, and the next seq for a ConditionFailed (else -1),
  // once the entry is durable or the append failed — on whichever thread committed it
  // (Transactions::WriteAsync), possibly the caller's own before this returns. The
  // policies that follow an append run inside `done`'s thread before it is called.
  // `meter` must stay valid until `done` runs; `done` must not throw.
  using AppendDone = std::function<void(Result<AppendResult>, int64_t next_seq)>;
  void AddEntryAsync(AppendRequest request, UnitMeter* meter, AppendDone done);

  // Create New Segment (seed 001). FailedPrecondition if the current segment has no
  // completed snapshot yet.
  Result<SegmentInfo> CreateNewSegment(const std::string& sheet_id, UnitMeter* meter);

  Result<std::vector<SegmentInfo>> ListSegments(const std::string& sheet_id,
                                                UnitMeter* meter);

  // The next seq to be assigned (head seq + 1): one eventually consistent query, which
  // sees every commit before it (both backends). NotFound for no sheet.
  Result<int64_t> NextSeq(const std::string& sheet_id, UnitMeter* meter);

  // Entries with from <= seq < to (to = nullopt: up to the head), at most `limit`.
  // OutOfRange if from is negative or beyond the next seq; Gone (first_seq) if `from`
  // lies before the first retained entry.
  Result<ReadRange> Read(const std::string& sheet_id, int64_t from,
                         std::optional<int64_t> to, int limit, UnitMeter* meter);
  // Seq of the newest completed snapshot's Snapshot entry, if any.
  Result<std::optional<EntryRecord>> LastCompletedSnapshot(const std::string& sheet_id,
                                                           UnitMeter* meter);
  Result<EntryRecord> GetEntry(const std::string& sheet_id, int64_t seq,
                               UnitMeter* meter);

  // Load Spreadsheet (seed 001's five steps). Internal ("corrupt spreadsheet") when
  // neither of the two newest segments has a completed snapshot.
  Result<LoadResult> Load(const std::string& sheet_id, UnitMeter* meter);

  // Update Loaded Spreadsheet (seed 001's five steps): entries after the client's last
  // read (segment, num). `*reload` is set when the client fell too far behind and must
  // Load from scratch.
  Result<std::vector<EntryRecord>> UpdateLoaded(const std::string& sheet_id,
                                                int64_t last_segment, int64_t last_num,
                                                bool* reload, UnitMeter* meter);

  // Marks a Snapshot entry complete: root key onto the entry, the segment's
  // last_snapshot moved forward (never backwards). Idempotent.
  Status CompleteSnapshot(const std::string& sheet_id, int64_t segment, int64_t num,
                          const std::string& root, UnitMeter* meter);

  // Every entry of one segment in num order, page by page (verify reads the log raw).
  Result<std::vector<EntryRecord>> SegmentEntries(const std::string& sheet_id,
                                                  int64_t segment, UnitMeter* meter);

  // What the sheet's items take in the Sheet, Segment and Entry tables (DynamoDB's
  // item sizes), and how many of its Snapshot entries are complete: the cost report's
  // storage figures. One read transaction over `segments` (ListSegments).
  struct StorageSize {
    int64_t item_bytes = 0;
    int64_t completed_snapshots = 0;
  };
  Result<StorageSize> MeasureStorage(const std::string& sheet_id,
                                     const std::vector<SegmentInfo>& segments,
                                     UnitMeter* meter);

  // Seed 000's Pending Snapshots (the table's owner; one request per call).
  PendingSnapshots* pending_snapshots() { return &pending_snapshots_; }
  Clock* clock() { return clock_; }
  // Add Entry attempts that lost their condition and were retried, since start.
  int64_t retries() const { return retries_.load(); }
  // Entries appended by AddEntry (system entries included), since start.
  int64_t appends() const { return appends_.load(); }
  // Of those, the ones written together with others in one statement
  // (Options::batch_appends), and the statements that wrote them.
  int64_t batched_appends() const { return batched_appends_.load(); }
  int64_t append_batches() const { return append_batches_.load(); }

 private:
  struct SheetConfig {
    int64_t snapshot_every;
    int64_t segment_entries;
  };
  struct Head {
    SegmentInfo segment;
    EntryRecord entry;
  };

  Result<SheetConfig> Config(const std::string& sheet_id, UnitMeter* meter);
  // What a fork copies, read in one transaction (event_log_fork.cc).
  struct ForkPlan {
    SheetInfo source;
    int64_t at = 0;
    int64_t first_seq = 0;  // the fork's: its base snapshot's seq, or the source's
    std::optional<std::string> base_root;
    std::vector<SegmentInfo> segments;  // the source's segments the entries lie in
    std::vector<EntryRecord> entries;   // [first_seq, at] (at + 1 after EndSegment)
  };
  Result<ForkPlan> PlanFork(const ForkRequest& request, UnitMeter* meter);
  // Both truncations: drops entries in [first_seq, new_first_seq) (computed by
  // `decide` from the sheet and its segments), moves first_seq and sets or clears
  // base_root.
  Result<TruncateResult> DropBefore(
      const std::string& sheet_id, BlobStore* archive_to, UnitMeter* meter,
      const std::function<Result<int64_t>(int64_t first_seq,
                                          const std::vector<SegmentInfo>& segments,
                                          int64_t next_seq)>& decide,
      const std::optional<std::string>& base_root);
  // Steps 1–2 of Add Entry on `conn`: the newest segment and its head entry, skipping
  // to the segment read again when the cached segment has ended.
  Result<Head> ReadHead(Connection& conn, const std::string& sheet_id, Consistency c,
                        UnitMeter* meter);
  // One attempt at Add Entry's steps 1-3, and how it ended.
  struct AppendAttempt {
    enum class Outcome {
      kWritten,         // `result` holds the entry
      kExpectMismatch,  // expect_seq was not the next seq (`next_seq`)
      kLostRace,        // step 3's condition failed: another writer took head + 1
      kNotDue,          // only_if_due, and no Snapshot entry is due
      kFailed,          // `status` says why
    };
    Outcome outcome = Outcome::kFailed;
    Status status;  // the error for every outcome but kWritten
    AppendResult result;
    int64_t next_seq = 0;        // kExpectMismatch
    int64_t since_snapshot = 0;  // kWritten: entries since the last Snapshot entry
    bool segment_full = false;   // kWritten: the segment reached segment_entries
  };
  struct AppendTxn;
  // AddEntryAsync's batched appends (Options::batch_appends): each append queued
  // (QueuedAppend) sends a write work of its own; the first of those works to run
  // takes every append queued by then (up to kAppendBatchLimit) into its group and
  // runs them as one batch, and the works whose appends were taken run empty. Whoever
  // takes an append completes it.
  struct QueuedAppend;
  struct AppendGroup;
  static constexpr size_t kAppendBatchLimit = 64;
  // Whether an append may join a batch: it writes the entry and nothing else.
  static bool Batchable(const AppendRequest& request);
  // The group's appends, taken from the queue on the first run: Add Entry's steps for
  // all of them in `conn`'s transaction. An append's own failure (expect_seq, no such
  // sheet, a fault) is its own; an error returned fails the rest.
  Status RunAppendGroup(Connection& conn, AppendGroup& group) EXCLUDES(append_queue_mu_);
  // After the group's transaction ended with `status`: each append's answer.
  void FinishAppendGroup(AppendGroup& group, Status status) EXCLUDES(append_queue_mu_);
  // Up to kAppendBatchLimit queued appends into `group` (once).
  void TakeQueuedAppends(AppendGroup& group) EXCLUDES(append_queue_mu_);
  // One attempt, queued behind this process's other attempts on the sheet when
  // Options::serialize_appends_per_sheet; AppendOnceNow is the attempt itself.
  AppendAttempt AppendOnce(const AppendRequest& request, UnitMeter* meter);
  AppendAttempt AppendOnceNow(const AppendRequest& request, UnitMeter* meter);
  static Status RefuseReserved(const AppendRequest& request);
  // What AddEntry returns for an attempt that did not lose the race; runs the policies
  // after a written entry.
  Result<AppendResult> Conclude(const AppendRequest& request, const SheetConfig& config,
                                AppendAttempt tried, int64_t* next_seq_out);
  void RunPolicies(const std::string& sheet_id, const SheetConfig& config,
                   int64_t since_snapshot, bool segment_full, AppendResult* result);

  Transactions* db_;
  PendingSnapshots pending_snapshots_;
  Clock* clock_;
  FaultInjector* faults_;
  Options options_;

  std::atomic<int64_t> retries_{0};
  // Options::serialize_appends_per_sheet: the stripe of a sheet is a hash of its id.
  static constexpr size_t kAppendStripes = 64;
  Mutex& AppendStripe(const std::string& sheet_id);
  Mutex append_stripes_[kAppendStripes];
  std::atomic<int64_t> appends_{0};
  std::atomic<int64_t> batched_appends_{0};
  std::atomic<int64_t> append_batches_{0};
  Mutex append_queue_mu_;
  std::deque<std::shared_ptr<QueuedAppend>> append_queue_ GUARDED_BY(append_queue_mu_);
  Mutex cache_mu_;
  std::map<std::string, SheetConfig> configs_ GUARDED_BY(cache_mu_);
};

// EventLog::HeldBlobs for a user of the Transactions alone (the purge of deleted
// sheets, sheet_deletion.h).
Result<std::set<std::string>> ReadHeldBlobs(Transactions* db, UnitMeter* meter);

// Entry/segment <-> table items.
EntryRecord EntryFromItem(const Item& item);
SegmentInfo SegmentFromItem(const Item& item);

// Calls `visit` for the sheet `only` (NotFound if there is none) or, with nullopt, for
// every sheet in id order, a page at a time. Stops at the first error and returns it.
Status ForEachSheet(EventLog* log, const std::optional<std::string>& only,
                    const std::function<Status(const SheetInfo&)>& visit);

}  // namespace sheetlog
