// emulator/runtime: the Lambda stand-in. Event source mappings connect a change feed
// (stream mapping) or a queue (queue mapping) to a handler and run it on bounded worker
// threads with Lambda's delivery rules: at least once; a shard's records in order, a
// failed batch retried with backoff and then skipped (its records get `failed` history
// rows, for replay); a failed message left to reappear after its visibility timeout
// (and to be dead-lettered). With keep_history, seed 002's execution history
// (execution_history.h) turns duplicate deliveries into no-ops and lets failures be
// replayed. On one database shared by several runtimes (nodes), each stream shard has
// one consumer at a time, by a claim tied to the runtime's lease.
//
// Lifecycle: Add*Mapping(), then Start(); Stop() (also run by the destructor) lets every
// handler already running finish (and its message delete or checkpoint complete),
// starts no new invocation, and joins every thread. A message received but not finished
// by an abandoned consumer simply reappears after its visibility timeout.
//
// The delivery rules in full, the history's part and the fault points:
// docs/architecture.md "The function runtime (emulator/runtime/)"; the shard claims:
// docs/cluster.md "One consumer per change-feed shard: claims".
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "emulator/env/mutex.h"
#include "emulator/queue/queue.h"
#include "emulator/runtime/cluster_membership.h"
#include "emulator/runtime/event_filter.h"
#include "emulator/runtime/execution_history.h"
#include "emulator/runtime/invocation_context.h"
#include "emulator/status.h"
#include "emulator/stream/change_feed.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;
class FaultInjector;

using StreamHandler =
    std::function<Status(const std::vector<StreamRecord>& batch, InvocationContext& ctx)>;
using QueueHandler = std::function<Status(const std::vector<ReceivedMessage>& messages,
                                          InvocationContext& ctx)>;

inline constexpr int64_t kDefaultTimeBudgetMicros = 900LL * 1000000;  // Lambda's max

struct StreamMapping {
  // Unique among the runtime's mappings: the checkpoint consumer and history source.
  std::string name;
  ChangeFeed* feed = nullptr;  // must outlive the runtime
  StreamHandler handler;
  EventFilter filter;  // default: every record
  // Most records per invocation, 1..10000. Default: 100.
  int batch_size = 100;
  // Records older than this (clock time since the change) are skipped rather than
  // (re)tried. -1: the stream's retention (Lambda's default: retry until expiry).
  int64_t max_record_age_micros = -1;
  // Retries of a failed batch before it is skipped; -1: unlimited (until max age).
  int max_retry_attempts = -1;
  bool bisect_on_error = false;
  // Backoff before retry n (n >= 1): min(retry_base << (n - 1), retry_max).
  int64_t retry_base_micros = 1000000;
  int64_t retry_max_micros = 300LL * 1000000;
  // Invocation time budget (InvocationContext deadline). Default: 900 s.
  int64_t time_budget_micros = kDefaultTimeBudgetMicros;
  bool keep_history = true;
  // Execution-history key of a record. Default: "<name>:<shard>:<sequence>".
  std::function<std::string(const StreamRecord&)> history_key;
  // Where a mapping with no checkpoint at all starts: the oldest retained record
  // (TRIM_HORIZON, default) or the newest (LATEST: only changes from now on).
  enum class StartingPosition { kTrimHorizon, kLatest };
  StartingPosition starting_position = StartingPosition::kTrimHorizon;
};

struct QueueMapping {
  std::string name;  // unique among the runtime's mappings; the history source
  QueueService* queues = nullptr;  // must outlive the runtime
  std::string queue;
  QueueHandler handler;
  // Consumer threads, 1..64. Default: 1.
  int concurrency = 1;
  // Messages per invocation, 1..10. Default: 1.
  int batch_size = 1;
  // Visibility timeout for received messages; default: the queue's.
  std::optional<int64_t> visibility_timeout_s;
  int64_t time_budget_micros = kDefaultTimeBudgetMicros;
  bool keep_history = true;
  // Execution-history key of a message. Default: "<name>:<message id>".
  std::function<std::string(const ReceivedMessage&)> history_key;
  // Clock time to wait after a queue service error before trying again.
  int64_t error_backoff_micros = 1000000;
};

// Reported to Options::observer after each step (for metrics, logs and tests).
struct RuntimeEvent {
  enum class Kind {
    kBatchSucceeded,    // stream: batch handled (or all duplicates); checkpoint moved
    kBatchFailed,       // stream: batch failed; retried after backoff, or bisected
    kRecordsSkipped,    // stream: too old / out of retries; checkpoint moved past them
    kRecordsFiltered,   // stream: records matched no pattern; checkpoint moved
    kRecordsLost,       // stream: records pruned before this mapping read them
    kMessageSucceeded,  // queue: handled and deleted
    kMessageFailed,     // queue: left for redelivery after its visibility timeout
    kMessageHandled,    // queue: the handler took care of it (MarkMessageHandled)
    kMessageDuplicate,  // queue: history says it already succeeded; deleted
    kMessageBusy,       // queue: a concurrent duplicate is running it; left alone
  };
  Kind kind;
  std::string mapping;
  int shard = -1;              // stream events
  int64_t first_sequence = 0;  // stream events: records covered
  int64_t last_sequence = 0;   // stream events: the checkpoint for success/skip/filter
  size_t count = 0;            // records / messages concerned
  std::string message_id;      // queue events
  Status status;               // failures: why
};

struct MappingStats {
  std::string name;
  int64_t invocations = 0;  // handler calls
  int64_t failures = 0;     // failed invocations (stream) / failed messages (queue)
  int64_t skipped = 0;      // stream records skipped after retries / age
  int64_t duplicates = 0;   // records / messages found already succeeded in history
  // Invocations under way now (a queue mapping counts from its receive to the end of
  // its handler): Lambda's concurrent executions.
  int64_t running = 0;
  // Records / messages whose earlier invocation had died (an abandoned `started` row)
  // and that were run again.
  int64_t abandoned = 0;
};

// Where one shard of a stream mapping stands (operators: is it progressing?).
struct ShardProgress {
  std::string mapping;
  int shard = 0;
  int64_t checkpoint = 0;           // the last sequence done
  int failed_attempts = 0;          // of the batch being retried; 0 when healthy
  std::string last_error;           // of that batch; empty when healthy
  int64_t next_attempt_micros = 0;  // clock time of the next retry; 0 when healthy
  // Change time of the oldest record read but not yet done; 0 if none.
  int64_t oldest_pending_micros = 0;
};

// Thread-safe after Start: Stats, StreamProgress and ListAbandoned are called from
// any thread; Add*Mapping, Start and Stop from the owner's thread.
class FunctionRuntime {
 public:
  // How often (clock time) the dispatcher renews its shard claims and rebalances them
  // over the live owners (docs/cluster.md "One consumer per change-feed shard").
  static constexpr int64_t kClaimRecheckMicros = 10LL * 1000000;

  struct Options {
    // Threads running stream batches, shared by all stream mappings. Default: 4.
    int stream_workers = 4;
    // How often (clock time) the runtime prunes its feeds' expired records;
    // 0 = never. Default: 60 s.
    int64_t prune_interval_micros = 60LL * 1000000;
    // Lambda's batching window, for every stream mapping at once: the runtime reads
    // the feeds' heads (and so starts new batches) at most once per window, so records
    // committed within a window after the last read go to one invocation instead of
    // one each, and the commits in between wake no thread. A commit after a quiet
    // window is read at once. It trades a few milliseconds of side-effect latency for
    // the wake-ups of every commit. 0 = read at every commit. Default: 0.
    int64_t batching_window_micros = 0;
    // The window's clock. Default (null): SystemClock, real time whatever `clock` is,
    // so a frozen sheet clock (--clock manual) does not freeze side effects. Tests
    // pass a ManualClock to end a window when they choose.
    Clock* batching_window_clock = nullptr;
    // Called after each step, on a worker thread, without locks held. Must be quick.
    std::function<void(const RuntimeEvent&)> observer;
    // This node's stable name for its lease (ClusterMembership::LeaseOptions::node).
    std::string node;
  };

  // `db`, `clock` must outlive the runtime; `faults` may be null.
  FunctionRuntime(Transactions* db, Clock* clock, FaultInjector* faults);
  FunctionRuntime(Transactions* db, Clock* clock, FaultInjector* faults, Options options);
  ~FunctionRuntime();
  FunctionRuntime(const FunctionRuntime&) = delete;
  FunctionRuntime& operator=(const FunctionRuntime&) = delete;

  // InvalidArgument for a bad or duplicate mapping; FailedPrecondition after Start().
  Status AddStreamMapping(StreamMapping mapping);
  Status AddQueueMapping(QueueMapping mapping);

  // Loads checkpoints, takes this node's lease and starts the threads.
  // FailedPrecondition if already started (a stopped runtime cannot be restarted: make
  // a new one). InvalidArgument for a queue mapping whose visibility timeout is shorter
  // than its time budget (AWS refuses one too). Storage errors while loading
  // checkpoints are returned and nothing starts.
  Status Start();
  // Drains and joins (see "Lifecycle" in the file comment); releases the lease.
  // Idempotent.
  void Stop();

  ExecutionHistory& history() { return history_; }
  // This node's lease and claims (taken by Start, released by Stop).
  ClusterMembership& membership() { return membership_; }
  // The invocations running now (tests register a stand-in for one).
  LiveInvocations& live_invocations() { return live_; }
  // Keys whose latest history row is `started` by an invocation that no longer runs
  // (its process died, or it overran its mapping's time budget), written in
  // [since, until) (micros), oldest first, at most `limit`: work a crash abandoned.
  // Replay re-runs them like failed keys.
  // Only work that is still there: a queue message's row counts while the message is
  // in its queue or dead-letter queue. A dead invocation whose message is gone (its
  // handler deleted it, e.g. done or replaced by a delayed copy, and the process died
  // before the runtime wrote the outcome) left nothing to run: its row is resolved
  // here, once, with the `deferred` row the runtime would have written, and is not
  // listed. (Storage errors are returned.)
  Result<std::vector<ExecutionRow>> ListAbandoned(int64_t since_micros,
                                                  int64_t until_micros, int limit);
  std::vector<MappingStats> Stats() const;
  // Every shard a stream mapping has worked on, after its latest step.
  std::vector<ShardProgress> StreamProgress() const;

  // What Replay did with one failed key.
  struct ReplayItem {
    std::string key;
    std::string source;  // the mapping
    // "succeeded" / "failed": the stream record was run again, with that result;
    // "redriven": the queue message went back from the dead-letter queue to its queue
    // (the consumers run it again); "skipped": the key is no longer failed (a retry
    // succeeded meanwhile, or one is running); "not-replayable": the record has left
    // the stream (seed 000's reprocess is the remedy), the message is in no
    // dead-letter queue, or the key belongs to no mapping of this runtime.
    std::string outcome;
    std::string detail;
  };
  // Seed 002's replay: re-runs only the keys whose latest history row is `failed`
  // (or an abandoned `started`: see ListAbandoned), written in [since, until)
  // (micros), at most `limit` keys, through the same
  // Begin/Finish atomic-counter guard as a delivery, so a replay racing a redelivery
  // or another replay runs each key at most once. Stream work: the record is read
  // again from the feed and given alone to its mapping's handler (keys of mappings
  // with a custom history_key are not replayable). Queue work: the message is
  // redriven from its queue's dead-letter queue. Errors: storage errors.
  Result<std::vector<ReplayItem>> Replay(int64_t since_micros, int64_t until_micros,
                                         int limit);

 private:
  struct ShardState;
  struct StreamState;
  struct QueueState;
  struct Task {
    StreamState* mapping;
    int shard;
    int64_t head;
  };

  void DispatchLoop(int64_t first_prune_micros);
  // The claim round (docs/cluster.md "One consumer per change-feed shard"), in three
  // steps so that the database is never called under mu_: what each shard's claim is now
  // (under mu_), the claims renewed, taken up to this runtime's share and given up past
  // it (database only), and the outcome applied (under mu_; a shard taken starts from the
  // checkpoint read with its claim).
  struct ClaimRound;
  ClaimRound PlanClaimRound() REQUIRES(mu_);
  void RunClaimRound(ClaimRound& round) EXCLUDES(mu_);
  void ApplyClaimRound(const ClaimRound& round) REQUIRES(mu_);
  void WorkerLoop();
  void ConsumerLoop(QueueState* mapping);
  // Runs one step of a shard: read a batch or (re)try the pending one.
  void RunShardStep(StreamState& mapping, int shard, ShardState& state, int64_t head);
  Status InvokeStream(StreamState& mapping, int shard,
                      const std::vector<StreamRecord>& batch);
  Result<ReplayItem> ReplayStream(StreamState& mapping, const ExecutionRow& row);
  Result<ReplayItem> ReplayQueue(QueueState& mapping, const ExecutionRow& row);
  void SkipRecords(StreamState& mapping, int shard, ShardState& state,
                   const std::vector<StreamRecord>& batch, const std::string& reason);
  void Advance(StreamState& mapping, int shard, ShardState& state, int64_t sequence);
  void PublishProgress(StreamState& mapping, int shard, const ShardState& state);
  // One receive of the mapping's queue and the handler on what came (counted as
  // running throughout). Errors: the receive's.
  Status ReceiveAndProcess(QueueState& mapping);
  void ProcessMessages(QueueState& mapping, const std::vector<ReceivedMessage>& messages);
  // Appends `deferred` for `row`, the `started` row of a dead invocation of `m` whose
  // message is gone (see ListAbandoned), if it is still the key's latest.
  Status ResolveGoneMessage(const QueueMapping& m, const ExecutionRow& row);
  void Notify(const RuntimeEvent& event);
  // Waits on the stop condition until `deadline_micros` or Stop(). False once stopping.
  bool PauseUntil(int64_t deadline_micros);

  Clock* clock_;
  FaultInjector* faults_;
  Options options_;
  LiveInvocations live_;          // declared before history_, which points at it
  ClusterMembership membership_;  // likewise
  ExecutionHistory history_;

  mutable Mutex mu_;
  CondVar dispatch_cv_;  // dispatcher: new records, finished tasks, stop
  CondVar work_cv_;      // stream workers: tasks, stop
  CondVar stop_cv_;      // queue consumers pausing after errors
  bool started_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool wake_ GUARDED_BY(mu_) = true;         // re-evaluate shards
  bool heads_dirty_ GUARDED_BY(mu_) = true;  // re-read feed heads
  // The dispatcher waits out the batching window: commits only mark the heads dirty.
  bool in_batching_window_ GUARDED_BY(mu_) = false;
  std::deque<Task> tasks_ GUARDED_BY(mu_);
  int consumers_running_ GUARDED_BY(mu_) = 0;

  std::vector<std::unique_ptr<StreamState>> streams_;  // fixed after Start()
  std::vector<std::unique_ptr<QueueState>> queues_;    // fixed after Start()
  std::vector<std::thread> threads_;
};

}  // namespace sheetlog
