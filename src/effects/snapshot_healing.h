// The snapshot pipeline's self-healing, and what it still has to do.
//
// SnapshotHealer gives a job again to every Snapshot entry that is not complete and has
// no live job (no message in the snapshot queue, visible, delayed or in flight, or in
// its dead-letter queue, and no invocation working on it), once it is min_age_seconds
// old: losses no operator sees (a queue's retention, a message deleted by a bug, a
// change-feed record pruned before its handler ran) heal without one. It runs over every
// sheet, at start and then periodically (src/app/app.cc). A dead-lettered job counts as
// live: it waits for an operator's redrive.
//
// PipelineBacklog answers verify (src/ops/verify.h, VerifyOptions::explain_pending):
// which findings are explained by work still queued or in flight.
//
// The rule and its reasons: docs/architecture.md "Self-healing, and what verify calls
// pending".
//
// SnapshotHealer keeps no state between runs (thread-safe: runs may overlap, each its
// own pass). PipelineBacklog is not thread-safe: one per verify run.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "emulator/env/clock.h"
#include "emulator/queue/queue.h"
#include "emulator/status.h"
#include "emulator/stream/change_feed.h"
#include "src/log/event_log.h"

namespace sheetlog {

// A snapshot job as its messages name it: sheet, segment, entry num.
using SnapshotJobKey = std::tuple<std::string, int64_t, int64_t>;

// The messages of one snapshot job.
struct SnapshotJobMessages {
  int64_t queued = 0;        // in the snapshot queue: visible, delayed or in flight
  int64_t failing = 0;       // of those, with a recorded failure (last_error)
  std::string last_error;    // the latest such failure's text
  int64_t dead_letters = 0;  // in the dead-letter queue
};

struct SnapshotJobIndex {
  std::map<SnapshotJobKey, SnapshotJobMessages> jobs;
  int64_t messages = 0;  // messages listed (bodies that are no job included)
  // False when the queues held more than the limit: a job not in `jobs` may exist.
  bool complete = true;
};

// Every message of `queue`, then of `dead_letter_queue` (in this order, so a message
// dead-lettered meanwhile is seen in one or the other), read without receiving, at
// most `max_messages` in all.
Result<SnapshotJobIndex> ListSnapshotJobs(QueueService* queues, const std::string& queue,
                                          const std::string& dead_letter_queue,
                                          int64_t max_messages);

struct SnapshotHealingOptions {
  std::string queue;              // the snapshot queue
  std::string dead_letter_queue;  // its dead-letter queue
  // A Snapshot entry gets a job again only once it was written this long ago (clock
  // seconds). Default: 300.
  int64_t min_age_seconds = 300;
  // A pending item modified more recently than this belongs to a live invocation (the
  // snapshot worker's stale timeout). Default: 60.
  int64_t stale_seconds = 60;
  // Jobs enqueued per run at most (every sheet is looked at; the next run goes on with
  // the rest). Default: 100.
  int64_t max_jobs_per_run = 100;
  // Messages listed per run at most; with more in the queues, the run enqueues
  // nothing (the pipeline is busy; nothing is decided on a partial view).
  // Default: 100000.
  int64_t max_messages = 100000;
  // Entries read per sheet and run looking for its first incomplete Snapshot entry.
  // Default: 10000.
  int64_t max_entries_per_sheet = 10000;
};

struct SnapshotHealingReport {
  int64_t sheets = 0;      // sheets looked at
  int64_t expired = 0;     // queue messages past their retention, purged first
  int64_t candidates = 0;  // incomplete Snapshot entries old enough, no live invocation
  int64_t enqueued = 0;    // of those, with no message anywhere: enqueued again
  bool queues_too_large = false;  // the queues held more than max_messages
  // One line per job enqueued: "sheet <id>: snapshot at seq <n> re-enqueued (...)".
  std::vector<std::string> actions;
};

class SnapshotHealer {
 public:
  // `log`, `queues` and `clock` must outlive the healer.
  SnapshotHealer(EventLog* log, QueueService* queues, Clock* clock,
                 SnapshotHealingOptions options);

  // One pass over every sheet: first the queues' retention purge (an expired message
  // is not live), then, per sheet, its first incomplete Snapshot entry (the worker
  // makes them in order, and a completed one sends the next one's job); those old
  // enough, with no live invocation, no message in either queue and still incomplete
  // when looked at again, get a job. Stops early (returning what it did) when
  // `stopping` is set. A sheet deleted meanwhile is skipped; other errors stop the run.
  Result<SnapshotHealingReport> RunOnce(const std::atomic<bool>* stopping = nullptr);

  const SnapshotHealingOptions& options() const { return options_; }

 private:
  struct Candidate {
    SnapshotJobKey job;
    int64_t seq = 0;
    int64_t age_s = 0;
  };
  // The sheet's first incomplete Snapshot entry, if it is a candidate.
  Result<std::optional<Candidate>> CandidateOf(const SheetInfo& sheet, int64_t now_s);

  EventLog* const log_;
  QueueService* const queues_;
  Clock* const clock_;
  const SnapshotHealingOptions options_;
};

// What the side-effect path still has to do, read once on first use (each query after
// that answers from what was read). One per verify run.
class PipelineBacklog {
 public:
  // `consumer`: the change-feed consumer running the entry effects (its checkpoints
  // say what it has processed). `max_records`: unprocessed records read at most; with
  // more, every still-tagged external body counts as pending (the feed is that far
  // behind).
  PipelineBacklog(ChangeFeed* feed, std::string consumer, QueueService* queues,
                  std::string queue, std::string dead_letter_queue,
                  int64_t max_records = 100000, int64_t max_messages = 100000);

  // Why the untag of external body `key` has not run yet — the change feed has not
  // delivered its entry to the consumer — or nullopt.
  Result<std::optional<std::string>> UntagPending(const std::string& key);
  // Why the Snapshot entry (sheet, segment, num) is not complete yet when work still
  // queued or in flight explains it — its record not yet delivered by the feed, or a
  // message in the snapshot queue with no recorded failure — or nullopt (no job at
  // all, a failing one, a dead-lettered one).
  Result<std::optional<std::string>> SnapshotPending(const SnapshotJobKey& job);

 private:
  Status LoadFeed();
  Status LoadJobs();

  ChangeFeed* const feed_;
  const std::string consumer_;
  QueueService* const queues_;
  const std::string queue_;
  const std::string dead_letter_queue_;
  const int64_t max_records_;
  const int64_t max_messages_;

  bool feed_loaded_ = false;
  bool feed_unbounded_ = false;         // more than max_records_ unprocessed
  std::set<std::string> untag_keys_;    // external bodies of unprocessed records
  std::set<SnapshotJobKey> feed_jobs_;  // Snapshot entries of unprocessed records
  bool jobs_loaded_ = false;
  SnapshotJobIndex jobs_;
};

}  // namespace sheetlog
