// Test controls of api.md "Operations": the manual clock, fault points and reset. Each
// is off unless the server was started with its flag, and then refused with 403;
// GET /v1/admin/controls says which are on.
#include "emulator/env/faults.h"
#include "src/api/routes.h"
#include "src/app/app.h"

namespace sheetlog::api {

namespace {

json ClockJson(Clock* clock) {
  return json{{"now_micros", clock->NowMicros()},
              {"now", clock->NowSeconds()},
              {"manual", clock->IsManual()}};
}

FaultKind ParseFaultKind(const std::string& text) {
  if (text == "error") return FaultKind::kError;
  if (text == "crash") return FaultKind::kCrash;
  if (text == "delay") return FaultKind::kDelay;
  if (text == "duplicate") return FaultKind::kDuplicate;
  if (text == "disk-full") return FaultKind::kDiskFull;
  throw ApiError::Validation(
      "fault kind must be error, crash, delay, duplicate or disk-full, got '" + text +
      "'");
}

const char* FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kError:
      return "error";
    case FaultKind::kCrash:
      return "crash";
    case FaultKind::kDelay:
      return "delay";
    case FaultKind::kDuplicate:
      return "duplicate";
    case FaultKind::kDiskFull:
      return "disk-full";
  }
  return "error";
}

}  // namespace

void RegisterAdminControlRoutes(Router& router, App& app) {
  RouteOptions control{/*auth=*/true, /*storage=*/false};

  router.Get(
      "/v1/admin/clock", [&](Call& call) { call.Reply(200, ClockJson(app.clock())); },
      control);

  // Beyond api.md: which of these controls the server was started with (the console
  // shows only those), and the fault points a build knows by name.
  router.Get(
      "/v1/admin/controls",
      [&](Call& call) {
        call.Reply(200, json{{"clock", ClockJson(app.clock())},
                             {"faults", app.options().enable_faults},
                             {"reset", app.options().allow_reset}});
      },
      control);

  router.Post(
      "/v1/admin/clock",
      [&](Call& call) {
        if (app.manual_clock() == nullptr) {
          throw ApiError::Forbidden(
              "the clock moves only when started with --clock manual");
        }
        json body = call.Body();
        FieldReader fields(body, "request body");
        std::optional<int64_t> advance_s = fields.Int("advance_s");
        std::optional<int64_t> advance_ms = fields.Int("advance_ms");
        std::optional<int64_t> set_s = fields.Int("set_s");
        fields.Finish();
        if (!advance_s && !advance_ms && !set_s) {
          throw ApiError::Validation("give advance_s, advance_ms or set_s");
        }
        if ((advance_s && *advance_s < 0) || (advance_ms && *advance_ms < 0)) {
          throw ApiError::Validation("time never goes backwards: advance must be >= 0");
        }
        if (set_s) {
          if (*set_s * 1000000 < app.clock()->NowMicros()) {
            throw ApiError::Validation("time never goes backwards: set_s is in the past");
          }
          app.manual_clock()->Set(*set_s * 1000000);
        }
        if (advance_s) app.manual_clock()->AdvanceSeconds(*advance_s);
        if (advance_ms) app.manual_clock()->Advance(*advance_ms * 1000);
        call.Reply(200, ClockJson(app.clock()));
      },
      control);

  auto require_faults = [&app] {
    if (!app.options().enable_faults) {
      throw ApiError::Forbidden("fault points can be armed only with --enable-faults");
    }
  };

  router.Get(
      "/v1/admin/faults",
      [&, require_faults](Call& call) {
        require_faults();
        json armed = json::array();
        for (const FaultPointState& s : app.faults()->Armed()) {
          armed.push_back(json{{"point", s.name},
                               {"kind", FaultKindName(s.spec.kind)},
                               {"remaining", s.spec.remaining},
                               {"probability", s.spec.probability},
                               {"delay_ms", s.spec.delay_micros / 1000},
                               {"fired", s.fired}});
        }
        call.Reply(200, json{{"armed", armed}});
      },
      control);

  router.Post(
      "/v1/admin/faults",
      [&, require_faults](Call& call) {
        require_faults();
        json body = call.Body();
        FieldReader fields(body, "request body");
        std::optional<std::string> point = fields.String("point");
        std::string kind = fields.String("kind").value_or("error");
        int64_t count = fields.Int("count", 1);
        std::optional<json> probability = fields.Any("probability");
        int64_t delay_ms = fields.Int("delay_ms", 0);
        fields.Finish();
        if (!point || point->empty())
          throw ApiError::Validation("field 'point' is required");
        FaultSpec spec;
        spec.kind = ParseFaultKind(kind);
        if (count == 0 || count < -1) {
          throw ApiError::Validation("count must be >= 1, or -1 for every hit");
        }
        spec.remaining = count;
        if (probability) {
          if (!probability->is_number() || probability->get<double>() < 0 ||
              probability->get<double>() > 1) {
            throw ApiError::Validation("probability must be a number in [0, 1]");
          }
          spec.probability = probability->get<double>();
        }
        if (delay_ms < 0) throw ApiError::Validation("delay_ms must be >= 0");
        spec.delay_micros = delay_ms * 1000;
        if (Status armed = app.faults()->Arm(*point, spec); !armed.ok()) {
          throw ApiError::Validation(armed.message());
        }
        call.Reply(200, json{{"armed", *point}});
      },
      control);

  router.Delete(
      "/v1/admin/faults",
      [&, require_faults](Call& call) {
        require_faults();
        if (auto point = call.Query("point")) {
          if (Status disarmed = app.faults()->Disarm(*point); !disarmed.ok()) {
            throw ApiError::Validation(disarmed.message());
          }
        } else {
          app.faults()->DisarmAll();
        }
        call.NoContent();
      },
      control);

  router.Post(
      "/v1/admin/reset",
      [&](Call& call) {
        if (!app.options().allow_reset) {
          throw ApiError::Forbidden(
              "reset is allowed only when started with --allow-reset");
        }
        json body = call.Body();
        FieldReader(body, "request body").Finish();
        App::ResetReport report = Check(app.Reset());
        call.Reply(200, json{{"sheets", report.sheets}, {"blobs", report.blobs}});
      },
      control);
}

}  // namespace sheetlog::api
