// Routes of api.md section "Operations" that need no storage and no token (health,
// readiness, version and metrics), and the health report that probes the stores
// (GET /v1/health, behind the token: it names where the stores are).
#pragma once

#include <functional>

#include "src/api/router.h"
#include "src/app/health.h"

namespace sheetlog {
class MetricsRegistry;
}

namespace sheetlog::api {

class OpsRoutes : public RouteGroup {
 public:
  // `ready` says whether the server is serving (App::ready: false while starting up
  // or shutting down); `schema_version` is the open data directory's; `health` probes
  // the stores and reads the cluster (App::Health: bounded in real time).
  OpsRoutes(MetricsRegistry* metrics, std::function<bool()> ready, int schema_version,
            std::function<HealthReport()> health)
      : metrics_(*metrics),
        ready_(std::move(ready)),
        schema_version_(schema_version),
        health_(std::move(health)) {}

  void AddTo(Router& router) override;

  void Health(Call& call);          // GET /healthz
  void Version(Call& call);         // GET /version
  void Ready(Call& call);           // GET /readyz
  void Metrics(Call& call);         // GET /metrics
  void DetailedHealth(Call& call);  // GET /v1/health

 private:
  MetricsRegistry& metrics_;
  std::function<bool()> ready_;
  const int schema_version_;
  std::function<HealthReport()> health_;
};

}  // namespace sheetlog::api
