#include "src/api/maintenance_routes.h"

#include "emulator/env/clock.h"
#include "emulator/env/uuid.h"
#include "emulator/json_text.h"
#include "src/api/request_params.h"
#include "src/ops/rebuild.h"

namespace sheetlog::api {

namespace {

json OptionalJson(const std::optional<int64_t>& value) {
  return value ? json(*value) : json(nullptr);
}

json ViolationsJson(const std::vector<Violation>& list) {
  json out = json::array();
  for (const Violation& v : list) {
    out.push_back(json{{"sheet", v.sheet},
                       {"invariant", v.invariant},
                       {"detail", v.detail},
                       {"segment", OptionalJson(v.segment)},
                       {"seq", OptionalJson(v.seq)},
                       {"blob", v.blob ? json(*v.blob) : json(nullptr)}});
  }
  return out;
}

// "ok" is whether nothing is violated: findings the pipeline explains by work still
// queued or in flight are listed in "pending" (the same fields), and leave "ok" true.
json VerifyReportJson(const VerifyReport& report) {
  return json{{"ok", report.violations.empty()},
              {"sheets", report.sheets},
              {"segments", report.segments},
              {"entries", report.entries},
              {"snapshots_compared", report.snapshots_compared},
              {"blobs_checked", report.blobs_checked},
              {"violations", ViolationsJson(report.violations)},
              {"pending", ViolationsJson(report.pending)}};
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

json PricesJson(const Prices& p) {
  return json{{"dynamodb_wru_per_million", p.dynamodb_wru},
              {"dynamodb_rru_per_million", p.dynamodb_rru},
              {"dynamodb_gb_month", p.dynamodb_gb_month},
              {"s3_put_per_million", p.s3_put},
              {"s3_get_per_million", p.s3_get},
              {"s3_gb_month", p.s3_gb_month},
              {"sqs_per_million", p.sqs}};
}

json CostJson(const std::string& sheet, const SheetCost& c, const Prices& prices) {
  return json{{"sheet", sheet},
              {"requests", c.usage.requests},
              {"dynamodb",
               {{"read_units", c.usage.read_units},
                {"write_units", c.usage.write_units},
                {"storage_bytes", c.dynamodb_storage_bytes}}},
              {"s3",
               {{"objects", c.s3_objects},
                {"storage_bytes", c.s3_storage_bytes},
                {"put_requests", c.s3_put_requests}}},
              {"sqs", {{"requests", c.sqs_requests}}},
              {"prices", PricesJson(prices)},
              {"usd",
               {{"dynamodb_writes", c.dynamodb_writes},
                {"dynamodb_reads", c.dynamodb_reads},
                {"s3_requests", c.s3_requests},
                {"sqs", c.sqs},
                {"requests_total", c.requests_total},
                {"dynamodb_storage_per_month", c.dynamodb_storage_month},
                {"s3_storage_per_month", c.s3_storage_month},
                {"storage_per_month", c.storage_month}}}};
}

}  // namespace

void RecordSheetUsage(SheetUsage* usage, const std::string& pattern, const Call& call) {
  static const std::string kSheetRoutes = "/v1/sheets/([^/]+)";
  std::string sheet;
  if (pattern.rfind(kSheetRoutes, 0) == 0 && call.req.matches.size() > 1) {
    sheet = call.req.matches[1];
  } else if (pattern == "/v1/sheets" && call.req.method == "POST" &&
             call.res.status == 201) {
    json created = ParseJsonOrDiscarded(call.res.body);
    if (created.is_object()) sheet = created.value("id", "");
  }
  if (sheet.empty() || !IsUuid(sheet) || pattern == kSheetRoutes + "/cost") return;
  usage->Record(sheet, call.meter.read_units, call.meter.write_units);
}

void MaintenanceRoutes::AddTo(Router& router) {
  AddRoutes<MaintenanceRoutes>(
      router, this,
      {
          {"GET", "/v1/admin/verify", &MaintenanceRoutes::VerifyAll, kUnmeteredRoute},
          {"POST", "/v1/admin/verify", &MaintenanceRoutes::VerifyBody, kUnmeteredRoute},
          {"POST", R"(/v1/admin/sheets/([^/]+)/rebuild-snapshots)",
           &MaintenanceRoutes::Rebuild, kUnmeteredRoute},
          {"POST", "/v1/admin/backup", &MaintenanceRoutes::TakeBackup, kUnmeteredRoute},
          // Not itself charged (and its own reads are not counted): asking costs
          // nothing.
          {"GET", R"(/v1/sheets/([^/]+)/cost)", &MaintenanceRoutes::SheetCost,
           kUnmeteredRoute},
      });
}

// 200 with the report whether or not it found violations: "ok" says which; "pending"
// lists what the pipeline has not done yet (not a failure). A snapshot or a
// change-feed shard that has not progressed for this long (clock time) is reported;
// `stall_after_s` overrides it (0: off).
void MaintenanceRoutes::RunVerify(Call& call, const std::optional<std::string>& sheet) {
  constexpr int64_t kDefaultStallAfterSeconds = 600;
  VerifyOptions options;
  if (sheet) options.sheet = CheckedSheetId(*sheet);
  const int64_t stall_after_s =
      QueryInt(call, "stall_after_s", 0, INT64_MAX / 1000000, kDefaultStallAfterSeconds);
  options.now_micros = clock_.NowMicros();
  options.stall_after_micros = stall_after_s * 1000000;
  if (pending_explainer_) options.explain_pending = pending_explainer_();
  VerifyReport report = Check(Verify(options, log_, blobs_));
  for (Violation& v :
       Check(pipeline_violations_(options.sheet, options.stall_after_micros))) {
    report.violations.push_back(std::move(v));
  }
  call.Reply(200, VerifyReportJson(report));
}

void MaintenanceRoutes::VerifyAll(Call& call) { RunVerify(call, call.Query("sheet")); }

void MaintenanceRoutes::VerifyBody(Call& call) {
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<std::string> sheet = fields.String("sheet");
  fields.Finish();
  RunVerify(call, sheet);
}

void MaintenanceRoutes::Rebuild(Call& call) {
  json body = call.Body();
  FieldReader(body, "request body").Finish();
  const std::string sheet = CheckedSheetId(call.Path(1));
  call.Reply(200, RebuildReportJson(Check(RebuildSnapshots(sheet, log_, blobs_, {}))));
}

// A backup of the database and every object (emulator/backup/backup.h) into a
// directory of the server's machine, taken while it serves; the reply comes when the
// backup is complete. `sheetlog backup --to DIR` calls it.
void MaintenanceRoutes::TakeBackup(Call& call) {
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<std::string> to = fields.String("to");
  fields.Finish();
  if (!to || to->empty() || (*to)[0] != '/') {
    throw ApiError::Validation(
        "\"to\" must be the absolute path of a directory on the server's machine");
  }
  call.Reply(200, Check(backup_(*to)).ToJson());
}

void MaintenanceRoutes::SheetCost(Call& call) {
  const std::string sheet = SheetId(call);
  call.Reply(
      200,
      CostJson(sheet,
               Check(ComputeSheetCost(sheet, log_, blobs_, usage_.Of(sheet), prices_)),
               prices_));
}

}  // namespace sheetlog::api
