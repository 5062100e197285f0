// The health report of GET /v1/health: each dependency of this node with the
// state and latency of a cheap probe, and the node's view of the cluster (its id, the
// nodes alive with their leases, who holds each change-feed shard and cluster job).
//
// /readyz is not this: it stays 200 while the node serves whatever the stores say,
// since a load balancer would take every node out at once when a store they all share
// fails. This report says what is wrong, for operators and the console.
//
// Cheap and bounded: each probe is one trivial read (the table store: `SELECT 1`; the
// blob store: a HEAD of a key nobody writes; the cluster: the lease and claim tables,
// a row per node and per claimed name), all three run at once, each on a thread of its
// own (BoundedCall), and the report waits for them at most `timeout_micros` of real
// time: a store that does not answer is reported unavailable ("no answer within ..."),
// never waited for.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emulator/runtime/cluster_membership.h"
#include "emulator/status.h"
#include "emulator/table/transactions.h"
#include "src/app/bounded_call.h"

namespace sheetlog {

class BlobStore;
class FaultInjector;

struct DependencyHealth {
  std::string name;      // "table_store" or "blob_store"
  std::string kind;      // "sqlite" or "postgres"; "directory" or "s3"
  std::string location;  // where it is, without secrets (a file, a conninfo, a bucket)
  // OK, or why it is unavailable: the store's error, or that it gave no answer in time.
  Status status;
  // Real time the probe took; without an answer, how long it was waited for.
  int64_t latency_micros = 0;
};

// A change-feed shard's claim ("stream/<mapping>/<shard>", FunctionRuntime's).
struct ShardClaim {
  std::string name;
  std::string mapping;
  int64_t shard = 0;
  std::string holder;        // the owner id holding it
  bool holder_live = false;  // else it is free for the next node to take
};

// A cluster job's claim ("job/<job>": the sweep, retention, the self-healing; App's).
struct JobClaim {
  std::string name;
  std::string job;
  std::string holder;
  bool holder_live = false;
};

struct ClusterHealth {
  // The read of the leases and claims: OK, or why it failed (then only what this node
  // knows by itself is set: its id and name, the lease clock and the skew).
  Status status;
  std::string node_id;  // this node's owner id; "" without a lease (no workers)
  std::string node;     // its stable name ("<host>:<data directory>")
  ClusterMembership::LeaseClock lease_clock = ClusterMembership::LeaseClock::kDatabase;
  std::optional<int64_t> clock_skew_micros;  // ClusterMembership::clock_skew_micros
  int64_t now_micros = 0;                    // the lease clock at the read
  std::vector<ClusterMembership::NodeLease> nodes;  // alive, by owner id
  std::vector<ShardClaim> shard_claims;             // by name
  std::vector<JobClaim> job_claims;                 // by name
  // Claimed names of neither form (none today; listed rather than dropped).
  std::vector<ClusterMembership::NameClaim> other_claims;
};

struct HealthReport {
  std::vector<DependencyHealth> dependencies;
  ClusterHealth cluster;
  int64_t timeout_micros = 0;  // how long each probe was waited for at most
  // Every dependency answered and the cluster could be read.
  bool ok() const;
};

// Runs the probes. Thread-safe; concurrent Checks share the runs in progress.
class HealthChecker {
 public:
  struct Dependencies {
    Transactions* table_store = nullptr;
    std::string table_store_kind;  // "sqlite" or "postgres"
    std::string table_store_location;
    BlobStore* blob_store = nullptr;
    std::string blob_store_location;
    ClusterMembership* membership = nullptr;
    std::string node_name;  // this node's stable name (App::NodeName)
    // Fault points health.table_store and health.blob_store (fault_points.h); may be
    // null.
    FaultInjector* faults = nullptr;
  };
  static constexpr int64_t kDefaultTimeoutMicros = 2LL * 1000000;

  // Everything in `dependencies` must outlive this object. The destructor waits for
  // probes still running (BoundedCall).
  explicit HealthChecker(Dependencies dependencies,
                         int64_t timeout_micros = kDefaultTimeoutMicros);

  // Probes every dependency and reads the cluster at once; returns within about
  // timeout_micros of real time however the stores behave.
  HealthReport Check();

 private:
  DependencyHealth Report(const std::string& name, const std::string& kind,
                          const std::string& location,
                          const BoundedCall<bool>::Outcome& outcome) const;
  ClusterHealth ReportCluster(
      const BoundedCall<ClusterMembership::View>::Outcome& outcome) const;

  const Dependencies dependencies_;
  const int64_t timeout_micros_;
  // Each a trivial read of its store; true once the store answered.
  BoundedCall<bool> table_store_probe_;
  BoundedCall<bool> blob_store_probe_;
  BoundedCall<ClusterMembership::View> cluster_read_;
};

}  // namespace sheetlog
