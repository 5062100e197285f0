// Routes of api.md sections "Sheets" and "Entries": create, list, read and delete
// sheets; append, read and annotate entries; load; truncate; new segments.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "src/api/entry_json.h"
#include "src/api/router.h"

namespace sheetlog {
class BlobStore;
class EventLog;
class HeadViewCache;
class Uploads;
}  // namespace sheetlog

namespace sheetlog::api {

class SheetRoutes : public RouteGroup {
 public:
  // `purge_deleted_sheets` starts the purge of deleted sheets' objects without waiting
  // for it (App::PurgeDeletedSheets).
  SheetRoutes(EventLog* log, Uploads* uploads, BlobStore* blobs,
              HeadViewCache* head_views, const EntryPresenter* entries,
              std::function<void()> purge_deleted_sheets)
      : log_(*log),
        uploads_(*uploads),
        blobs_(blobs),
        head_views_(*head_views),
        entries_(*entries),
        purge_deleted_sheets_(std::move(purge_deleted_sheets)) {}

  void AddTo(Router& router) override;

  void CreateSheet(Call& call);    // POST /v1/sheets
  void ListSheets(Call& call);     // GET /v1/sheets
  void GetSheet(Call& call);       // GET /v1/sheets/{id}
  void DeleteSheet(Call& call);    // DELETE /v1/sheets/{id}
  void AppendEntry(Call& call);    // POST /v1/sheets/{id}/entries (replies deferred)
  void ReadEntries(Call& call);    // GET /v1/sheets/{id}/entries
  void GetEntry(Call& call);       // GET /v1/sheets/{id}/entries/{seq}
  void SetMetadata(Call& call);    // PATCH /v1/sheets/{id}/entries/{seq}
  void Load(Call& call);           // GET /v1/sheets/{id}/load
  void Truncate(Call& call);       // POST /v1/sheets/{id}/truncate
  void CreateSegment(Call& call);  // POST /v1/sheets/{id}/segments
  void Fork(Call& call);           // POST /v1/sheets/{id}/fork

 private:
  // The sheet's first_seq, for the "first_seq" of a 410 Gone.
  json FirstSeqOf(const std::string& id, UnitMeter* meter);
  // Deletes blobs the truncated part of a sheet referenced (a snapshot root with its
  // chunks); failures are logged, never reported (the lifecycle sweep is the
  // backstop).
  void DeleteBlobsBestEffort(const std::vector<std::string>& keys);

  EventLog& log_;
  Uploads& uploads_;
  BlobStore* blobs_;
  HeadViewCache& head_views_;
  const EntryPresenter& entries_;
  std::function<void()> purge_deleted_sheets_;
};

}  // namespace sheetlog::api
