#include "src/log/sheet_deletion.h"

#include <set>
#include <vector>

#include "emulator/env/faults.h"
#include "src/log/event_log.h"
#include "src/log/sheet_blobs.h"
#include "src/log/tables.h"
#include "src/log/uploads.h"

namespace sheetlog {

namespace {
constexpr int kScanPage = 1000;
}  // namespace

Status RecordSheetDeletion(Connection& conn, const std::string& sheet_id,
                           int64_t now_seconds) {
  // The first delete's tombstone stays: a repeated delete does not restart the grace.
  Status tombstone = SheetDeletionTable().PutIfAbsent(
      conn, Item{{"sheet_id", sheet_id}, {"deleted", now_seconds}}, nullptr);
  return tombstone.IsConditionFailed() ? Status::OK() : tombstone;
}

Status DeleteAllSheetDeletions(Connection& conn) {
  return SheetDeletionTable().DeleteAll(conn).status();
}

SheetPurger::SheetPurger(Transactions* db, BlobStore* blobs, Clock* clock,
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
  if (faults_ != nullptr) RETURN_IF_ERROR(faults_->Hit(FaultPoint::kSheetPurgeBefore));
  // Read the tombstone's age before listing: an object written after the listing is
  // then still within the grace period and found by a later purge.
  std::optional<int64_t> deleted;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(std::optional<Item> tombstone,
                     SheetDeletionTable().Get(conn, Key{{sheet_id}, {}},
                                              Consistency::kStrong, nullptr));
    if (tombstone) deleted = tombstone->at("deleted").AsInt();
    return Status::OK();
  }));
  RETURN_IF_ERROR(DeleteUploadRows(sheet_id));
  const int64_t now = clock_->NowSeconds();
  // Objects a fork of the sheet still uses (its shared snapshot, the entries it
  // copied) stay. Read after the sheet's rows were deleted: a fork needs its source's
  // row to commit, so every fork of this sheet is already in it.
  ASSIGN_OR_RETURN(std::set<std::string> held, ReadHeldBlobs(db_, nullptr));
  for (const std::string& prefix : SheetBlobPrefixes(sheet_id)) {
    // Each page is deleted before the next is listed; the next page starts after the
    // last key listed (a continuation names a key, not a position), so held keys are
    // passed over. The bound only stops a store that keeps refilling the prefix.
    BlobListOptions list;
    list.prefix = prefix;
    for (int page = 0; page < 100000; ++page) {
      ASSIGN_OR_RETURN(BlobListResult found, blobs_->List(list));
      if (found.keys.empty()) break;
      std::vector<std::string> keys;
      keys.reserve(found.keys.size());
      for (const BlobInfo& object : found.keys) {
        if (held.count(object.key) == 0) keys.push_back(object.key);
      }
      // One fsync per directory of the page, not one per object.
      if (!keys.empty()) {
        RETURN_IF_ERROR(blobs_->DeleteBatch(keys, [&]() -> Status {
          ++report->objects_deleted;
          if (faults_ != nullptr) return faults_->Hit(FaultPoint::kSheetPurgeAfterObject);
          return Status::OK();
        }));
      }
      if (!found.continuation) break;
      list.continuation = *found.continuation;
    }
  }
  if (deleted && now - *deleted >= grace_seconds_) {
    RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
      return SheetDeletionTable().Delete(conn, Key{{sheet_id}, {}}, {}, nullptr);
    }));
    ++report->tombstones_dropped;
  }
  return Status::OK();
}

Status SheetPurger::DeleteUploadRows(const std::string& sheet_id) {
  // Uploads are keyed by upload id alone (no index by sheet, as on DynamoDB without a
  // GSI): a scan outside the write lock finds the sheet's, then one write deletes
  // them. An upload of the sheet declared after the scan cannot complete (the sheet is
  // gone) and is found by a later purge, which runs until the tombstone is dropped.
  std::vector<std::string> upload_ids;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    std::optional<KeyValues> start;
    do {
      ASSIGN_OR_RETURN(
          QueryResult page,
          UploadTable().Scan(conn, start, kScanPage, Consistency::kEventual, nullptr));
      for (const Item& upload : page.items) {
        auto owner = upload.find("sheet_id");
        if (owner != upload.end() && owner->second.AsString() == sheet_id) {
          upload_ids.push_back(upload.at("upload_id").AsString());
        }
      }
      start = page.last_evaluated;
    } while (start);
    return Status::OK();
  }));
  if (upload_ids.empty()) return Status::OK();
  return db_->Write([&](Connection& conn) -> Status {
    for (const std::string& id : upload_ids) {
      RETURN_IF_ERROR(UploadTable().Delete(conn, Key{{id}, {}}, {}, nullptr));
    }
    return Status::OK();
  });
}

Result<PurgeReport> SheetPurger::PurgeAll(const std::atomic<bool>* stopping) {
  std::vector<std::string> sheets;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    std::optional<KeyValues> start;
    do {
      ASSIGN_OR_RETURN(QueryResult page,
                       SheetDeletionTable().Scan(conn, start, kScanPage,
                                                 Consistency::kEventual, nullptr));
      for (const Item& tombstone : page.items) {
        sheets.push_back(tombstone.at("sheet_id").AsString());
      }
      start = page.last_evaluated;
    } while (start);
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
