#include "src/api/admin_control_routes.h"

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"

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

void AdminControlRoutes::AddTo(Router& router) {
  AddRoutes<AdminControlRoutes>(
      router, this,
      {
          {"GET", "/v1/admin/clock", &AdminControlRoutes::GetClock, kUnmeteredRoute},
          {"GET", "/v1/admin/controls", &AdminControlRoutes::GetControls,
           kUnmeteredRoute},
          {"POST", "/v1/admin/clock", &AdminControlRoutes::SetClock, kUnmeteredRoute},
          {"GET", "/v1/admin/faults", &AdminControlRoutes::ListFaults, kUnmeteredRoute},
          {"POST", "/v1/admin/faults", &AdminControlRoutes::ArmFault, kUnmeteredRoute},
          {"DELETE", "/v1/admin/faults", &AdminControlRoutes::DisarmFaults,
           kUnmeteredRoute},
          {"POST", "/v1/admin/reset", &AdminControlRoutes::Reset, kUnmeteredRoute},
      });
}

void AdminControlRoutes::RequireFaults() const {
  if (!controls_.faults) {
    throw ApiError::Forbidden("fault points can be armed only with --enable-faults");
  }
}

void AdminControlRoutes::GetClock(Call& call) { call.Reply(200, ClockJson(clock_)); }

// Beyond api.md: which of these controls the server was started with (the console
// shows only those), and the fault points a build knows by name.
void AdminControlRoutes::GetControls(Call& call) {
  json points = json::array();
  for (const FaultPointInfo& info : kFaultPoints) {
    points.push_back(json{{"name", info.name}, {"meaning", info.meaning}});
  }
  call.Reply(200, json{{"clock", ClockJson(clock_)},
                       {"faults", controls_.faults},
                       {"points", std::move(points)},
                       {"reset", controls_.reset}});
}

void AdminControlRoutes::SetClock(Call& call) {
  if (manual_clock_ == nullptr) {
    throw ApiError::Forbidden("the clock moves only when started with --clock manual");
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
    if (*set_s * 1000000 < clock_->NowMicros()) {
      throw ApiError::Validation("time never goes backwards: set_s is in the past");
    }
    manual_clock_->Set(*set_s * 1000000);
  }
  if (advance_s) manual_clock_->AdvanceSeconds(*advance_s);
  if (advance_ms) manual_clock_->Advance(*advance_ms * 1000);
  call.Reply(200, ClockJson(clock_));
}

void AdminControlRoutes::ListFaults(Call& call) {
  RequireFaults();
  json armed = json::array();
  for (const FaultPointState& s : faults_.Armed()) {
    armed.push_back(json{{"point", s.name},
                         {"kind", FaultKindName(s.spec.kind)},
                         {"remaining", s.spec.remaining},
                         {"probability", s.spec.probability},
                         {"delay_ms", s.spec.delay_micros / 1000},
                         {"fired", s.fired}});
  }
  call.Reply(200, json{{"armed", armed}});
}

void AdminControlRoutes::ArmFault(Call& call) {
  RequireFaults();
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<std::string> point = fields.String("point");
  std::string kind = fields.String("kind").value_or("error");
  int64_t count = fields.Int("count", 1);
  std::optional<json> probability = fields.Any("probability");
  int64_t delay_ms = fields.Int("delay_ms", 0);
  fields.Finish();
  if (!point || point->empty()) throw ApiError::Validation("field 'point' is required");
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
  if (Status armed = faults_.Arm(*point, spec); !armed.ok()) {
    throw ApiError::Validation(armed.message());
  }
  call.Reply(200, json{{"armed", *point}});
}

void AdminControlRoutes::DisarmFaults(Call& call) {
  RequireFaults();
  if (auto point = call.Query("point")) {
    if (Status disarmed = faults_.Disarm(*point); !disarmed.ok()) {
      throw ApiError::Validation(disarmed.message());
    }
  } else {
    faults_.DisarmAll();
  }
  call.NoContent();
}

void AdminControlRoutes::Reset(Call& call) {
  if (!controls_.reset) {
    throw ApiError::Forbidden("reset is allowed only when started with --allow-reset");
  }
  json body = call.Body();
  FieldReader(body, "request body").Finish();
  App::ResetReport report = Check(reset_());
  call.Reply(200, json{{"sheets", report.sheets}, {"blobs", report.blobs}});
}

}  // namespace sheetlog::api
