#include "src/log/sheet_deletion.h"

#include <vector>

#include "src/log/sheet_blobs.h"

namespace sheetlog {

Status RecordSheetDeletion(Connection& conn, const std::string& sheet_id,
                           int64_t now_seconds) {
  ASSIGN_OR_RETURN(Statement uploads,
                   conn.Prepare("DELETE FROM upload WHERE sheet_id = ?"));
  RETURN_IF_ERROR(uploads.Bind(1, sheet_id).Run());
  ASSIGN_OR_RETURN(
      Statement tombstone,
      conn.Prepare("INSERT OR IGNORE INTO sheet_deletion (sheet_id, deleted) "
                   "VALUES (?, ?)"));
  return tombstone.Bind(1, sheet_id).Bind(2, now_seconds).Run();
}

SheetPurger::SheetPurger(Database* db, BlobStore* blobs, Clock* clock,
                         FaultInjector* faults, int64_t grace_seconds)
    : db_(db),
      blobs_(blobs),
      clock_(clock),
      faults_(faults),
      grace_seconds_(grace_seconds) {}

Status SheetPurger::Purge(const std::string& sheet_id, PurgeReport* report) {
  PurgeReport local;
  if (report == nullptr) report = &local;
  ++report->sheets;
  if (faults_ != nullptr) RETURN_IF_ERROR(faults_->Hit("sheet.purge.before"));
  // Read the tombstone's age before listing: an object written after the listing is
  // then still within the grace period and found by a later purge.
  std::optional<int64_t> deleted;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(
        Statement s,
        conn.Prepare("SELECT deleted FROM sheet_deletion WHERE sheet_id = ?"));
    s.Bind(1, sheet_id);
    ASSIGN_OR_RETURN(bool row, s.Step());
    if (row) deleted = s.ColumnInt(0);
    return Status::OK();
  }));
  const int64_t now = clock_->NowSeconds();
  for (const std::string& prefix : SheetBlobPrefixes(sheet_id)) {
    // Each page is deleted before the next is listed, so the first page is always the
    // rest; the bound only stops a store that keeps refilling the prefix.
    for (int page = 0; page < 100000; ++page) {
      BlobListOptions list;
      list.prefix = prefix;
      ASSIGN_OR_RETURN(BlobListResult found, blobs_->List(list));
      if (found.keys.empty()) break;
      for (const BlobInfo& object : found.keys) {
        RETURN_IF_ERROR(blobs_->Delete(object.key));
        ++report->objects_deleted;
        if (faults_ != nullptr) RETURN_IF_ERROR(faults_->Hit("sheet.purge.after_object"));
      }
    }
  }
  if (deleted && now - *deleted >= grace_seconds_) {
    RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
      ASSIGN_OR_RETURN(Statement s,
                       conn.Prepare("DELETE FROM sheet_deletion WHERE sheet_id = ?"));
      return s.Bind(1, sheet_id).Run();
    }));
    ++report->tombstones_dropped;
  }
  return Status::OK();
}

Result<PurgeReport> SheetPurger::PurgeAll(const std::atomic<bool>* stopping) {
  std::vector<std::string> sheets;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(Statement s, conn.Prepare("SELECT sheet_id FROM sheet_deletion"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, s.Step());
      if (!row) break;
      sheets.push_back(s.ColumnText(0));
    }
    return Status::OK();
  }));
  PurgeReport report;
  for (const std::string& sheet : sheets) {
    if (stopping != nullptr && stopping->load()) break;
    RETURN_IF_ERROR(Purge(sheet, &report));
  }
  return report;
}

}  // namespace sheetlog
