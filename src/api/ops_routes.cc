#include "src/api/ops_routes.h"

#include "emulator/metrics/metrics.h"
#include "src/version.h"

namespace sheetlog::api {

void OpsRoutes::AddTo(Router& router) {
  AddRoutes<OpsRoutes>(
      router, this,
      {
          {"GET", "/healthz", &OpsRoutes::Health, kOpenRoute},
          {"GET", "/version", &OpsRoutes::Version, kOpenRoute},
          {"GET", "/readyz", &OpsRoutes::Ready, kOpenRoute},
          {"GET", "/metrics", &OpsRoutes::Metrics, kOpenRoute},
          {"GET", "/v1/health", &OpsRoutes::DetailedHealth, kUnmeteredRoute},
      });
}

namespace {

const char* HealthStateName(const Status& status) {
  return status.ok() ? "ok" : "unavailable";
}

// {"state": "ok"} or {"state": "unavailable", "error": "..."}.
json HealthState(const Status& status) {
  json out{{"state", HealthStateName(status)}};
  if (!status.ok()) out["error"] = status.ToString();
  return out;
}

json SecondsOrNull(const std::optional<int64_t>& micros) {
  return micros ? json(static_cast<double>(*micros) / 1e6) : json(nullptr);
}

json ClusterHealthJson(const ClusterHealth& cluster) {
  json out = HealthState(cluster.status);
  out["node_id"] = cluster.node_id.empty() ? json(nullptr) : json(cluster.node_id);
  out["node"] = cluster.node;
  out["lease_clock"] = cluster.lease_clock == ClusterMembership::LeaseClock::kDatabase
                           ? "database"
                           : "node";
  out["clock_skew_seconds"] = SecondsOrNull(cluster.clock_skew_micros);
  json nodes = json::array();
  json shards = json::array();
  json jobs = json::array();
  if (cluster.status.ok()) {
    out["lease_clock_now_micros"] = cluster.now_micros;
    for (const ClusterMembership::NodeLease& lease : cluster.nodes) {
      nodes.push_back(
          {{"id", lease.owner},
           {"node", lease.node},
           {"self", lease.owner == cluster.node_id},
           {"lease_expires_at_micros", lease.expires_at_micros},
           {"lease_expires_in_seconds",
            static_cast<double>(lease.expires_at_micros - cluster.now_micros) / 1e6}});
    }
    for (const ShardClaim& claim : cluster.shard_claims) {
      shards.push_back({{"claim", claim.name},
                        {"mapping", claim.mapping},
                        {"shard", claim.shard},
                        {"holder", claim.holder},
                        {"holder_live", claim.holder_live}});
    }
    for (const JobClaim& claim : cluster.job_claims) {
      jobs.push_back({{"claim", claim.name},
                      {"job", claim.job},
                      {"holder", claim.holder},
                      {"holder_live", claim.holder_live}});
    }
    if (!cluster.other_claims.empty()) {
      json others = json::array();
      for (const ClusterMembership::NameClaim& claim : cluster.other_claims) {
        others.push_back({{"claim", claim.name},
                          {"holder", claim.owner},
                          {"holder_live", claim.owner_live}});
      }
      out["other_claims"] = std::move(others);
    }
  }
  out["nodes"] = std::move(nodes);
  out["shard_claims"] = std::move(shards);
  out["job_claims"] = std::move(jobs);
  return out;
}

}  // namespace

// Always 200: the report is the answer, whatever it says (/readyz is the load
// balancer's check and is not affected). "status" is "ok" when every dependency
// answered its probe and the cluster could be read, "degraded" otherwise.
void OpsRoutes::DetailedHealth(Call& call) {
  const HealthReport report = health_();
  json dependencies = json::array();
  for (const DependencyHealth& dependency : report.dependencies) {
    json item{{"name", dependency.name},
              {"kind", dependency.kind},
              {"location", dependency.location}};
    item.update(HealthState(dependency.status));
    item["latency_micros"] = dependency.latency_micros;
    dependencies.push_back(std::move(item));
  }
  call.Reply(200, json{{"status", report.ok() ? "ok" : "degraded"},
                       {"version", sheetlog::Version()},
                       {"probe_timeout_ms", report.timeout_micros / 1000},
                       {"dependencies", std::move(dependencies)},
                       {"cluster", ClusterHealthJson(report.cluster)}});
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
