#include "emulator/runtime/cluster_membership.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "emulator/env/clock.h"
#include "emulator/env/uuid.h"
#include "emulator/table/connection.h"

namespace sheetlog {

namespace {

// Every statement is written once in SQL both SQLite and PostgreSQL accept
// (Connection::RunSql); the tables are migrations 010 (`execution_owner`) and 011
// (`owner_claim`) in emulator/schema/, one form per dialect.
// A lease is live while expires_at > now (IsLeaseLive).
constexpr const char* kUpsertLease =
    "INSERT INTO execution_owner (owner, expires_at, node) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (owner) DO UPDATE SET expires_at = excluded.expires_at";
constexpr const char* kPruneLapsedLeases =
    "DELETE FROM execution_owner WHERE expires_at <= ?1 AND owner <> ?2";
constexpr const char* kReleaseOtherLeases =
    "DELETE FROM execution_owner WHERE owner <> ?1";
constexpr const char* kReleaseLease = "DELETE FROM execution_owner WHERE owner = ?1";
// The same node's earlier owners: processes of this host and data directory, gone.
constexpr const char* kReleasePredecessors =
    "DELETE FROM execution_owner WHERE node = ?1 AND owner <> ?2";
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

}  // namespace

ClusterMembership::ClusterMembership(Transactions* db, Clock* clock)
    : db_(db), clock_(clock) {}

ClusterMembership::~ClusterMembership() { StopLease(); }

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
  const int64_t now = clock_->NowMicros();
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    RETURN_IF_ERROR(
        c.RunSql(kUpsertLease, {owner, now + options.ttl_micros, options.node}).status());
    if (!options.node.empty()) {
      RETURN_IF_ERROR(c.RunSql(kReleasePredecessors, {options.node, owner}).status());
    }
    // A SQLite file has one process (the data directory's): every other owner is a
    // process that is gone. On PostgreSQL only a lapsed lease says so.
    if (c.dialect() == SqlDialect::kSqlite) {
      return c.RunSql(kReleaseOtherLeases, {owner}).status();
    }
    return c.RunSql(kPruneLapsedLeases, {now, owner}).status();
  }));
  MutexLock lock(&mu_);
  owner_ = owner;
  lease_ = options;
  stopping_ = false;
  if (options.renew_in_background) {
    const int64_t next = now + options.renew_every_micros;
    thread_ = std::thread([this, next] { RenewLoop(next); });
  }
  return Status::OK();
}

Status ClusterMembership::RenewLease() { return RenewLeaseAt(clock_->NowMicros()); }

Status ClusterMembership::RenewLeaseAt(int64_t now) {
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
  return db_->Write([&](Connection& c) -> Status {
    RETURN_IF_ERROR(c.RunSql(kUpsertLease, {owner, now + ttl, node}).status());
    return c.RunSql(kPruneLapsedLeases, {now, owner}).status();
  });
}

void ClusterMembership::RenewLoop(int64_t next) {
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (clock_->NowMicros() < next) {
      clock_->WaitUntil(cv_, mu_, next);
      continue;
    }
    lock.Unlock();
    // The next turn counts from the time this renewal writes, not from when it ends:
    // time that passes meanwhile never delays it.
    const int64_t now = clock_->NowMicros();
    Status status = RenewLeaseAt(now);
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
  }
  MutexLock lock(&mu_);
  owner_.clear();
}

std::string ClusterMembership::owner() const {
  MutexLock lock(&mu_);
  return owner_;
}

bool ClusterMembership::IsLeaseLive(std::optional<int64_t> expires_at_micros,
                                    int64_t now_micros) const {
  return expires_at_micros && *expires_at_micros > now_micros;
}

Result<bool> ClusterMembership::IsLive(const std::string& owner) {
  std::optional<int64_t> expires_at;
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    expires_at.reset();
    return c
        .RunSql(kSelectLease, {owner},
                [&](const SqlRow& row) {
                  expires_at = row.Int(0);
                  return false;
                })
        .status();
  }));
  return IsLeaseLive(expires_at, clock_->NowMicros());
}

Result<int> ClusterMembership::LiveOwners() {
  int live = 0;
  RETURN_IF_ERROR(db_->Read([&](Connection& c) -> Status {
    return c
        .RunSql(kCountLiveOwners, {clock_->NowMicros()},
                [&](const SqlRow& row) {
                  live = static_cast<int>(row.Int(0));
                  return false;
                })
        .status();
  }));
  return live;
}

Result<bool> ClusterMembership::ClaimName(const std::string& name) {
  const std::string owner = this->owner();
  if (owner.empty()) return FailedPrecondition("a claim needs this node's lease");
  bool held = false;
  RETURN_IF_ERROR(db_->Write([&](Connection& c) -> Status {
    held = false;
    return c
        .RunSql(kClaim, {name, owner, clock_->NowMicros()},
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
