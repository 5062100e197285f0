#include "src/app/health.h"

#include <charconv>
#include <string_view>
#include <system_error>
#include <utility>

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/table/table_store_probe.h"

namespace sheetlog {

namespace {

// The blob store's probe reads this key's metadata (a HEAD): nothing writes it, so the
// answer is NotFound, which says the store answered as well as a found object would.
constexpr const char* kBlobProbeKey = "health/probe";

Status HitHealthFault(FaultInjector* faults, FaultPoint point) {
  return faults != nullptr ? faults->Hit(point) : Status::OK();
}

// "stream/<mapping>/<shard>" (FunctionRuntime's claim of a change-feed shard): the
// mapping and shard; false for any other name.
bool ParseShardClaim(const std::string& name, std::string* mapping, int64_t* shard) {
  constexpr std::string_view kPrefix = "stream/";
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) return false;
  const size_t slash = name.rfind('/');
  if (slash <= kPrefix.size() || slash + 1 >= name.size()) return false;
  const char* end = name.data() + name.size();
  const auto [parsed_to, error] = std::from_chars(name.data() + slash + 1, end, *shard);
  if (error != std::errc() || parsed_to != end) return false;
  *mapping = name.substr(kPrefix.size(), slash - kPrefix.size());
  return true;
}

}  // namespace

bool HealthReport::ok() const {
  for (const DependencyHealth& dependency : dependencies) {
    if (!dependency.status.ok()) return false;
  }
  return cluster.status.ok();
}

HealthChecker::HealthChecker(Dependencies dependencies, int64_t timeout_micros)
    : dependencies_(std::move(dependencies)),
      timeout_micros_(timeout_micros),
      table_store_probe_([this]() -> Result<bool> {
        RETURN_IF_ERROR(
            HitHealthFault(dependencies_.faults, FaultPoint::kHealthTableStore));
        RETURN_IF_ERROR(ProbeTableStore(*dependencies_.table_store));
        return true;
      }),
      blob_store_probe_([this]() -> Result<bool> {
        RETURN_IF_ERROR(
            HitHealthFault(dependencies_.faults, FaultPoint::kHealthBlobStore));
        Result<BlobInfo> head = dependencies_.blob_store->Head(kBlobProbeKey);
        if (!head.ok() && !head.status().IsNotFound()) return head.status();
        return true;
      }),
      cluster_read_([this]() -> Result<ClusterMembership::View> {
        // The same table store as the probe above: unavailable with it.
        RETURN_IF_ERROR(
            HitHealthFault(dependencies_.faults, FaultPoint::kHealthTableStore));
        return dependencies_.membership->ReadView();
      }) {}

HealthReport HealthChecker::Check() {
  // All three at once: the report waits for the slowest, not for their sum.
  table_store_probe_.Start();
  blob_store_probe_.Start();
  cluster_read_.Start();
  const int64_t deadline = SystemClock::Default()->NowMicros() + timeout_micros_;
  HealthReport report;
  report.timeout_micros = timeout_micros_;
  report.dependencies.push_back(Report("table_store", dependencies_.table_store_kind,
                                       dependencies_.table_store_location,
                                       table_store_probe_.Await(deadline)));
  report.dependencies.push_back(
      Report("blob_store", std::string(dependencies_.blob_store->kind()),
             dependencies_.blob_store_location, blob_store_probe_.Await(deadline)));
  report.cluster = ReportCluster(cluster_read_.Await(deadline));
  return report;
}

DependencyHealth HealthChecker::Report(const std::string& name, const std::string& kind,
                                       const std::string& location,
                                       const BoundedCall<bool>::Outcome& outcome) const {
  DependencyHealth health;
  health.name = name;
  health.kind = kind;
  health.location = location;
  health.latency_micros = outcome.elapsed_micros;
  if (!outcome.answer) {
    health.status =
        Unavailable("no answer within " + std::to_string(timeout_micros_ / 1000) +
                    " ms (the probe is still waiting for the store)");
  } else {
    health.status = outcome.answer->status();
  }
  return health;
}

ClusterHealth HealthChecker::ReportCluster(
    const BoundedCall<ClusterMembership::View>::Outcome& outcome) const {
  ClusterHealth health;
  ClusterMembership& membership = *dependencies_.membership;
  // What this node knows without the database, so that it is there when the read is
  // not; a view that was read replaces it below.
  health.node_id = membership.owner();
  health.node = dependencies_.node_name;
  health.lease_clock = membership.lease_clock();
  health.clock_skew_micros = membership.clock_skew_micros();
  if (!outcome.answer) {
    health.status =
        Unavailable("no answer within " + std::to_string(timeout_micros_ / 1000) +
                    " ms from the table store (leases and claims)");
    return health;
  }
  if (!outcome.answer->ok()) {
    health.status = outcome.answer->status();
    return health;
  }
  const ClusterMembership::View& view = outcome.answer->value();
  health.node_id = view.owner;
  health.lease_clock = view.lease_clock;
  health.clock_skew_micros = view.clock_skew_micros;
  health.now_micros = view.now_micros;
  health.nodes = view.nodes;
  for (const ClusterMembership::NameClaim& claim : view.claims) {
    ShardClaim shard;
    constexpr std::string_view kJobPrefix = "job/";
    if (ParseShardClaim(claim.name, &shard.mapping, &shard.shard)) {
      shard.name = claim.name;
      shard.holder = claim.owner;
      shard.holder_live = claim.owner_live;
      health.shard_claims.push_back(std::move(shard));
    } else if (claim.name.compare(0, kJobPrefix.size(), kJobPrefix) == 0) {
      health.job_claims.push_back({claim.name, claim.name.substr(kJobPrefix.size()),
                                   claim.owner, claim.owner_live});
    } else {
      health.other_claims.push_back(claim);
    }
  }
  return health;
}

}  // namespace sheetlog
