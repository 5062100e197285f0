// ClusterMembership: which nodes are alive, and who owns a shard or a cluster job.
// A node (a process running handlers) joins with StartLease: a random owner id and a
// lease row, renewed on the clock, that other nodes count as live until it expires
// (by their own clocks). Claims are names ("stream/<mapping>/<shard>", "job/<name>")
// held exactly while the holder's lease lives. ExecutionHistory consults it to judge
// another owner's `started` rows. The rules (lapse, restarts, SQLite's one process per
// file) are in docs/cluster.md, "Node leases and claims". Tables: `execution_owner`
// (migration 010) and `owner_claim` (011), both dialects, in emulator/schema/.
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;

class ClusterMembership {
 public:
  struct LeaseOptions {
    // How long a lease lasts after each renewal: how long a dead node's work waits
    // before another takes it over. Must exceed renew_every_micros plus the skew
    // between the nodes' clocks.
    int64_t ttl_micros = 30LL * 1000000;
    int64_t renew_every_micros = 10LL * 1000000;
    // Renew from a thread of this object's, on the clock. false: only RenewLease
    // renews (tests stand in for a node that stops renewing).
    bool renew_in_background = true;
    // A name of this node stable across its restarts (the host and data directory):
    // a new owner with the same name releases its predecessors' leases at start.
    // Two live processes must never share one. Empty: none.
    std::string node;
  };

  // `db` and `clock` must outlive this object.
  ClusterMembership(Transactions* db, Clock* clock);
  ~ClusterMembership();  // StopLease
  ClusterMembership(const ClusterMembership&) = delete;
  ClusterMembership& operator=(const ClusterMembership&) = delete;

  // Joins: takes a random owner id, writes its lease and renews it until StopLease;
  // releases predecessors' and (SQLite: every other, PostgreSQL: lapsed) leases.
  // Errors: InvalidArgument for a ttl not above the renewal period, storage errors
  // (no lease then), FailedPrecondition if a lease is held already.
  Status StartLease(const LeaseOptions& options);
  Status StartLease() { return StartLease(LeaseOptions()); }
  // Extends the lease to now + ttl (re-creating it if another node pruned it after it
  // lapsed) and prunes other owners' lapsed leases. FailedPrecondition without one.
  Status RenewLease();
  // Stops renewing, releases the lease and every claim of it (call when no invocation
  // of this process runs). Idempotent.
  void StopLease();
  // This node's owner id; "" without a lease.
  std::string owner() const;

  // Whether a lease read as expiring at `expires_at_micros` (nullopt: no lease row)
  // is live at `now_micros`: the one rule every judgment of liveness uses.
  bool IsLeaseLive(std::optional<int64_t> expires_at_micros, int64_t now_micros) const;
  // Whether `owner` holds a live lease now (by this node's clock).
  Result<bool> IsLive(const std::string& owner);
  // How many owners hold a live lease now (this one included).
  Result<int> LiveOwners();

  // Takes `name` if it is free, this owner's already, or held by an owner whose lease
  // is gone; true if this owner holds it now. One conditional upsert: two nodes
  // claiming at once get one winner. FailedPrecondition without a lease.
  Result<bool> ClaimName(const std::string& name);
  // Gives `name` up if this owner holds it (so another node may take it).
  Status ReleaseName(const std::string& name);

 private:
  // The renewal thread: renews at `next` and every renew_every_micros after until
  // StopLease.
  void RenewLoop(int64_t next);
  // RenewLease as of clock time `now`.
  Status RenewLeaseAt(int64_t now);

  Transactions* db_;
  Clock* clock_;

  mutable Mutex mu_;
  CondVar cv_;  // wakes the renewal thread to stop
  std::string owner_ GUARDED_BY(mu_);
  LeaseOptions lease_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace sheetlog
