// Routes of api.md section "Operations" that need no storage: health, readiness,
// version and metrics.
#include "src/api/routes.h"
#include "src/app/app.h"
#include "src/version.h"

namespace sheetlog::api {

void RegisterOpsRoutes(Router& router, App& app) {
  RouteOptions open{/*auth=*/false, /*storage=*/false};
  router.Get(
      "/healthz",
      [](Call& call) {
        call.Reply(200, json{{"status", "ok"}, {"version", Version()}});
      },
      open);
  // The release (`sheetlog version` prints the same) and the schema version of the
  // open data directory.
  router.Get(
      "/version",
      [&app](Call& call) {
        call.Reply(
            200, json{{"version", Version()}, {"schema_version", app.schema_version()}});
      },
      open);
  router.Get(
      "/readyz",
      [&app](Call& call) {
        if (!app.ready())
          throw ApiError(503, "Unavailable", "starting up or shutting down");
        call.Reply(200,
                   json{{"status", "ready"}, {"schema_version", app.schema_version()}});
      },
      open);
  // Prometheus text format (0.0.4). Open like the health checks, so a scraper needs no
  // token; it names no sheet.
  router.Get(
      "/metrics",
      [&app](Call& call) {
        call.res.status = 200;
        call.res.set_content(app.metrics()->Render(), "text/plain; version=0.0.4");
      },
      open);
}

}  // namespace sheetlog::api
