// ClusterMembership: which nodes are alive, and who owns a shard or a cluster job.
// A node (a process running handlers) joins with StartLease: a random owner id and a
// lease row, renewed on the clock, that other nodes count as live until it expires.
// Claims are names ("stream/<mapping>/<shard>", "job/<name>") held exactly while the
// holder's lease lives. ExecutionHistory consults it to judge another owner's
// `started` rows. The rules (lapse, restarts, SQLite's one process per file, the lease
// clock) are in docs/cluster.md, "Node leases and claims". Tables: `execution_owner`
// (migration 010) and `owner_claim` (011), both dialects, in emulator/schema/.
//
// The lease clock. Leases are written and judged on ONE clock that every node shares:
// the database's. On PostgreSQL each transaction that writes or compares a lease first
// reads the server's clock_timestamp() and uses that as "now", never the node's clock:
// a node whose clock runs 45 s ahead would otherwise see every other node's lease as
// lapsed and take their shards and jobs. On SQLite a file belongs to one
// process, so the node's clock is the database's clock. A ManualClock (tests, `serve
// --clock manual`) stands for the whole test's time, the database's included: time
// moves only when the test moves it, and a lease must lapse when it does (the server's
// real clock would not move), so with a manual clock leases stay on the node's clock
// (LeaseClock::kNode). The nodes of such a test share that one clock, so there is no
// skew to guard against. `sheetlog_now_micros()` (the node's clock sent at BEGIN, for
// the timestamps rows carry) is left as it is: it is not used for leases.
//
// Skew. Each read of the database's clock is bracketed by two reads of the node's, so
// the node knows how far its clock is from the database's (clock_skew_micros); it logs
// a warning when that exceeds kClockSkewWarningMicros, and ToLeaseClock translates its
// own times with it for the judgments made outside a transaction (the execution
// history's).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;

class ClusterMembership {
 public:
  // The clock leases are written and judged on (see the file comment).
  enum class LeaseClock {
    // The database's: PostgreSQL's clock_timestamp(), read in the transaction that
    // writes or compares the lease; on SQLite the node's clock, which is the database's.
    kDatabase,
    // The node's Clock on both backends: a ManualClock shared by every node of a test.
    kNode,
  };
  // The lease clock a membership on `clock` uses by default: kNode for a manual clock
  // (Clock::IsManual), kDatabase otherwise.
  static LeaseClock DefaultLeaseClock(const Clock& clock);

  // |node clock - database clock| beyond which the node logs a warning (the metric
  // sheetlog_clock_skew_seconds shows the value whatever it is).
  static constexpr int64_t kClockSkewWarningMicros = 1000000;

  struct LeaseOptions {
    // How long a lease lasts after each renewal: how long a dead node's work waits
    // before another takes it over. Must exceed renew_every_micros (plus, with
    // LeaseClock::kNode only, the skew between the nodes' clocks).
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

  // A live node's lease, as read from the table.
  struct NodeLease {
    std::string owner;              // its owner id
    std::string node;               // LeaseOptions::node ("" if none)
    int64_t expires_at_micros = 0;  // on the lease clock
  };
  // A claimed name and its holder.
  struct NameClaim {
    std::string name;
    std::string owner;
    bool owner_live = false;  // the holder's lease lives: else the name is free to take
  };
  // This node's view of the cluster (GET /v1/health), read in one transaction.
  struct View {
    std::string owner;  // this node's owner id; "" without a lease
    std::string node;   // this node's LeaseOptions::node
    LeaseClock lease_clock = LeaseClock::kDatabase;
    int64_t now_micros = 0;                    // the lease clock at the read
    std::vector<NodeLease> nodes;              // the live leases, by owner id
    std::vector<NameClaim> claims;             // every claimed name, by name
    std::optional<int64_t> clock_skew_micros;  // as clock_skew_micros()
  };
  // At most this many rows of each table in a View: both hold a row per node and per
  // claimed name (shards and cluster jobs), a few dozen in any real cluster.
  static constexpr int kViewLimit = 1000;

  // `db` and `clock` must outlive this object. The first form uses
  // DefaultLeaseClock(*clock).
  ClusterMembership(Transactions* db, Clock* clock);
  ClusterMembership(Transactions* db, Clock* clock, LeaseClock lease_clock);
  ~ClusterMembership();  // StopLease
  ClusterMembership(const ClusterMembership&) = delete;
  ClusterMembership& operator=(const ClusterMembership&) = delete;

  // Joins: takes a random owner id, writes its lease and renews it until StopLease;
  // releases predecessors' and (SQLite: every other, PostgreSQL: lapsed) leases.
  // Errors: InvalidArgument for a ttl not above the renewal period, storage errors
  // (no lease then), FailedPrecondition if a lease is held already.
  Status StartLease(const LeaseOptions& options);
  Status StartLease() { return StartLease(LeaseOptions()); }
  // Extends the lease to now + ttl on the lease clock (re-creating it if another node
  // pruned it after it lapsed), prunes other owners' lapsed leases and measures the
  // clock skew. FailedPrecondition without one.
  Status RenewLease();
  // Stops renewing, releases the lease and every claim of it (call when no invocation
  // of this process runs). Idempotent.
  void StopLease();
  // This node's owner id; "" without a lease.
  std::string owner() const;
  LeaseClock lease_clock() const { return lease_clock_; }

  // Whether a lease read as expiring at `expires_at_micros` (nullopt: no lease row)
  // is live at `now_micros` of the lease clock: the one rule every judgment of
  // liveness uses.
  bool IsLeaseLive(std::optional<int64_t> expires_at_micros, int64_t now_micros) const;
  // `node_micros`, a time of this node's clock, on the lease clock: minus the skew last
  // measured (the same time with kNode, on SQLite, and before any measurement). For
  // judgments made outside a transaction that reads the database's clock.
  int64_t ToLeaseClock(int64_t node_micros) const;
  // This node's clock minus the database's, as measured at the last start or renewal
  // of the lease (PostgreSQL with LeaseClock::kDatabase); nullopt where the node's
  // clock is the lease clock (SQLite, kNode) or before the first measurement.
  std::optional<int64_t> clock_skew_micros() const;

  // Whether `owner` holds a live lease now (on the lease clock).
  Result<bool> IsLive(const std::string& owner);
  // How many owners hold a live lease now (this one included).
  Result<int> LiveOwners();
  // The live leases and every claim, with this node's own id (see View).
  Result<View> ReadView();

  // Called after each commit of this object that removed other owners' leases (at
  // StartLease: its predecessors', and on SQLite every other; at each renewal: lapsed
  // ones) or this owner's own (StopLease), with their owner ids: those processes are
  // gone, and what they held in other services (queue messages in flight) can move on
  // now instead of after its own timeout. On the thread that committed, outside mu_.
  // A crash between the commit and the call loses the call: whatever waits on it must
  // still end by its own timeout. Set it before StartLease.
  using OwnersGoneListener = std::function<void(const std::vector<std::string>& owners)>;
  void SetOwnersGoneListener(OwnersGoneListener listener) EXCLUDES(mu_);

  // Takes `name` if it is free, this owner's already, or held by an owner whose lease
  // is gone; true if this owner holds it now. One conditional upsert: two nodes
  // claiming at once get one winner. FailedPrecondition without a lease.
  Result<bool> ClaimName(const std::string& name);
  // Gives `name` up if this owner holds it (so another node may take it).
  Status ReleaseName(const std::string& name);

 private:
  // "now" on the lease clock, read inside a transaction on `c`, and the skew it
  // measured when it read the database's clock.
  struct LeaseNow {
    int64_t micros = 0;
    std::optional<int64_t> clock_skew_micros;
  };
  Result<LeaseNow> ReadLeaseNow(Connection& c) const;
  // Keeps a measured skew and logs when it passes the warning threshold or comes back.
  void RecordClockSkew(int64_t skew_micros) EXCLUDES(mu_);
  // The renewal thread: renews at `next` and every renew_every_micros after until
  // StopLease.
  void RenewLoop(int64_t next);
  // Tells the listener (if any) that `gone` left; nothing if it is empty.
  void ReportOwnersGone(const std::vector<std::string>& gone) EXCLUDES(mu_);

  Transactions* db_;
  Clock* clock_;
  const LeaseClock lease_clock_;

  mutable Mutex mu_;
  CondVar cv_;  // wakes the renewal thread to stop
  std::string owner_ GUARDED_BY(mu_);
  LeaseOptions lease_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::optional<int64_t> clock_skew_micros_ GUARDED_BY(mu_);
  // The skew last logged as beyond the threshold; nullopt while within it.
  std::optional<int64_t> warned_skew_micros_ GUARDED_BY(mu_);
  OwnersGoneListener owners_gone_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace sheetlog
