// Entry bodies: validation at append time, and bodies too large to keep inline.
#include "src/api/routes.h"
#include "src/app/app.h"
#include "src/log/pending_snapshots.h"
#include "src/sheet/sheet_edit.h"

namespace sheetlog::api {

void PrepareEntryBody(App& app, const std::string& type, int64_t version,
                      const json& body, AppendRequest* request, UnitMeter* meter) {
  (void)app;
  (void)meter;
  // Built-in types must parse now: a bad body is a 400 here, never a failure later in
  // the snapshot pipeline.
  Check(ValidateAppend(type, version, body));
  if (type == "Import") {
    throw ApiError::Validation(
        "Import: the file travels as an upload: POST /v1/sheets/{id}/uploads with this "
        "body, PUT the file to the returned url, then POST .../complete");
  }
  if (!body.is_null()) request->body = body.dump();
}

int64_t PendingSnapshotCount(App& app, const std::string& sheet_id, UnitMeter* meter) {
  return static_cast<int64_t>(
      Check(app.log()->pending_snapshots()->List(sheet_id, meter)).size());
}

}  // namespace sheetlog::api
