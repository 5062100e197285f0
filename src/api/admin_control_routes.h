// Test controls of api.md "Operations": the manual clock, fault points and reset. Each
// is off unless the server was started with its flag, and then refused with 403;
// GET /v1/admin/controls says which are on.
#pragma once

#include <functional>

#include "src/api/router.h"
#include "src/app/app.h"  // App::ResetReport

namespace sheetlog {
class Clock;
class FaultInjector;
class ManualClock;
}  // namespace sheetlog

namespace sheetlog::api {

// Which test controls the server was started with (--enable-faults, --allow-reset).
struct TestControls {
  bool faults = false;
  bool reset = false;
};

class AdminControlRoutes : public RouteGroup {
 public:
  using ResetAll = std::function<Result<App::ResetReport>()>;

  // `manual_clock` is null unless the server runs on the manual clock; `reset` drops
  // every sheet and blob (App::Reset).
  AdminControlRoutes(Clock* clock, ManualClock* manual_clock, FaultInjector* faults,
                     TestControls controls, ResetAll reset)
      : clock_(clock),
        manual_clock_(manual_clock),
        faults_(*faults),
        controls_(controls),
        reset_(std::move(reset)) {}

  void AddTo(Router& router) override;

  void GetClock(Call& call);      // GET /v1/admin/clock
  void GetControls(Call& call);   // GET /v1/admin/controls
  void SetClock(Call& call);      // POST /v1/admin/clock
  void ListFaults(Call& call);    // GET /v1/admin/faults
  void ArmFault(Call& call);      // POST /v1/admin/faults
  void DisarmFaults(Call& call);  // DELETE /v1/admin/faults (?point=)
  void Reset(Call& call);         // POST /v1/admin/reset

 private:
  // Forbidden unless started with --enable-faults.
  void RequireFaults() const;

  Clock* clock_;
  ManualClock* manual_clock_;
  FaultInjector& faults_;
  const TestControls controls_;
  ResetAll reset_;
};

}  // namespace sheetlog::api
