// Routes of api.md section "Operations" that need no storage and no token: health,
// readiness, version and metrics.
#pragma once

#include <functional>

#include "src/api/router.h"

namespace sheetlog {
class MetricsRegistry;
}

namespace sheetlog::api {

class OpsRoutes : public RouteGroup {
 public:
  // `ready` says whether the server is serving (App::ready: false while starting up
  // or shutting down); `schema_version` is the open data directory's.
  OpsRoutes(MetricsRegistry* metrics, std::function<bool()> ready, int schema_version)
      : metrics_(*metrics), ready_(std::move(ready)), schema_version_(schema_version) {}

  void AddTo(Router& router) override;

  void Health(Call& call);   // GET /healthz
  void Version(Call& call);  // GET /version
  void Ready(Call& call);    // GET /readyz
  void Metrics(Call& call);  // GET /metrics

 private:
  MetricsRegistry& metrics_;
  std::function<bool()> ready_;
  const int schema_version_;
};

}  // namespace sheetlog::api
