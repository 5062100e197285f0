// Execution history with an atomic counter (seed 002): exclusive control for
// at-least-once delivery. Every unit of work (a stream record, a queue message) has a
// partition key derived from the work itself, never generated per invocation, so a
// redelivery or a replay finds the earlier attempts. Rows are immutable: a key's
// `started` rows and outcome rows (`succeeded`, `failed`, or `deferred`: ended
// unfinished with its own redelivery arranged, run again like `failed` but not listed
// by ListFailed).
//
// Begin(key): 1. reads the key's rows, newest first; 2. the latest `succeeded` is a
// duplicate (kAlreadySucceeded), a `started` one not abandoned runs elsewhere
// (kRunningElsewhere); 3. adds 1 to the counter of row (key, latest + 1), created as
// `started`: of invocations that both passed step 2 exactly one gets 1 and proceeds, any
// other stops (kLostRace). Finish() appends the outcome row.
//
// Liveness. A `started` row is abandoned once its invocation died or ran past the time
// budget. This process's rows (and rows without an owner) are judged by the runtime's
// LiveInvocations; another owner's rows run while its lease lives, as the
// ClusterMembership given at construction judges it. Without either, a `started` row
// counts as running for the whole time budget.
//
// Thread-safe; all state is in the database, every statement in SQL both backends
// accept; on PostgreSQL the counter and the appends hold across processes. The seed's
// steps in full and the departures from it: docs/architecture.md "The execution
// history"; across nodes: docs/cluster.md "Node leases and claims".
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;
class ClusterMembership;
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
  // `membership` (may be null; must outlive this object): this node's lease. Rows
  // written while it holds one carry its owner id, and another owner's `started` rows
  // are judged by its IsLeaseLive (see "Liveness"). Null: rows have no owner.
  ExecutionHistory(Transactions* db, Clock* clock, FaultInjector* faults = nullptr,
                   const ClusterMembership* membership = nullptr);

  // Makes `live` the liveness oracle (see "Liveness"); null: the time budget alone.
  // `live` must outlive this object. Call before any Begin.
  void set_live_invocations(const LiveInvocations* live) { live_ = live; }

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
  // Deletes every row, inside the caller's transaction: the history's part of an admin
  // reset (App::Reset). The owners' leases and claims (ClusterMembership) stay: the
  // running nodes keep them. Returns how many.
  Result<int64_t> DeleteAll(Connection& conn);

 private:
  Result<std::vector<ExecutionRow>> ListLatestWithStatus(ExecStatus status,
                                                         int64_t since_micros,
                                                         int64_t until_micros, int limit);

  // The owner id written into rows: the membership's, "" without one.
  std::string owner() const;

  Transactions* db_;
  Clock* clock_;
  FaultInjector* faults_;
  const ClusterMembership* membership_;
  const LiveInvocations* live_ = nullptr;
};

}  // namespace sheetlog
