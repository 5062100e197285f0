// Internal to src/api: route registration by api.md section, and the pieces the
// sections share (entry JSON, external bodies through the blob store).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/env/time_text.h"  // ParseTimePoint
#include "src/api/router.h"
#include "src/log/event_log.h"
#include "src/log/uploads.h"

namespace sheetlog {
class App;
}

namespace sheetlog::api {

void RegisterOpsRoutes(Router& router, App& app);
void RegisterSheetRoutes(Router& router, App& app);
void RegisterAdminControlRoutes(Router& router, App& app);
void RegisterBlobRoutes(Router& router, App& app);
void RegisterSpreadsheetRoutes(Router& router, App& app);
void RegisterPipelineRoutes(Router& router, App& app);
void RegisterMaintenanceRoutes(Router& router, App& app);
// Queue messages (peek, send, purge), the invocation log, the table browser.
void RegisterInspectRoutes(Router& router, App& app);
// GET /v1/sheets/{id}/events (Server-Sent Events). The returned object runs the
// streams: keep it until the HTTP server has stopped.
std::shared_ptr<void> RegisterLiveUpdateRoutes(Router& router, App& app);
// The web console's files under /console/ (no token), and "/" redirecting there.
void RegisterConsoleRoutes(Router& router);
// Charges a request on a sheet's routes (or one that created a sheet) to that sheet's
// usage, for GET .../cost.
void RecordSheetUsage(App& app, const std::string& pattern, const Call& call);

// {"seq", "segment", "num", "created", "external"} of an appended entry.
json AppendResultJson(const AppendResult& result);

// `id` as a sheet id: NotFound unless it is a UUID (then the log decides).
std::string CheckedSheetId(const std::string& id);
// The sheet id of the route's first capture, checked as above.
std::string SheetId(Call& call);

// Query parameter `limit`: an integer in 1..max, `fallback` when absent
// (ValidationError otherwise).
int QueryLimit(Call& call, int fallback, int max);

// A seq query parameter: a non-negative integer below 2^53 (ValidationError /
// RangeError otherwise).
int64_t ParseSeq(const std::string& name, const std::string& text);

// An entry as api.md shows it.
json EntryJson(App& app, const EntryRecord& entry);
// {"key", "size", "url"} for an external body: url is a presigned GET.
json ExternalJson(App& app, const std::string& key);
// The external body itself, parsed as JSON when it is JSON (else a string).
json InlineExternalBody(App& app, const EntryRecord& entry, UnitMeter* meter);
// Presigned GET of a snapshot's root manifest.
std::string ManifestUrl(App& app, const std::string& root);
int64_t PendingSnapshotCount(App& app, const std::string& sheet_id, UnitMeter* meter);
// Deletes blobs a deleted sheet referenced; failures are logged, never reported (the
// lifecycle sweep is the backstop).
void DeleteBlobsBestEffort(App& app, const std::vector<std::string>& keys);

// Validates an entry body before anything is written (built-in types must parse) and
// fills request->body with its canonical encoding.
void PrepareEntryBody(App& app, const std::string& type, int64_t version,
                      const json& body, AppendRequest* request, UnitMeter* meter);

}  // namespace sheetlog::api
