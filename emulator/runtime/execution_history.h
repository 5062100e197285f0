// Execution history with an atomic counter (seed 002): exclusive control for
// at-least-once delivery. Every unit of work (a stream record, a queue message) has a
// partition key that is derived from the work itself, never generated per invocation,
// so a redelivery or a replay finds the earlier attempts. Rows are immutable:
//
//   key     seq  atomic_counter  exec_status  created_at
//   job1    1    1               started      23:02
//   job1    2    1               failed       23:13     <- replay re-runs only these
//   job1    3    1               started      23:22
//   job1    4    1               succeeded    23:26
//
// Begin(key) follows the seed step by step:
//   1. Query the key's rows, newest sequence first (an eventually consistent read).
//   2. Latest is `succeeded`: a duplicate; do not run (kAlreadySucceeded).
//      Latest is `started` by an invocation that is still running and younger than the
//      invocation time budget: another invocation is running it (kRunningElsewhere).
//      A `started` row of an invocation that died (its process is gone: see "Liveness")
//      or ran out of time is ABANDONED: run again.
//   3. "UpdateItem ADD atomic_counter 1" on (key, latest + 1), creating the row as
//      `started`. Two invocations that both passed step 2 target the same row; exactly
//      one gets 1 back and proceeds. Any other value: a concurrent duplicate won
//      (kLostRace): stop.
// Finish() appends the outcome row (latest + 1 at that moment: normally started + 1).
//
// Differences from the seed, on purpose:
//   - Step 3's update only increments the counter of a row that exists; it does not
//     SET exec_status/created_at again, so a row written by the winner (even a terminal
//     row appended meanwhile) is never rewritten. The counter stays the only mutation.
//   - A fourth status, `deferred`: the invocation ended without finishing and arranged
//     its own redelivery (seed 000's snapshot worker changing the visibility timeout).
//     Begin treats it like `failed` (run again); ListFailed does not list it.
//   - created_at is microseconds since the epoch by the injected Clock.
//
// Liveness. Without a liveness oracle, a `started` row counts as running for the whole
// time budget after it was written (all the seed has: a dead Lambda is not observable).
// The runtime knows better, in two ways:
//   - Its own invocations: it registers every invocation it runs in a LiveInvocations
//     set, so a `started` row of this process whose invocation is not in the set is
//     abandoned at once (the invocation ended without its outcome row).
//   - Other processes' (issue 25: several nodes on one PostgreSQL): with StartLease,
//     this history is an owner, a random id taken at start, written into every row it
//     writes, with a lease row (`execution_owner`: owner, expires_at) renewed on the
//     clock by a thread of its own. A `started` row of another owner counts as running
//     while that owner's lease is unexpired (by this node's clock, so the lease's time
//     to live must exceed the clocks' skew), and is abandoned once it has lapsed: a
//     node killed -9 stops renewing and its work is taken over within the time to
//     live, never judged by a process id or set of this machine. Rows without an
//     owner (written before leases, schema 010, or by this process before it took
//     its lease) are judged by the live set, as before.
// A SQLite file belongs to one process (the data directory's), so on SQLite a new
// owner releases every other lease at start: a redelivery after a restart never waits
// for its own dead invocation. On PostgreSQL it releases only lapsed ones.
//
// Thread-safe; all state is in the database (Transactions: SQLite or PostgreSQL), in
// emulator/schema/004_history.sql and its PostgreSQL form
// emulator/postgres/schema/004_history.sql. Every statement is written once in SQL
// both backends accept (Connection::RunSql). On PostgreSQL several processes may
// share the history: the atomic counter and the appends hold across them (a racing
// claim of the same row waits for the other's commit; an append whose sequence
// another process took meanwhile takes the next one).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;
class FaultInjector;

enum class ExecStatus { kStarted, kSucceeded, kFailed, kDeferred };

// The invocations running in this process (see "Liveness" above). Thread-safe.
class LiveInvocations {
 public:
  void Add(const std::string& invocation_id);
  void Remove(const std::string& invocation_id);
  bool Contains(const std::string& invocation_id) const;
  size_t size() const;

 private:
  mutable Mutex mu_;
  std::multiset<std::string> ids_ GUARDED_BY(mu_);
};

// Registers an invocation in a LiveInvocations set for as long as it lives.
class LiveInvocation {
 public:
  LiveInvocation(LiveInvocations* set, std::string invocation_id);
  ~LiveInvocation();
  LiveInvocation(const LiveInvocation&) = delete;
  LiveInvocation& operator=(const LiveInvocation&) = delete;

 private:
  LiveInvocations* set_;
  std::string id_;
};

// "started", "succeeded", "failed", "deferred".
std::string_view ExecStatusText(ExecStatus status);
std::optional<ExecStatus> ParseExecStatus(std::string_view text);

struct ExecutionRow {
  std::string partition_key;
  int64_t sequence = 0;
  int64_t atomic_counter = 0;
  ExecStatus status = ExecStatus::kStarted;
  int64_t created_at = 0;  // micros
  std::string error;       // failed / deferred: why; else empty
  std::string source;      // the event source mapping that ran it
  std::string invocation_id;
  std::string detail;  // what the work was, e.g. a stream record's keys JSON
  // The owner (see "Liveness") that wrote the row; "" without a lease.
  std::string owner;
  // When `owner`'s lease expires (micros), as read with the row; nullopt: no lease.
  std::optional<int64_t> owner_lease_expires_at;
};

// One invocation as the log shows it: its outcome row (or its `started` row while that
// is its key's latest: still running, or abandoned), and when it started.
struct Invocation {
  ExecutionRow row;
  std::optional<int64_t> started_micros;  // the `started` row before an outcome row
};

// A page of ListInvocations: newest first, strictly before the cursor
// (before_micros, before_key, before_sequence) = the last invocation of the previous
// page (the defaults start at the newest).
struct InvocationQuery {
  int64_t before_micros = std::numeric_limits<int64_t>::max();
  std::string before_key;
  int64_t before_sequence = 0;
  std::string source;                // only this mapping's; "" = every one
  std::optional<ExecStatus> status;  // only rows of this status; nullopt = any
  int limit = 100;                   // 1..1000
};

struct BeginRequest {
  std::string partition_key;
  std::string source;
  std::string invocation_id;
  std::string detail;
};

enum class BeginOutcome {
  kProceed,           // run the work, then Finish(claim, ...)
  kAlreadySucceeded,  // latest row succeeded: a duplicate; treat as done
  kRunningElsewhere,  // latest row is a young `started`: leave it to that invocation
  kLostRace,          // the atomic counter came back > 1: a concurrent duplicate won
};

std::string_view BeginOutcomeText(BeginOutcome outcome);

struct Claim {
  BeginRequest request;
  BeginOutcome outcome = BeginOutcome::kProceed;
  // kProceed: the sequence of our `started` row. kLostRace: the contested sequence.
  int64_t sequence = 0;
  // What step 1 saw (nullopt: no history for the key).
  std::optional<ExecutionRow> latest;
};

class ExecutionHistory {
 public:
  // `db` and `clock` must outlive this object; `faults` may be null.
  // Fault points: "history.after_read_before_claim" (between steps 1 and 3; an error
  // fails Begin), "history.finish" (fails Finish before it writes).
  ExecutionHistory(Transactions* db, Clock* clock, FaultInjector* faults = nullptr);

  // Makes `live` the liveness oracle (see "Liveness"); null: the time budget alone.
  // `live` must outlive this object. Call before any Begin.
  void set_live_invocations(const LiveInvocations* live) { live_ = live; }

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
    // a new owner with the same name releases its predecessors' leases at start
    // (their process is gone), so their rows and claims are taken over at once rather
    // than when the lease lapses. Two live processes must never share one. Empty: none.
    std::string node;
  };
  // Makes this history an owner (see "Liveness"): takes a random owner id, writes its
  // lease and renews it until StopLease. Releases other owners' leases as "Liveness"
  // says. Call before any Begin. Errors: storage errors (no lease then);
  // FailedPrecondition if a lease is held already.
  Status StartLease(const LeaseOptions& options);
  Status StartLease() { return StartLease(LeaseOptions()); }
  // Extends the lease to now + ttl (re-creating it if another node pruned it after it
  // lapsed), and prunes other owners' lapsed leases. FailedPrecondition without one.
  Status RenewLease();
  // Stops renewing and releases the lease (every row of this owner is then
  // abandoned to the others: call when no invocation of this process runs). Also run
  // by the destructor. Idempotent.
  void StopLease();
  // This owner's id; "" before StartLease.
  std::string owner() const;

  // Claims (schema 011, `owner_claim`): names this owner holds while its lease lives —
  // a change-feed shard one node consumes, a job run once per cluster. A claim needs
  // no renewal of its own: it is held exactly while the holder's lease is unexpired,
  // so every claim of a node that dies comes free when its one lease lapses (ttl), and
  // StopLease frees them at once.
  //
  // Takes `name` if it is free, held by this owner already, or held by an owner whose
  // lease is gone (by this node's clock); true if this owner holds it now. Two nodes
  // claiming at once: one gets it (a conditional upsert; on PostgreSQL the second
  // waits for the first's commit and then sees its live lease). FailedPrecondition
  // without a lease.
  Result<bool> ClaimName(const std::string& name);
  // Gives `name` up if this owner holds it (so another node may take it).
  Status ReleaseName(const std::string& name);
  // How many owners hold an unexpired lease now (this one included): the nodes the
  // claimable work is shared among.
  Result<int> LiveOwners();

  ~ExecutionHistory();
  ExecutionHistory(const ExecutionHistory&) = delete;
  ExecutionHistory& operator=(const ExecutionHistory&) = delete;

  // True if `row` is a `started` row whose invocation no longer runs: it died (see
  // "Liveness"), or ran past `time_budget_micros` (by the clock, now `now_micros`).
  bool IsAbandoned(const ExecutionRow& row, int64_t time_budget_micros,
                   int64_t now_micros) const;

  // Steps 1-3 for one key. `time_budget_micros`: how long a `started` row counts as a
  // running invocation (the invocation time budget). Errors: storage errors, an
  // armed fault; nothing is claimed then.
  Result<Claim> Begin(const BeginRequest& request, int64_t time_budget_micros);
  // Begin for many keys with one read and one write transaction. Claims in input
  // order. REQUIRES: distinct partition keys.
  Result<std::vector<Claim>> BeginBatch(const std::vector<BeginRequest>& requests,
                                        int64_t time_budget_micros);

  // Appends the outcome row (`succeeded`, `failed` or `deferred`) for a claim that
  // proceeded. InvalidArgument for kStarted or a claim that did not proceed.
  Status Finish(const Claim& claim, ExecStatus status, std::string_view error = {});
  struct Outcome {
    const Claim* claim;
    ExecStatus status;
    std::string error;
  };
  // Finish for many claims in one transaction.
  Status FinishBatch(const std::vector<Outcome>& outcomes);

  // Appends a terminal row without a `started` row: work decided without running it,
  // e.g. a stream record skipped for its age (kFailed with the reason).
  Status Record(const BeginRequest& request, ExecStatus status, std::string_view error);

  // Appends terminal row `status` for `row`'s key on behalf of `row`'s invocation
  // (its source, invocation id and detail), but only if `row` is still the key's
  // newest row: checked and written in one transaction, so an invocation that claimed
  // the key meanwhile is never overtaken. For a runtime that finds a dead
  // invocation's `started` row whose work was resolved without it (its queue message
  // is gone). True if written, false if a newer row came first.
  Result<bool> RecordIfLatest(const ExecutionRow& row, ExecStatus status,
                              std::string_view error);

  // Seed step 1 alone: the newest row of `key`, or nullopt.
  Result<std::optional<ExecutionRow>> Latest(const std::string& partition_key);
  // Seed step 3 alone: ADD 1 to the counter of (key, sequence), creating it as
  // `started` (counter 1) if absent. Returns the new counter value.
  Result<int64_t> AddStarted(const BeginRequest& request, int64_t sequence);

  // Every row of `key`, oldest first.
  Result<std::vector<ExecutionRow>> List(const std::string& partition_key);
  // Keys whose latest row is `failed`, that row written in [since, until) (micros),
  // oldest first, at most `limit` (1..10000): what a replay should re-run.
  Result<std::vector<ExecutionRow>> ListFailed(int64_t since_micros, int64_t until_micros,
                                               int limit = 1000);
  // Keys whose latest row is an abandoned `started` row (IsAbandoned with
  // `time_budget_micros`), written in [since, until), oldest first, at most `limit`
  // (1..10000): work whose invocation died and that nothing has run since.
  Result<std::vector<ExecutionRow>> ListAbandoned(int64_t since_micros,
                                                  int64_t until_micros,
                                                  int64_t time_budget_micros,
                                                  int limit = 1000);
  // The invocation log (LocalStack's function logs): every invocation's outcome with
  // its mapping, work key, duration and error, newest first (see InvocationQuery).
  // InvalidArgument for a limit outside 1..1000.
  Result<std::vector<Invocation>> ListInvocations(const InvocationQuery& query);
  // Deletes rows written before `before_micros`; returns how many. History is an
  // audit trail: callers choose the horizon (longer than any redelivery window).
  Result<int64_t> DeleteBefore(int64_t before_micros);

 private:
  Result<std::vector<ExecutionRow>> ListLatestWithStatus(ExecStatus status,
                                                         int64_t since_micros,
                                                         int64_t until_micros, int limit);

  // The lease thread: renews at `next` and every renew_every_micros after until
  // StopLease.
  void RenewLoop(int64_t next);
  // RenewLease as of clock time `now`.
  Status RenewLeaseAt(int64_t now);

  Transactions* db_;
  Clock* clock_;
  FaultInjector* faults_;
  const LiveInvocations* live_ = nullptr;

  mutable Mutex lease_mu_;
  CondVar lease_cv_;  // wakes the lease thread to stop
  std::string owner_ GUARDED_BY(lease_mu_);
  LeaseOptions lease_ GUARDED_BY(lease_mu_);
  bool stopping_lease_ GUARDED_BY(lease_mu_) = false;
  std::thread lease_thread_;
};

}  // namespace sheetlog
