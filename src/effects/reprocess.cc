#include "src/effects/reprocess.h"

#include "src/log/tables.h"
#include "src/snapshot/worker.h"

namespace sheetlog {

namespace {

constexpr int kPage = 1000;

Status ReprocessSheet(const SheetInfo& sheet, int64_t since, EventLog* log,
                      BlobStore* blobs, Uploads* uploads, QueueService* queues,
                      const std::string& snapshot_queue, ReprocessReport* report) {
  ++report->sheets;
  for (int64_t next = sheet.first_seq;;) {
    ASSIGN_OR_RETURN(ReadRange page,
                     log->Read(sheet.id, next, std::nullopt, kPage, nullptr));
    if (page.entries.empty()) return Status::OK();
    next = page.entries.back().seq + 1;
    for (const EntryRecord& e : page.entries) {
      if (e.created < since) continue;
      ++report->entries;
      if (e.type == kSnapshotType && !e.snapshot_root) {
        SnapshotJob job{sheet.id, e.segment, e.num};
        RETURN_IF_ERROR(queues->Send(snapshot_queue, job.ToJson()).status());
        ++report->snapshots_enqueued;
        report->actions.push_back("sheet " + sheet.id + ": snapshot at seq " +
                                  std::to_string(e.seq) + " enqueued");
      }
      if (e.external) {
        Result<BlobTags> tags = blobs->GetTags(*e.external);
        if (tags.status().IsNotFound()) {
          report->actions.push_back("sheet " + sheet.id + ": entry " +
                                    std::to_string(e.seq) + " references missing blob " +
                                    *e.external + " (cannot repair)");
          continue;
        }
        RETURN_IF_ERROR(tags.status());
        if (tags->count(kAutoDeleteTag) == 0) continue;
        RETURN_IF_ERROR(uploads->Untag(*e.external));
        ++report->blobs_untagged;
        report->actions.push_back("sheet " + sheet.id + ": blob " + *e.external +
                                  " of seq " + std::to_string(e.seq) + " untagged");
      }
    }
  }
}

}  // namespace

Result<ReprocessReport> Reprocess(const ReprocessRequest& request, EventLog* log,
                                  BlobStore* blobs, Uploads* uploads,
                                  QueueService* queues,
                                  const std::string& snapshot_queue) {
  ReprocessReport report;
  RETURN_IF_ERROR(ForEachSheet(log, request.sheet, [&](const SheetInfo& sheet) {
    return ReprocessSheet(sheet, request.since_seconds, log, blobs, uploads, queues,
                          snapshot_queue, &report);
  }));
  return report;
}

}  // namespace sheetlog
