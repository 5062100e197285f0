// Routes of api.md "Operations" that check and repair the stored state itself —
// verify (every invariant of architecture.md) and rebuild-snapshots — backups
// (POST /v1/admin/backup), and what a sheet would cost on AWS
// (GET /v1/sheets/{id}/cost, with the per-sheet usage it reads: RecordSheetUsage).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "emulator/backup/backup.h"
#include "src/api/router.h"
#include "src/ops/cost.h"
#include "src/ops/verify.h"

namespace sheetlog {
class BlobStore;
class Clock;
class EventLog;
}  // namespace sheetlog

namespace sheetlog::api {

class MaintenanceRoutes : public RouteGroup {
 public:
  // App's operations the routes run: the pipeline's violations (dead letters, stalls;
  // App::PipelineViolations) and a backup (App::Backup).
  using PipelineViolations = std::function<Result<std::vector<Violation>>(
      const std::optional<std::string>& sheet, int64_t stall_after_micros)>;
  using BackupTo = std::function<Result<BackupReport>(const std::string& to)>;
  // A fresh explainer of pending findings for one verify run (App::PendingExplainer:
  // what the change feed and the snapshot queues still hold); null: none.
  using PendingExplainer = std::function<decltype(VerifyOptions::explain_pending)()>;

  MaintenanceRoutes(EventLog* log, BlobStore* blobs, Clock* clock, SheetUsage* usage,
                    Prices prices, PipelineViolations pipeline_violations,
                    BackupTo backup, PendingExplainer pending_explainer = {})
      : log_(log),
        blobs_(blobs),
        clock_(*clock),
        usage_(*usage),
        prices_(prices),
        pipeline_violations_(std::move(pipeline_violations)),
        backup_(std::move(backup)),
        pending_explainer_(std::move(pending_explainer)) {}

  void AddTo(Router& router) override;

  void VerifyAll(Call& call);   // GET /v1/admin/verify (?sheet=)
  void VerifyBody(Call& call);  // POST /v1/admin/verify {"sheet"?}
  void Rebuild(Call& call);     // POST /v1/admin/sheets/{id}/rebuild-snapshots
  void TakeBackup(Call& call);  // POST /v1/admin/backup {"to"}
  void SheetCost(Call& call);   // GET /v1/sheets/{id}/cost

 private:
  // Verify of one sheet or all, with the pipeline's violations.
  void RunVerify(Call& call, const std::optional<std::string>& sheet);

  EventLog* log_;
  BlobStore* blobs_;
  Clock& clock_;
  SheetUsage& usage_;
  const Prices prices_;
  PipelineViolations pipeline_violations_;
  BackupTo backup_;
  PendingExplainer pending_explainer_;
};

// Charges a request on a sheet's routes (or one that created a sheet) to that sheet's
// usage, for GET .../cost (the router's call observer).
void RecordSheetUsage(SheetUsage* usage, const std::string& pattern, const Call& call);

}  // namespace sheetlog::api
