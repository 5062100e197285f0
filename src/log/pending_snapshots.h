// Seed 000's Pending Snapshots table (schema/sqlite/001_event_log.sql
// `pending_snapshot`): one item per snapshot in progress, keyed by the sheet (Log Id) and
// the ordered pair (segment, entry) of its Snapshot entry, so a sheet's items list in the
// order their snapshots must be made. This file is the table's only owner: everything
// else reads and writes it through the typed record and the operations below.
//
// The snapshot worker (src/snapshot/worker.h) drives the orchestration: a conditional
// create starts a snapshot, every later write is conditional on Increment (which it
// moves forward by one) so a lost race is seen as ConditionFailed, and the completed
// snapshot's item is deleted. The event log removes the items of a deleted sheet and
// of Snapshot entries a truncation drops (src/log/event_log.h).
//
// Two ways in. `PendingSnapshots` is the table as a service: every call is one request
// (its own transaction), which is all the snapshot worker, the API and the metrics need,
// and what DynamoDB offers. The free functions below take a Connection already inside a
// transaction (Transactions::Write for writes and strongly consistent reads,
// Transactions::Read otherwise) for the event log, whose sheet deletion and truncation
// remove items in the same transaction as the entries (a TransactWrite on DynamoDB).
// Both charge `meter` (may be null) as emulator/table does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emulator/table/table.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

// Identifies a pending snapshot: the sheet and its Snapshot entry (segment, entry num).
struct PendingSnapshotKey {
  std::string sheet_id;  // Log Id (PK)
  int64_t segment = 0;   // Num (SK), first of the ordered pair
  int64_t entry = 0;     // Num (SK), second of the ordered pair
};

// One item of the table (seed 000's attributes; schema/README.md).
struct PendingSnapshot {
  std::string sheet_id;
  int64_t segment = 0;
  int64_t entry = 0;
  int64_t created = 0;    // unix seconds
  int64_t modified = 0;   // unix seconds of the last update (the stale-claim timeout)
  bool active = false;    // an invocation is working on it
  int64_t increment = 0;  // +1 on every conditional update
  std::optional<std::string> state;  // JSON checkpoint text; absent before the first
  // The lease owner id (ClusterMembership, emulator/runtime) of the invocation that
  // last claimed or created it; nullopt or "": unknown (written before migration 015,
  // or by a process without a lease).
  std::optional<std::string> owner;

  PendingSnapshotKey key() const { return {sheet_id, segment, entry}; }
};

// What a conditional update changes besides Increment; an unset field is left as it is.
struct PendingSnapshotChanges {
  std::optional<bool> active;
  std::optional<int64_t> modified;
  std::optional<std::string> state;
  std::optional<std::string> owner;
};

// The item at `key`, nullopt if there is none. Strongly consistent.
Result<std::optional<PendingSnapshot>> GetPendingSnapshot(Connection& conn,
                                                          const PendingSnapshotKey& key,
                                                          UnitMeter* meter);

// The sheet's first item in (segment, entry) order — the snapshot that must be made
// before any later one — or nullopt. One eventually consistent query of limit 1.
Result<std::optional<PendingSnapshot>> FirstPendingSnapshot(Connection& conn,
                                                            const std::string& sheet_id,
                                                            UnitMeter* meter);

// Every item of the sheet in (segment, entry) order (all pages; eventually consistent).
Result<std::vector<PendingSnapshot>> ListPendingSnapshots(Connection& conn,
                                                          const std::string& sheet_id,
                                                          UnitMeter* meter);

// The first `limit` items of all sheets in key order (0 = no limit; a page also ends at
// 1 MB of items). Strongly consistent.
Result<std::vector<PendingSnapshot>> ScanPendingSnapshots(Connection& conn, int limit,
                                                          UnitMeter* meter);

// Seed 000's "formally start": writes `snapshot` only if its key has no item yet;
// ConditionFailed (nothing written) if one exists. `state` and `owner` are written only
// if set.
Status CreatePendingSnapshot(Connection& conn, const PendingSnapshot& snapshot,
                             UnitMeter* meter);

// Seed 000's conditional write: applies `changes` and sets Increment to
// `expected_increment` + 1, only if the item exists and its Increment is still
// `expected_increment`; ConditionFailed (nothing written) otherwise — another invocation
// claimed or moved it on, or it is gone.
Status UpdatePendingSnapshot(Connection& conn, const PendingSnapshotKey& key,
                             int64_t expected_increment,
                             const PendingSnapshotChanges& changes, UnitMeter* meter);

// Deletes the item at `key`. With `expected_increment`, only if the item exists and its
// Increment is that value (ConditionFailed otherwise, nothing deleted); without, deleting
// a missing item is OK.
Status DeletePendingSnapshot(Connection& conn, const PendingSnapshotKey& key,
                             std::optional<int64_t> expected_increment, UnitMeter* meter);

// Deletes every item of the sheet (a deleted sheet).
Status DeleteAllPendingSnapshots(Connection& conn, const std::string& sheet_id,
                                 UnitMeter* meter);

// Deletes every item of every sheet (the admin reset: EventLog::DeleteAll). Uncharged.
Status DeleteEveryPendingSnapshot(Connection& conn);

// Deletes every item of the sheet whose (segment, entry) is before (`segment`, `entry`):
// the Snapshot entries a truncation to that position drops. Items at or after it stay.
Status DeletePendingSnapshotsBefore(Connection& conn, const std::string& sheet_id,
                                    int64_t segment, int64_t entry, UnitMeter* meter);

// What the metrics report of the whole table.
struct PendingSnapshotSummary {
  int64_t count = 0;
  int64_t stale = 0;             // items whose `modified` is before the given time
  int64_t oldest_created_s = 0;  // smallest `created` (0 when there are none)
};

// The table as a service: one request per call, each its own transaction on `db`.
// Thread-safe (Transactions is).
// The table's descriptor, for read-only browsing (src/app/table_browser.h); every
// write goes through PendingSnapshots and the functions above.
const Table& PendingSnapshotTable();

class PendingSnapshots {
 public:
  explicit PendingSnapshots(Transactions* db) : db_(db) {}

  // GetPendingSnapshot (strongly consistent).
  Result<std::optional<PendingSnapshot>> Get(const PendingSnapshotKey& key,
                                             UnitMeter* meter);
  // FirstPendingSnapshot (eventually consistent).
  Result<std::optional<PendingSnapshot>> First(const std::string& sheet_id,
                                               UnitMeter* meter);
  // ListPendingSnapshots.
  Result<std::vector<PendingSnapshot>> List(const std::string& sheet_id,
                                            UnitMeter* meter);
  // ScanPendingSnapshots.
  Result<std::vector<PendingSnapshot>> Scan(int limit, UnitMeter* meter);
  // Every item, page by page: count, items not modified since `stale_before_s`, oldest.
  Result<PendingSnapshotSummary> Summarize(int64_t stale_before_s, UnitMeter* meter);
  // CreatePendingSnapshot.
  Status Create(const PendingSnapshot& snapshot, UnitMeter* meter);
  // UpdatePendingSnapshot.
  Status Update(const PendingSnapshotKey& key, int64_t expected_increment,
                const PendingSnapshotChanges& changes, UnitMeter* meter);
  // DeletePendingSnapshot.
  Status Delete(const PendingSnapshotKey& key, std::optional<int64_t> expected_increment,
                UnitMeter* meter);

 private:
  Transactions* const db_;
};

}  // namespace sheetlog
