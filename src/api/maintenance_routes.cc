// Routes of api.md "Operations" that check and repair the stored state itself:
// verify (every invariant of architecture.md) and rebuild-snapshots.
#include "emulator/env/uuid.h"
#include "src/api/routes.h"
#include "src/app/app.h"
#include "src/ops/rebuild.h"
#include "src/ops/verify.h"

namespace sheetlog::api {

namespace {

json OptionalJson(const std::optional<int64_t>& value) {
  return value ? json(*value) : json(nullptr);
}

json VerifyReportJson(const VerifyReport& report) {
  json violations = json::array();
  for (const Violation& v : report.violations) {
    violations.push_back(json{{"sheet", v.sheet},
                              {"invariant", v.invariant},
                              {"detail", v.detail},
                              {"segment", OptionalJson(v.segment)},
                              {"seq", OptionalJson(v.seq)},
                              {"blob", v.blob ? json(*v.blob) : json(nullptr)}});
  }
  return json{{"ok", report.violations.empty()},
              {"sheets", report.sheets},
              {"segments", report.segments},
              {"entries", report.entries},
              {"snapshots_compared", report.snapshots_compared},
              {"blobs_checked", report.blobs_checked},
              {"violations", violations}};
}

json RebuildReportJson(const RebuildReport& report) {
  json snapshots = json::array();
  for (const RebuiltSnapshot& s : report.snapshots) {
    snapshots.push_back(json{{"seq", s.seq},
                             {"segment", s.segment},
                             {"num", s.num},
                             {"root", s.root},
                             {"outcome", s.outcome},
                             {"detail", s.detail},
                             {"cells", s.cells}});
  }
  json out{
      {"sheet", report.sheet}, {"entries", report.entries}, {"snapshots", snapshots}};
  for (const char* outcome : {"same", "repaired", "base", "failed"}) {
    out[outcome] = report.Count(outcome);
  }
  return out;
}

// A sheet named in a request: NotFound unless it is a UUID (then the log decides).
std::string SheetParam(const std::string& id) {
  if (!IsUuid(id))
    throw ApiError::NotFound("no sheet '" + id + "' (sheet ids are UUIDs)");
  return id;
}

}  // namespace

void RegisterMaintenanceRoutes(Router& router, App& app) {
  RouteOptions admin{/*auth=*/true, /*storage=*/false};

  // 200 with the report whether or not it found violations: "ok" says which.
  auto verify = [&](Call& call, std::optional<std::string> sheet) {
    VerifyOptions options;
    if (sheet) options.sheet = SheetParam(*sheet);
    call.Reply(200, VerifyReportJson(Check(Verify(options, app.log(), app.blobs()))));
  };
  router.Get(
      "/v1/admin/verify", [=](Call& call) { verify(call, call.Query("sheet")); }, admin);
  router.Post(
      "/v1/admin/verify",
      [=](Call& call) {
        json body = call.Body();
        FieldReader fields(body, "request body");
        std::optional<std::string> sheet = fields.String("sheet");
        fields.Finish();
        verify(call, sheet);
      },
      admin);

  router.Post(R"(/v1/admin/sheets/([^/]+)/rebuild-snapshots)",
              [&](Call& call) {
                json body = call.Body();
                FieldReader(body, "request body").Finish();
                const std::string sheet = SheetParam(call.Path(1));
                call.Reply(200, RebuildReportJson(Check(RebuildSnapshots(
                                    sheet, app.log(), app.blobs(), {}))));
              },
              admin);
}

}  // namespace sheetlog::api
