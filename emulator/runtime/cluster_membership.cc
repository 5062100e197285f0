#include "emulator/runtime/cluster_membership.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <utility>

#include "emulator/env/clock.h"
#include "emulator/env/uuid.h"
#include "emulator/table/connection.h"

namespace sheetlog {

namespace {

// Every statement is written once in SQL both SQLite and PostgreSQL accept
// (Connection::RunSql); the tables are migrations 010 (`execution_owner`) and 011
// (`owner_claim`) in emulator/schema/, one form per dialect. Every time in them ("now"
// and `expires_at`) is on the lease clock (the header's file comment): "now" comes in
// as a parameter read from it in the same transaction (ReadLeaseNow).
// A lease is live while expires_at > now (IsLeaseLive).
constexpr const char* kUpsertLease =
    "INSERT INTO execution_owner (owner, expires_at, node) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (owner) DO UPDATE SET expires_at = excluded.expires_at";
// The removals of leases return the owners removed (ReportOwnersGone).
constexpr const char* kPruneLapsedLeases =
    "DELETE FROM execution_owner WHERE expires_at <= ?1 AND owner <> ?2 RETURNING owner";
constexpr const char* kReleaseOtherLeases =
    "DELETE FROM execution_owner WHERE owner <> ?1 RETURNING owner";
constexpr const char* kReleaseLease = "DELETE FROM execution_owner WHERE owner = ?1";
// The same node's earlier owners: processes of this host and data directory, gone.
constexpr const char* kReleasePredecessors =
    "DELETE FROM execution_owner WHERE node = ?1 AND owner <> ?2 RETURNING owner";
constexpr const char* kReleaseOwnersClaims = "DELETE FROM owner_claim WHERE owner = ?1";
constexpr const char* kSelectLease =
    "SELECT expires_at FROM execution_owner WHERE owner = ?1";
// Free, ours, or its holder's lease is gone (lapsed, pruned or released): no row comes
// back when another owner's live lease holds it.
constexpr const char* kClaim =
    "INSERT INTO owner_claim (name, owner) VALUES (?1, ?2) "
    "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner "
    "WHERE owner_claim.owner = excluded.owner OR NOT EXISTS (SELECT 1 FROM "
    "execution_owner o WHERE o.owner = owner_claim.owner AND o.expires_at > ?3) "
    "RETURNING owner";
constexpr const char* kReleaseClaim =
    "DELETE FROM owner_claim WHERE name = ?1 AND owner = ?2";
constexpr const char* kCountLiveOwners =
    "SELECT COUNT(*) FROM execution_owner WHERE expires_at > ?1";
// ReadView's two reads: tables of a row per node and per claimed name (a few dozen),
// each read whole up to a bound.
constexpr const char* kSelectLiveLeases =
    "SELECT owner, node, expires_at FROM execution_owner WHERE expires_at > ?1 "
    "ORDER BY owner LIMIT ?2";
constexpr const char* kSelectClaims =
    "SELECT c.name, c.owner, EXISTS (SELECT 1 FROM execution_owner o WHERE "
    "o.owner = c.owner AND o.expires_at > ?1) FROM owner_claim c ORDER BY c.name "
    "LIMIT ?2";
// Runs `sql` (a DELETE ... RETURNING owner of leases) on `c`, adding the owners it
// removed to *gone.
Status RemoveLeases(Connection& c, const char* sql, const SqlParams& params,
                    std::vector<std::string>* gone) {
  return c
      .RunSql(sql, params,
              [&](const SqlRow& row) {
                gone->push_back(row.Text(0));
                return true;
              })
      .status();
}

// PostgreSQL's own clock in micros since the epoch: clock_timestamp() is the time of
// the call (now() would be the transaction's start, which a lock wait leaves behind).
constexpr const char* kSelectDatabaseClock =
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint";

}  // namespace

ClusterMembership::LeaseClock ClusterMembership::DefaultLeaseClock(const Clock& clock) {
  return clock.IsManual() ? LeaseClock::kNode : LeaseClock::kDatabase;
}

ClusterMembership::ClusterMembership(Transactions* db, Clock* clock)
    : ClusterMembership(db, clock, DefaultLeaseClock(*clock)) {}

ClusterMembership::ClusterMembership(Transactions* db, Clock* clock,
                                     LeaseClock lease_clock)
    : db_(db), clock_(clock), lease_clock_(lease_clock) {}

ClusterMembership::~ClusterMembership() { StopLease(); }

Result<ClusterMembership::LeaseNow> ClusterMembership::ReadLeaseNow(Connection& c) const {
  LeaseNow now;
  if (lease_clock_ == LeaseClock::kNode || c.dialect() == SqlDialect::kSqlite) {
    // SQLite: one process per file, so this node's clock is the database's.
    now.micros = clock_->NowMicros();
    return now;
  }
  // Bracketed by the node's clock: the skew is measured against the midpoint, so it
  // is off by at most half this one statement's round trip.
  const int64_t node_before = clock_->NowMicros();
  bool read = false;
  RETURN_IF_ERROR(c.RunSql(kSelectDatabaseClock, {}, [&](const SqlRow& row) {
                     now.micros = row.Int(0);
                     read = true;
                     return false;
                   }).status());
  const int64_t node_after = clock_->NowMicros();
  if (!read) return Internal("the database returned no clock reading");
  now.clock_skew_micros = node_before + (node_after - node_before) / 2 - now.micros;
  return now;
}

void ClusterMembership::RecordClockSkew(int64_t skew_micros) {
  bool warn = false;
  bool recovered = false;
  {
    MutexLock lock(&mu_);
    clock_skew_micros_ = skew_micros;
    if (std::llabs(skew_micros) > kClockSkewWarningMicros) {
      // Once when it passes the threshold, then again whenever it has moved by as much
      // since (a clock drifting away), not at every renewal.
      warn = !warned_skew_micros_ ||
             std::llabs(skew_micros - *warned_skew_micros_) > kClockSkewWarningMicros;
      if (warn) warned_skew_micros_ = skew_micros;
    } else if (warned_skew_micros_) {
      recovered = true;
      warned_skew_micros_.reset();
    }
  }
  if (warn) {
    spdlog::warn(
        "cluster membership: this node's clock is {:.3f} s {} the database's "
        "(PostgreSQL's clock_timestamp()). Leases and claims are judged on the "
        "database's clock, so no lease is misjudged, but the times this node writes "
        "(entries, history, queue delays) are off by as much: fix its time "
        "synchronisation (NTP). Metric: sheetlog_clock_skew_seconds",
        std::llabs(skew_micros) / 1e6, skew_micros > 0 ? "ahead of" : "behind");
  } else if (recovered) {
    spdlog::info(
        "cluster membership: this node's clock is back within {:.3f} s of the "
        "database's ({:.3f} s)",
        kClockSkewWarningMicros / 1e6, skew_micros / 1e6);
  }
}

Status ClusterMembership::StartLease(const LeaseOptions& options) {
  if (options.renew_every_micros <= 0 ||
      options.ttl_micros <= options.renew_every_micros) {
    return InvalidArgument(
        "a lease must be renewed (renew_every_micros > 0) more often than it lasts");
  }
  {
    MutexLock lock(&mu_);
    if (!owner_.empty()) return FailedPrecondition("this node holds a lease already");
  }
  const std::string owner = NewRandomUuid();
  std::optional<int64_t> skew;
  std::vector<std::string> gone;
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    gone.clear();
    ASSIGN_OR_RETURN(const LeaseNow now, ReadLeaseNow(c));
    skew = now.clock_skew_micros;
    RETURN_IF_ERROR(
        c.RunSql(kUpsertLease, {owner, now.micros + options.ttl_micros, options.node})
            .status());
    if (!options.node.empty()) {
      RETURN_IF_ERROR(
          RemoveLeases(c, kReleasePredecessors, {options.node, owner}, &gone));
    }
    // A SQLite file has one process (the data directory's): every other owner is a
    // process that is gone. On PostgreSQL only a lapsed lease says so.
    if (c.dialect() == SqlDialect::kSqlite) {
      return RemoveLeases(c, kReleaseOtherLeases, {owner}, &gone);
    }
    return RemoveLeases(c, kPruneLapsedLeases, {now.micros, owner}, &gone);
  }));
  if (skew) RecordClockSkew(*skew);
  ReportOwnersGone(gone);
  // The renewals are scheduled on the node's clock: only the lease's expiry needs the
  // clock every node shares; the period needs only a clock that runs at the right rate.
  const int64_t next = clock_->NowMicros() + options.renew_every_micros;
  MutexLock lock(&mu_);
  owner_ = owner;
  lease_ = options;
  stopping_ = false;
  if (options.renew_in_background) {
    thread_ = std::thread([this, next] { RenewLoop(next); });
  }
  return Status::OK();
}

Status ClusterMembership::RenewLease() {
  std::string owner;
  int64_t ttl = 0;
  std::string node;
  {
    MutexLock lock(&mu_);
    if (owner_.empty()) return FailedPrecondition("this node holds no lease");
    owner = owner_;
    ttl = lease_.ttl_micros;
    node = lease_.node;
  }
  std::optional<int64_t> skew;
  std::vector<std::string> gone;
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    gone.clear();
    ASSIGN_OR_RETURN(const LeaseNow now, ReadLeaseNow(c));
    skew = now.clock_skew_micros;
    RETURN_IF_ERROR(c.RunSql(kUpsertLease, {owner, now.micros + ttl, node}).status());
    return RemoveLeases(c, kPruneLapsedLeases, {now.micros, owner}, &gone);
  }));
  if (skew) RecordClockSkew(*skew);
  ReportOwnersGone(gone);
  return Status::OK();
}

void ClusterMembership::RenewLoop(int64_t next) {
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (clock_->NowMicros() < next) {
      clock_->WaitUntil(cv_, mu_, next);
      continue;
    }
    lock.Unlock();
    // The next turn counts from the time this renewal starts, not from when it ends:
    // time that passes meanwhile never delays it.
    const int64_t now = clock_->NowMicros();
    Status status = RenewLease();
    if (!status.ok()) {
      // Retried at the next turn; a lease that lapses meanwhile lets other nodes take
      // over this node's running work (run twice, as at-least-once allows).
      spdlog::warn("cluster membership: renewing the lease failed: {}",
                   status.ToString());
    }
    lock.Lock();
    next = now + lease_.renew_every_micros;
  }
}

void ClusterMembership::StopLease() {
  std::string owner;
  std::thread thread;
  {
    MutexLock lock(&mu_);
    if (owner_.empty()) return;
    stopping_ = true;
    owner = owner_;
    thread = std::move(thread_);
  }
  cv_.NotifyAll();
  if (thread.joinable()) thread.join();
  Status status = db_->Write([&](Connection& c) -> Status {
    RETURN_IF_ERROR(c.RunSql(kReleaseOwnersClaims, {owner}).status());
    return c.RunSql(kReleaseLease, {owner}).status();
  });
  if (!status.ok()) {
    spdlog::warn(
        "cluster membership: releasing the lease failed (it lapses by itself): {}",
        status.ToString());
  } else {
    ReportOwnersGone({owner});
  }
  MutexLock lock(&mu_);
  owner_.clear();
}

void ClusterMembership::SetOwnersGoneListener(OwnersGoneListener listener) {
  MutexLock lock(&mu_);
  owners_gone_ = std::move(listener);
}

void ClusterMembership::ReportOwnersGone(const std::vector<std::string>& gone) {
  if (gone.empty()) return;
  OwnersGoneListener listener;
  {
    MutexLock lock(&mu_);
    listener = owners_gone_;
  }
  if (listener) listener(gone);
}

std::string ClusterMembership::owner() const {
  MutexLock lock(&mu_);
  return owner_;
}

bool ClusterMembership::IsLeaseLive(std::optional<int64_t> expires_at_micros,
                                    int64_t now_micros) const {
  return expires_at_micros && *expires_at_micros > now_micros;
}

int64_t ClusterMembership::ToLeaseClock(int64_t node_micros) const {
  MutexLock lock(&mu_);
  return node_micros - clock_skew_micros_.value_or(0);
}

std::optional<int64_t> ClusterMembership::clock_skew_micros() const {
  MutexLock lock(&mu_);
  return clock_skew_micros_;
}

Result<bool> ClusterMembership::IsLive(const std::string& owner) {
  std::optional<int64_t> expires_at;
  int64_t now = 0;
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    expires_at.reset();
    ASSIGN_OR_RETURN(const LeaseNow lease_now, ReadLeaseNow(c));
    now = lease_now.micros;
    return c
        .RunSql(kSelectLease, {owner},
                [&](const SqlRow& row) {
                  expires_at = row.Int(0);
                  return false;
                })
        .status();
  }));
  return IsLeaseLive(expires_at, now);
}

Result<int> ClusterMembership::LiveOwners() {
  int live = 0;
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(const LeaseNow now, ReadLeaseNow(c));
    return c
        .RunSql(kCountLiveOwners, {now.micros},
                [&](const SqlRow& row) {
                  live = static_cast<int>(row.Int(0));
                  return false;
                })
        .status();
  }));
  return live;
}

Result<ClusterMembership::View> ClusterMembership::ReadView() {
  View view;
  {
    MutexLock lock(&mu_);
    view.owner = owner_;
    view.node = lease_.node;
    view.clock_skew_micros = clock_skew_micros_;
  }
  view.lease_clock = lease_clock_;
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    view.nodes.clear();
    view.claims.clear();
    ASSIGN_OR_RETURN(const LeaseNow now, ReadLeaseNow(c));
    view.now_micros = now.micros;
    const int64_t limit = kViewLimit;
    RETURN_IF_ERROR(
        c.RunSql(kSelectLiveLeases, {now.micros, limit}, [&](const SqlRow& row) {
           view.nodes.push_back({row.Text(0), row.Text(1), row.Int(2)});
           return true;
         }).status());
    return c
        .RunSql(kSelectClaims, {now.micros, limit},
                [&](const SqlRow& row) {
                  view.claims.push_back({row.Text(0), row.Text(1), row.Int(2) != 0});
                  return true;
                })
        .status();
  }));
  return view;
}

Result<bool> ClusterMembership::ClaimName(const std::string& name) {
  const std::string owner = this->owner();
  if (owner.empty()) return FailedPrecondition("a claim needs this node's lease");
  bool held = false;
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    held = false;
    ASSIGN_OR_RETURN(const LeaseNow now, ReadLeaseNow(c));
    return c
        .RunSql(kClaim, {name, owner, now.micros},
                [&](const SqlRow&) {
                  held = true;
                  return false;
                })
        .status();
  }));
  return held;
}

Status ClusterMembership::ReleaseName(const std::string& name) {
  const std::string owner = this->owner();
  if (owner.empty()) return Status::OK();
  return db_->Write([&](Connection& c) -> Status {
    return c.RunSql(kReleaseClaim, {name, owner}).status();
  });
}

}  // namespace sheetlog
