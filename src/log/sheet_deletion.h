// Deleting a sheet leaves nothing behind, crash or not.
//
// 1. One transaction (EventLog::DeleteSheet) removes the sheet's rows — entries,
//    segments, pending snapshots, and its `upload` rows (RecordSheetDeletion) — and
//    writes a tombstone (schema/008). From the commit on the sheet is gone for clients.
// 2. SheetPurger::Purge then deletes, in the background (the DELETE is answered once the
//    tombstone commits), every object under the sheet's prefixes in all four server
//    areas (sheet_blobs.h), a page at a time with one fsync per directory — not only the
//    objects rows referenced: also chunks of a snapshot build that never completed,
//    payloads of uploads never completed, and anything a crash orphaned earlier.
// 3. The purge runs again at every start (a kill -9 midway resumes by itself) and every
//    period, so objects a snapshot build still running at the delete writes afterwards
//    go too. The tombstone is dropped only when it is older than `grace_seconds` (the
//    longest a build may run) and a purge found nothing left.
//
// Objects of live sheets that nothing references (an orphan untagged by a crash) are not
// touched here; the lifecycle sweep covers tagged orphans only.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

// Inside the deleting transaction: writes the sheet's tombstone (deleted =
// `now_seconds`; a tombstone already there is kept as it is). The sheet's `upload` rows
// and objects go in SheetPurger::Purge.
Status RecordSheetDeletion(Connection& conn, const std::string& sheet_id,
                           int64_t now_seconds);
// Inside the caller's transaction: drops every tombstone, the admin reset's part of
// this table (App::Reset, which deletes every object itself: nothing is left to purge).
Status DeleteAllSheetDeletions(Connection& conn);

struct PurgeReport {
  int64_t sheets = 0;  // tombstones looked at
  int64_t objects_deleted = 0;
  int64_t tombstones_dropped = 0;
};

// Thread-safe (its state is in the tables): the periodic purge and POST
// /v1/admin/sweep may run at once.
class SheetPurger {
 public:
  // Default grace: 3600 s of the clock, far beyond the snapshot worker's time budget.
  SheetPurger(Transactions* db, BlobStore* blobs, Clock* clock, FaultInjector* faults,
              int64_t grace_seconds = 3600);

  // Deletes the upload rows of `sheet_id` and every object of it under the server's
  // areas; drops its tombstone if that is older than the grace period and nothing was
  // left. Idempotent. Fault points: "sheet.purge.before", "sheet.purge.after_object"
  // (after each deletion).
  Status Purge(const std::string& sheet_id, PurgeReport* report = nullptr);
  // Purge of every tombstoned sheet; stops early (OK) once `stopping` is set.
  Result<PurgeReport> PurgeAll(const std::atomic<bool>* stopping = nullptr);

 private:
  Status DeleteUploadRows(const std::string& sheet_id);

  Transactions* db_;
  BlobStore* blobs_;
  Clock* clock_;
  FaultInjector* faults_;
  int64_t grace_seconds_;
};

}  // namespace sheetlog
