// Retention (seed 003's checkpoint-based expiry): a background worker that, every
// period of the injected Clock, truncates each sheet's log to what the policy keeps.
// EventLog::Truncate decides what may go (whole segments behind a
// completed snapshot, never the newest); the policy only says how far back to keep:
//   - retain_segments N: the newest N segments;
//   - retain_days D: every segment holding an entry written in the last D days (a
//     segment's entries are all older than the creation of the segment after it);
//   - both: a segment is kept if either keeps it.
// With `archive`, each dropped segment is first written to the blob store
// (EventLog::ArchiveKey). Blobs only the dropped entries referenced are deleted.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/mutex.h"
#include "emulator/env/periodic_worker.h"
#include "emulator/status.h"
#include "src/log/event_log.h"

namespace sheetlog {

struct RetentionOptions {
  int64_t retain_segments = 0;  // 0: no limit by count
  int64_t retain_days = 0;      // 0: no limit by age
  bool archive = false;
  // Time between the starts of two runs. The first run is one period after Start.
  // Default: 1 hour.
  int64_t period_micros = 3600LL * 1000000;
  // Asked before each run of the worker (not RunNow): false skips that one. Nodes
  // sharing one store pass a cluster claim here, so retention runs once per cluster.
  // Default (null): always run.
  std::function<bool()> may_run;

  bool enabled() const { return retain_segments > 0 || retain_days > 0; }
};

struct RetentionCounters {
  int64_t runs = 0;
  int64_t segments_dropped = 0;
  int64_t entries_dropped = 0;
  int64_t archives_written = 0;
  int64_t errors = 0;      // sheets whose truncation failed (retried next run)
  std::string last_error;  // the latest of them
};

// The seq before which a sheet with `segments` (ordered by num) may be truncated at
// `now_seconds` under `options`: 0 when the policy keeps everything.
int64_t RetentionCutoffSeq(const std::vector<SegmentInfo>& segments, int64_t now_seconds,
                           const RetentionOptions& options);

// Thread-safe: RunOnce may run from a request while the worker's own pass runs (passes
// never overlap); counters() from any thread.
class RetentionWorker {
 public:
  // `log`, `blobs` and `clock` must outlive the worker.
  RetentionWorker(EventLog* log, BlobStore* blobs, Clock* clock,
                  RetentionOptions options);
  ~RetentionWorker();  // stops the worker
  RetentionWorker(const RetentionWorker&) = delete;
  RetentionWorker& operator=(const RetentionWorker&) = delete;

  // Starts the worker thread; does nothing when the policy is off. Idempotent.
  // InvalidArgument for a non-positive period or negative limits.
  Status Start();
  // Stops between two sheets and joins. Idempotent.
  void Stop();
  // One pass over every sheet now, on the caller's thread (never overlapping the
  // worker's). Per-sheet failures are counted, not returned; listing errors are.
  Status RunNow();
  RetentionCounters counters() const;
  const RetentionOptions& options() const { return options_; }

 private:
  Status RunOnce();
  Status RetainSheet(const SheetInfo& sheet);

  EventLog* const log_;
  BlobStore* const blobs_;
  Clock* const clock_;
  const RetentionOptions options_;
  Mutex run_mu_;  // held for a whole pass: passes never overlap
  mutable Mutex mu_;
  RetentionCounters counters_ GUARDED_BY(mu_);
  PeriodicWorker worker_{clock_};  // last: stopped before the rest goes
};

}  // namespace sheetlog
