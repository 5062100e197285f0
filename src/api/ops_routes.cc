#include "src/api/ops_routes.h"

#include "emulator/metrics/metrics.h"
#include "src/version.h"

namespace sheetlog::api {

void OpsRoutes::AddTo(Router& router) {
  AddRoutes<OpsRoutes>(router, this,
                       {
                           {"GET", "/healthz", &OpsRoutes::Health, kOpenRoute},
                           {"GET", "/version", &OpsRoutes::Version, kOpenRoute},
                           {"GET", "/readyz", &OpsRoutes::Ready, kOpenRoute},
                           {"GET", "/metrics", &OpsRoutes::Metrics, kOpenRoute},
                       });
}

void OpsRoutes::Health(Call& call) {
  call.Reply(200, json{{"status", "ok"}, {"version", sheetlog::Version()}});
}

// The release (`sheetlog version` prints the same) and the schema version of the open
// data directory.
void OpsRoutes::Version(Call& call) {
  call.Reply(200,
             json{{"version", sheetlog::Version()}, {"schema_version", schema_version_}});
}

void OpsRoutes::Ready(Call& call) {
  if (!ready_()) throw ApiError(503, "Unavailable", "starting up or shutting down");
  call.Reply(200, json{{"status", "ready"}, {"schema_version", schema_version_}});
}

// Prometheus text format (0.0.4). Open like the health checks, so a scraper needs no
// token; it names no sheet.
void OpsRoutes::Metrics(Call& call) {
  call.res.status = 200;
  call.res.set_content(metrics_.Render(), "text/plain; version=0.0.4");
}

}  // namespace sheetlog::api
