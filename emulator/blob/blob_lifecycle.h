// LifecycleSweeper: the background worker that applies a lifecycle rule to the blob
// store, as an S3 lifecycle configuration would. Seed 000: the body of a large entry is
// uploaded with auto-delete=true (a discardable write); once the entry that references
// it is in the log, a side effect removes the tag. Uploads never completed keep the tag
// and are deleted here once older than the rule's age (default 3 days, --orphan-ttl).
//
// The keep predicate (see BlobKeepPredicate) lets the event log veto deleting a blob
// that an entry references but whose untag has not run yet.
//
// The worker sweeps once at Start (unless options say otherwise) and then every
// `period_micros` of the Clock; RunNow() sweeps at once on the caller's thread. Sweeps
// never overlap (the worker's and RunNow's are serialized).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include "emulator/blob/blob_store.h"
#include "emulator/env/mutex.h"
#include "emulator/env/periodic_worker.h"
#include "emulator/status.h"

namespace sheetlog {

class Clock;

struct LifecycleSweeperOptions {
  // Default: tag auto-delete=true, older than 3 days.
  LifecycleRule rule;
  // Time between the starts of two sweeps (a sweep longer than this is followed by the
  // next at once). Default: 1 hour.
  int64_t period_micros = 3600LL * 1000000;
  // Sweep as soon as the worker starts (so a server restarted more often than the
  // period still sweeps). Default: true.
  bool sweep_at_start = true;
  // Asked before each sweep of the worker (not RunNow): false skips that one. Nodes
  // sharing one store pass a cluster claim here, so the store is swept once per
  // cluster, not once per node (docs/cluster.md). Default (null): always sweep.
  std::function<bool()> may_run;
};

struct LifecycleSweeperCounters {
  int64_t sweeps = 0;         // completed (or cancelled) sweeps, worker and RunNow
  int64_t failed_sweeps = 0;  // sweeps that returned an error
  int64_t deleted = 0;        // objects deleted, summed over all sweeps
  int64_t deleted_bytes = 0;
  int64_t kept_by_predicate = 0;
  int64_t unreadable = 0;         // in the last sweep
  int64_t errors = 0;             // per-object errors, summed over all sweeps
  int64_t last_sweep_micros = 0;  // clock time the last sweep finished; 0 = never
  std::string last_error;         // latest sweep error or first per-object error
};

// Thread-safe: RunNow may run from a request while the periodic sweep runs (sweeps
// never overlap); counters() and WaitForSweeps from any thread.
class LifecycleSweeper {
 public:
  // `store` and `clock` must outlive the sweeper. `keep` may be empty (keep nothing).
  LifecycleSweeper(BlobStore* store, Clock* clock, LifecycleSweeperOptions options,
                   BlobKeepPredicate keep = {});
  // Stops the worker.
  ~LifecycleSweeper();
  LifecycleSweeper(const LifecycleSweeper&) = delete;
  LifecycleSweeper& operator=(const LifecycleSweeper&) = delete;

  // Starts the worker thread. Idempotent. InvalidArgument for a non-positive period or
  // an invalid rule.
  Status Start();
  // Stops the worker: a sweep in progress stops between two objects (every deletion is
  // complete or not started), then the thread is joined. Idempotent; Start may follow.
  void Stop();

  // Sweeps now on the calling thread (waiting for a worker sweep in progress to end)
  // and returns its report; counters include it.
  Result<SweepReport> RunNow();

  LifecycleSweeperCounters counters() const;

  // Blocks until `counters().sweeps >= count` or `real_timeout_millis` of real time have
  // passed (for tests and diagnostics; the sweep schedule itself follows the Clock).
  // Returns whether the count was reached.
  bool WaitForSweeps(int64_t count, int64_t real_timeout_millis);

 private:
  Result<SweepReport> SweepOnce(const std::atomic<bool>* cancel);

  BlobStore* const store_;
  Clock* const clock_;
  const LifecycleSweeperOptions options_;
  const BlobKeepPredicate keep_;

  Mutex sweep_mu_;  // held for the duration of a sweep: sweeps never overlap

  mutable Mutex mu_;
  CondVar cv_;  // wakes WaitForSweeps
  LifecycleSweeperCounters counters_ GUARDED_BY(mu_);
  PeriodicWorker worker_{clock_};  // last: stopped before the rest goes
};

}  // namespace sheetlog
