// Routes of api.md section "Spreadsheet" that read the sheet: cells, the used range,
// export (CSV and XLSX), snapshots.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "src/api/entry_json.h"
#include "src/api/router.h"

namespace sheetlog {
class BlobStore;
class EventLog;
class HeadViewCache;
class SheetView;
}  // namespace sheetlog

namespace sheetlog::api {

class SpreadsheetRoutes : public RouteGroup {
 public:
  SpreadsheetRoutes(EventLog* log, BlobStore* blobs, HeadViewCache* head_views,
                    const EntryPresenter* entries)
      : log_(*log), blobs_(blobs), head_views_(*head_views), entries_(*entries) {}

  void AddTo(Router& router) override;

  void ReadCells(Call& call);        // GET /v1/sheets/{id}/cells
  void UsedRange(Call& call);        // GET /v1/sheets/{id}/used-range
  void Export(Call& call);           // GET /v1/sheets/{id}/export
  void RequestSnapshot(Call& call);  // POST /v1/sheets/{id}/snapshots
  void ListSnapshots(Call& call);    // GET /v1/sheets/{id}/snapshots

 private:
  // The sheet at seq `at` (nullopt: the head, from the cache of loaded sheets); Gone
  // is api.md's 410 with "first_seq".
  std::shared_ptr<const SheetView> OpenView(const std::string& id,
                                            std::optional<int64_t> at, UnitMeter* meter);
  // `read` of the view OpenView gives into *view, run once more on the view opened
  // afresh (HeadViewCache::Reopen) if a view from the cache fails it with NotFound: a
  // chunk of its snapshot deleted by a truncation since it was cached. Errors of the
  // reopening throw as OpenView's; `read`'s are returned.
  template <typename T>
  Result<T> ReadView(const std::string& id, std::optional<int64_t> at, UnitMeter* meter,
                     std::shared_ptr<const SheetView>* view,
                     const std::function<Result<T>(const SheetView&)>& read);

  EventLog& log_;
  BlobStore* blobs_;
  HeadViewCache& head_views_;
  const EntryPresenter& entries_;
};

}  // namespace sheetlog::api
