#include "emulator/runtime/function_runtime.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <exception>
#include <set>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/env/uuid.h"

namespace sheetlog {

struct FunctionRuntime::ShardState {
  // Read by the dispatcher only while !in_flight; written by the shard's task while
  // in_flight. The in_flight hand-off happens under mu_.
  bool in_flight = false;    // GUARDED_BY(mu_)
  int64_t cursor = 0;        // checkpointed sequence
  bool has_pending = false;  // a read batch is not finished
  int64_t next_attempt_micros = 0;

  // Owned by the shard's task.
  std::deque<std::vector<StreamRecord>> pending;  // front first; halves after bisect
  int64_t range_end = 0;  // checkpoint once `pending` is done (covers filtered records)
  int attempts = 0;       // failed attempts of pending.front()
  Status last_error;
};

struct FunctionRuntime::StreamState {
  StreamMapping config;
  int64_t max_age_micros = 0;  // resolved at Start()
  int subscription = 0;
  std::map<int, int64_t> checkpoints;  // loaded at Start()
  std::map<int, int64_t> heads;        // GUARDED_BY(mu_)
  std::map<int, ShardState> shards;    // GUARDED_BY(mu_) (the map; see ShardState)
  std::atomic<int64_t> invocations{0}, failures{0}, skipped{0}, duplicates{0};
  std::atomic<int64_t> running{0}, abandoned{0};
  // What ShardProgress() reports, published by the shard's task after each step.
  std::mutex progress_mu;
  std::map<int, ShardProgress> progress;  // GUARDED_BY(progress_mu)
};

struct FunctionRuntime::QueueState {
  QueueMapping config;
  std::atomic<int64_t> invocations{0}, failures{0}, skipped{0}, duplicates{0};
  std::atomic<int64_t> running{0}, abandoned{0};
};

namespace {

// Counts one invocation under way for as long as it lives.
class RunningCount {
 public:
  explicit RunningCount(std::atomic<int64_t>& count) : count_(count) {
    count_.fetch_add(1);
  }
  ~RunningCount() { count_.fetch_sub(1); }
  RunningCount(const RunningCount&) = delete;
  RunningCount& operator=(const RunningCount&) = delete;

 private:
  std::atomic<int64_t>& count_;
};

std::string DefaultStreamKey(const std::string& mapping, const StreamRecord& record) {
  return mapping + ":" + std::to_string(record.shard) + ":" +
         std::to_string(record.sequence);
}

int64_t BackoffMicros(const StreamMapping& m, int attempts) {
  int64_t delay = m.retry_base_micros;
  for (int i = 1; i < attempts && delay < m.retry_max_micros; ++i) delay *= 2;
  return std::min(delay, m.retry_max_micros);
}

template <typename Handler, typename Batch>
Status CallHandler(const Handler& handler, const Batch& batch, InvocationContext& ctx) {
  try {
    return handler(batch, ctx);
  } catch (const std::exception& e) {
    return Internal(std::string("handler threw: ") + e.what());
  } catch (...) {
    return Internal("handler threw a non-exception");
  }
}

bool IsBusy(const Claim& claim) {
  return claim.outcome == BeginOutcome::kRunningElsewhere ||
         claim.outcome == BeginOutcome::kLostRace;
}

// A claim that proceeds over a `started` row: the work's earlier invocation died.
bool TakesOverAbandoned(const Claim& claim) {
  return claim.outcome == BeginOutcome::kProceed && claim.latest &&
         claim.latest->status == ExecStatus::kStarted;
}

}  // namespace

FunctionRuntime::FunctionRuntime(Database* db, Clock* clock, FaultInjector* faults)
    : FunctionRuntime(db, clock, faults, Options()) {}

FunctionRuntime::FunctionRuntime(Database* db, Clock* clock, FaultInjector* faults,
                                 Options options)
    : db_(db),
      clock_(clock),
      faults_(faults),
      options_(std::move(options)),
      history_(db, clock, faults) {
  history_.set_live_invocations(&live_);
}

FunctionRuntime::~FunctionRuntime() { Stop(); }

Status FunctionRuntime::AddStreamMapping(StreamMapping mapping) {
  if (mapping.name.empty()) return InvalidArgument("a mapping needs a name");
  if (mapping.feed == nullptr) return InvalidArgument("stream mapping needs a feed");
  if (!mapping.handler) return InvalidArgument("stream mapping needs a handler");
  if (mapping.batch_size < 1 || mapping.batch_size > ChangeFeed::kMaxReadLimit) {
    return InvalidArgument("batch_size must be in 1..10000");
  }
  if (mapping.time_budget_micros <= 0 || mapping.retry_base_micros <= 0 ||
      mapping.retry_max_micros < mapping.retry_base_micros) {
    return InvalidArgument("time budget and retry delays must be positive");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return FailedPrecondition("add mappings before Start()");
  for (const auto& s : streams_) {
    if (s->config.name == mapping.name) return InvalidArgument("duplicate mapping name");
  }
  for (const auto& q : queues_) {
    if (q->config.name == mapping.name) return InvalidArgument("duplicate mapping name");
  }
  auto state = std::make_unique<StreamState>();
  state->config = std::move(mapping);
  streams_.push_back(std::move(state));
  return Status::OK();
}

Status FunctionRuntime::AddQueueMapping(QueueMapping mapping) {
  if (mapping.name.empty()) return InvalidArgument("a mapping needs a name");
  if (mapping.queues == nullptr || mapping.queue.empty()) {
    return InvalidArgument("queue mapping needs a queue service and a queue name");
  }
  if (!mapping.handler) return InvalidArgument("queue mapping needs a handler");
  if (mapping.concurrency < 1 || mapping.concurrency > 64) {
    return InvalidArgument("concurrency must be in 1..64");
  }
  if (mapping.batch_size < 1 || mapping.batch_size > QueueService::kMaxReceiveBatch) {
    return InvalidArgument("batch_size must be in 1..10");
  }
  if (mapping.time_budget_micros <= 0 || mapping.error_backoff_micros <= 0) {
    return InvalidArgument("time budget and error backoff must be positive");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (started_) return FailedPrecondition("add mappings before Start()");
  for (const auto& s : streams_) {
    if (s->config.name == mapping.name) return InvalidArgument("duplicate mapping name");
  }
  for (const auto& q : queues_) {
    if (q->config.name == mapping.name) return InvalidArgument("duplicate mapping name");
  }
  auto state = std::make_unique<QueueState>();
  state->config = std::move(mapping);
  queues_.push_back(std::move(state));
  return Status::OK();
}

Status FunctionRuntime::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_ || stopping_) {
      return FailedPrecondition("runtime already started (or stopped)");
    }
  }
  // AWS refuses an SQS event source whose visibility timeout is shorter than the
  // function's timeout: a message could be redelivered while its first invocation is
  // still legitimately running.
  for (auto& q : queues_) {
    const QueueMapping& m = q->config;
    int64_t visibility_s = 0;
    if (m.visibility_timeout_s) {
      visibility_s = *m.visibility_timeout_s;
    } else {
      ASSIGN_OR_RETURN(QueueOptions queue, m.queues->GetQueue(m.queue));
      visibility_s = queue.visibility_timeout_s;
    }
    if (visibility_s * 1000000 < m.time_budget_micros) {
      return InvalidArgument("queue mapping " + m.name + ": the visibility timeout of " +
                             m.queue + " (" + std::to_string(visibility_s) +
                             " s) is shorter than the function's time budget (" +
                             std::to_string(m.time_budget_micros / 1000000) + " s)");
    }
  }
  // Load positions before any thread runs.
  for (auto& s : streams_) {
    StreamMapping& m = s->config;
    ASSIGN_OR_RETURN(StreamConfig config, m.feed->Config());
    s->max_age_micros =
        m.max_record_age_micros >= 0 ? m.max_record_age_micros : config.retention_micros;
    ASSIGN_OR_RETURN(s->checkpoints, m.feed->Checkpoints(m.name));
    if (s->checkpoints.empty() &&
        m.starting_position == StreamMapping::StartingPosition::kLatest) {
      ASSIGN_OR_RETURN(auto heads, m.feed->LatestSequences());
      for (const auto& [shard, head] : heads) {
        RETURN_IF_ERROR(m.feed->SaveCheckpoint(m.name, shard, head));
      }
      s->checkpoints = heads;
    }
  }

  // Subscribed before taking mu_: the feed calls back under its own lock, then takes
  // mu_, so the opposite order here could deadlock with a concurrent commit.
  for (auto& s : streams_) {
    s->subscription = s->config.feed->Subscribe([this] {
      std::lock_guard<std::mutex> guard(mu_);
      heads_dirty_ = true;
      wake_ = true;
      dispatch_cv_.notify_one();
    });
  }
  std::lock_guard<std::mutex> lock(mu_);
  started_ = true;
  if (!streams_.empty()) {
    threads_.emplace_back([this] { DispatchLoop(); });
    for (int i = 0; i < std::max(1, options_.stream_workers); ++i) {
      threads_.emplace_back([this] { WorkerLoop(); });
    }
  }
  for (auto& q : queues_) {
    for (int i = 0; i < q->config.concurrency; ++i) {
      ++consumers_running_;
      QueueState* state = q.get();
      threads_.emplace_back([this, state] { ConsumerLoop(state); });
    }
  }
  return Status::OK();
}

void FunctionRuntime::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;              // also makes a later Start() fail
    if (threads_.empty()) return;  // never started, or already stopped
    tasks_.clear();                // queued shard steps never start
  }
  dispatch_cv_.notify_all();
  work_cv_.notify_all();
  stop_cv_.notify_all();
  for (auto& s : streams_) {
    if (s->subscription != 0) s->config.feed->Unsubscribe(s->subscription);
    s->subscription = 0;
  }
  // Queue consumers may be blocked in WaitForMessages. A wake-up that arrives before a
  // consumer blocks is not remembered, so repeat it until every consumer has left.
  std::set<QueueService*> services;
  for (auto& q : queues_) services.insert(q->config.queues);
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (consumers_running_ > 0) {
      lock.unlock();
      for (QueueService* service : services) service->WakeWaiters();
      lock.lock();
      clock_->WaitUntil(stop_cv_, lock, clock_->NowMicros() + 1000);
    }
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
}

std::vector<MappingStats> FunctionRuntime::Stats() const {
  std::vector<MappingStats> out;
  for (const auto& s : streams_) {
    out.push_back({s->config.name, s->invocations.load(), s->failures.load(),
                   s->skipped.load(), s->duplicates.load(), s->running.load(),
                   s->abandoned.load()});
  }
  for (const auto& q : queues_) {
    out.push_back({q->config.name, q->invocations.load(), q->failures.load(),
                   q->skipped.load(), q->duplicates.load(), q->running.load(),
                   q->abandoned.load()});
  }
  return out;
}

Result<std::vector<ExecutionRow>> FunctionRuntime::ListAbandoned(int64_t since_micros,
                                                                 int64_t until_micros,
                                                                 int limit) {
  // A row is abandoned by its mapping's own time budget; the shortest one bounds the
  // query and each row is checked against its own mapping below.
  int64_t shortest_budget = kDefaultTimeBudgetMicros;
  std::map<std::string, int64_t> budget_of;
  std::map<std::string, const QueueMapping*> queue_of;
  for (const auto& s : streams_) budget_of[s->config.name] = s->config.time_budget_micros;
  for (const auto& q : queues_) {
    budget_of[q->config.name] = q->config.time_budget_micros;
    queue_of[q->config.name] = &q->config;
  }
  for (const auto& [name, budget] : budget_of) {
    shortest_budget = std::min(shortest_budget, budget);
  }
  std::vector<ExecutionRow> out;
  // Rows resolved below drop out of the history's answer, so ask again until a query
  // resolves nothing (each round resolves at least one row or is the last).
  while (true) {
    ASSIGN_OR_RETURN(
        std::vector<ExecutionRow> rows,
        history_.ListAbandoned(since_micros, until_micros, shortest_budget, limit));
    const int64_t now = clock_->NowMicros();
    out.clear();
    int resolved = 0;
    for (ExecutionRow& row : rows) {
      auto budget = budget_of.find(row.source);
      if (budget != budget_of.end() && !history_.IsAbandoned(row, budget->second, now)) {
        continue;
      }
      auto queue = queue_of.find(row.source);
      if (queue != queue_of.end() && !row.detail.empty()) {
        // The runtime keeps the message id as the row's detail (whatever the key).
        ASSIGN_OR_RETURN(std::optional<std::string> holder,
                         queue->second->queues->QueueOfMessage(row.detail));
        if (!holder) {
          // Nothing left to redeliver or replay. A live invocation (over its budget)
          // writes its own outcome; a dead one's is recorded for it.
          if (!live_.Contains(row.invocation_id)) {
            RETURN_IF_ERROR(ResolveGoneMessage(*queue->second, row));
            ++resolved;
          }
          continue;
        }
      }
      out.push_back(std::move(row));
    }
    if (resolved == 0) break;
  }
  return out;
}

Status FunctionRuntime::ResolveGoneMessage(const QueueMapping& m,
                                           const ExecutionRow& row) {
  // The runtime deletes a message only after writing its outcome row, and any later
  // delivery of the message would have written a newer row for its key; so a message
  // that is gone while this dead invocation's `started` row is still the latest was
  // deleted by that invocation's handler before the process died (its work done, or
  // replaced by a delayed copy of itself, which runs under its own key: the snapshot
  // worker's deferral), or expired by retention. Record what the runtime would have
  // recorded after such a handler: `deferred` (neither failed nor abandoned work).
  ASSIGN_OR_RETURN(bool written,
                   history_.RecordIfLatest(
                       row, ExecStatus::kDeferred,
                       "handled by the handler; recorded after its invocation died: "
                       "message " +
                           row.detail + " was gone, nothing left to redeliver"));
  if (written) {
    spdlog::info(
        "runtime: {}: {}: dead invocation {} had already disposed of message {}; its "
        "started row is resolved as deferred",
        m.name, row.partition_key, row.invocation_id, row.detail);
  }
  return Status::OK();  // not written: a newer row came first, not abandoned either
}

void FunctionRuntime::Notify(const RuntimeEvent& event) {
  if (options_.observer) options_.observer(event);
}

bool FunctionRuntime::PauseUntil(int64_t deadline_micros) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (clock_->WaitUntil(stop_cv_, lock, deadline_micros)) break;
  }
  return !stopping_;
}

// ---------------------------------------------------------------------------
// Stream mappings

void FunctionRuntime::DispatchLoop() {
  int64_t next_prune = options_.prune_interval_micros > 0
                           ? clock_->NowMicros() + options_.prune_interval_micros
                           : INT64_MAX;
  int64_t heads_retry_at = INT64_MAX;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_ = false;
    int64_t now = clock_->NowMicros();
    if (heads_dirty_ || now >= heads_retry_at) {
      heads_dirty_ = false;
      heads_retry_at = INT64_MAX;
      lock.unlock();
      std::map<ChangeFeed*, Result<std::map<int, int64_t>>> heads;
      for (auto& s : streams_) {
        if (heads.count(s->config.feed) == 0) {
          heads.emplace(s->config.feed, s->config.feed->LatestSequences());
        }
      }
      lock.lock();
      for (auto& s : streams_) {
        const auto& result = heads.at(s->config.feed);
        if (result.ok()) {
          s->heads = *result;
        } else {
          spdlog::warn("runtime: reading stream heads for {} failed: {}", s->config.name,
                       result.status().ToString());
          heads_retry_at = clock_->NowMicros() + 1000000;
        }
      }
      if (stopping_) break;
    }
    now = clock_->NowMicros();
    if (now >= next_prune) {
      lock.unlock();
      std::set<ChangeFeed*> feeds;
      for (auto& s : streams_) feeds.insert(s->config.feed);
      for (ChangeFeed* feed : feeds) {
        Result<int64_t> pruned = feed->Prune();
        if (!pruned.ok()) {
          spdlog::warn("runtime: pruning stream {} failed: {}", feed->stream(),
                       pruned.status().ToString());
        }
      }
      lock.lock();
      now = clock_->NowMicros();
      next_prune = now + options_.prune_interval_micros;
      if (stopping_) break;
    }

    int64_t next_wake = std::min(next_prune, heads_retry_at);
    bool scheduled = false;
    for (auto& s : streams_) {
      for (const auto& [shard, head] : s->heads) {
        auto [it, inserted] = s->shards.try_emplace(shard);
        ShardState& st = it->second;
        if (inserted) {
          auto cp = s->checkpoints.find(shard);
          st.cursor = cp == s->checkpoints.end() ? 0 : cp->second;
        }
        if (st.in_flight) continue;
        if (!st.has_pending && head <= st.cursor) continue;
        if (st.next_attempt_micros > now) {
          next_wake = std::min(next_wake, st.next_attempt_micros);
          continue;
        }
        st.in_flight = true;
        tasks_.push_back(Task{s.get(), shard, head});
        scheduled = true;
      }
    }
    if (scheduled) work_cv_.notify_all();
    if (wake_ || heads_dirty_) continue;
    if (next_wake == INT64_MAX) {
      dispatch_cv_.wait(lock);
    } else {
      clock_->WaitUntil(dispatch_cv_, lock, next_wake);
    }
  }
}

void FunctionRuntime::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
    if (stopping_) return;
    Task task = tasks_.front();
    tasks_.pop_front();
    ShardState& state = task.mapping->shards.at(task.shard);
    lock.unlock();
    RunShardStep(*task.mapping, task.shard, state, task.head);
    PublishProgress(*task.mapping, task.shard, state);
    lock.lock();
    state.in_flight = false;
    wake_ = true;
    dispatch_cv_.notify_one();
  }
}

void FunctionRuntime::PublishProgress(StreamState& mapping, int shard,
                                      const ShardState& state) {
  ShardProgress progress;
  progress.mapping = mapping.config.name;
  progress.shard = shard;
  progress.checkpoint = state.cursor;
  progress.failed_attempts = state.attempts;
  if (!state.last_error.ok() && state.attempts > 0) {
    progress.last_error = state.last_error.ToString();
  }
  if (!state.pending.empty() && !state.pending.front().empty()) {
    progress.oldest_pending_micros = state.pending.front().front().created_micros;
  }
  progress.next_attempt_micros = state.attempts > 0 ? state.next_attempt_micros : 0;
  std::lock_guard<std::mutex> lock(mapping.progress_mu);
  mapping.progress[shard] = std::move(progress);
}

std::vector<ShardProgress> FunctionRuntime::StreamProgress() const {
  std::vector<ShardProgress> out;
  for (const auto& s : streams_) {
    std::lock_guard<std::mutex> lock(s->progress_mu);
    for (const auto& [shard, progress] : s->progress) out.push_back(progress);
  }
  return out;
}

void FunctionRuntime::Advance(StreamState& mapping, int shard, ShardState& state,
                              int64_t sequence) {
  Status saved =
      mapping.config.feed->SaveCheckpoint(mapping.config.name, shard, sequence);
  if (!saved.ok()) {
    // The records will be read and delivered again; the history makes that a no-op.
    spdlog::warn("runtime: {} shard {}: saving checkpoint {} failed: {}",
                 mapping.config.name, shard, sequence, saved.ToString());
    state.next_attempt_micros = clock_->NowMicros() + mapping.config.retry_base_micros;
    return;
  }
  state.cursor = std::max(state.cursor, sequence);
}

void FunctionRuntime::SkipRecords(StreamState& mapping, int shard, ShardState& state,
                                  const std::vector<StreamRecord>& batch,
                                  const std::string& reason) {
  const StreamMapping& m = mapping.config;
  spdlog::warn("runtime: {} shard {}: skipping records {}..{}: {}", m.name, shard,
               batch.front().sequence, batch.back().sequence, reason);
  if (m.keep_history) {
    for (const StreamRecord& r : batch) {
      std::string key = m.history_key ? m.history_key(r) : DefaultStreamKey(m.name, r);
      Status recorded =
          history_.Record({key, m.name, "", r.keys.dump()}, ExecStatus::kFailed, reason);
      if (!recorded.ok()) {
        // Without the row a replay would not know: keep the batch and try again.
        state.next_attempt_micros = clock_->NowMicros() + m.retry_base_micros;
        return;
      }
    }
  }
  mapping.skipped.fetch_add(static_cast<int64_t>(batch.size()));
  state.pending.pop_front();
  state.attempts = 0;
  const int64_t checkpoint =
      state.pending.empty() ? state.range_end : batch.back().sequence;
  Advance(mapping, shard, state, checkpoint);
  state.has_pending = !state.pending.empty();
  Notify({RuntimeEvent::Kind::kRecordsSkipped, m.name, shard, batch.front().sequence,
          checkpoint, batch.size(), "", Unavailable(reason)});
}

void FunctionRuntime::RunShardStep(StreamState& mapping, int shard, ShardState& state,
                                   int64_t head) {
  const StreamMapping& m = mapping.config;
  if (state.pending.empty()) {
    // Read the next batch: up to batch_size matching records, skipping the rest.
    const int page = std::min(ChangeFeed::kMaxReadLimit, std::max(100, m.batch_size * 4));
    Result<std::vector<StreamRecord>> records = m.feed->Read(shard, state.cursor, page);
    if (!records.ok()) {
      spdlog::warn("runtime: {} shard {}: read failed: {}", m.name, shard,
                   records.status().ToString());
      state.next_attempt_micros = clock_->NowMicros() + m.retry_base_micros;
      return;
    }
    if (records->empty()) {
      // Everything up to `head` was pruned before this mapping read it: lost, as on
      // AWS. Move on; the reprocess tool repairs the side effects.
      if (head > state.cursor) {
        Notify({RuntimeEvent::Kind::kRecordsLost, m.name, shard, state.cursor + 1, head,
                static_cast<size_t>(head - state.cursor), "",
                Gone("records pruned before they were processed")});
        Advance(mapping, shard, state, head);
      }
      return;
    }
    if (records->front().sequence > state.cursor + 1) {
      const int64_t first_lost = state.cursor + 1;
      const int64_t last_lost = records->front().sequence - 1;
      spdlog::warn("runtime: {} shard {}: records {}..{} were pruned before processing",
                   m.name, shard, first_lost, last_lost);
      Notify({RuntimeEvent::Kind::kRecordsLost, m.name, shard, first_lost, last_lost,
              static_cast<size_t>(last_lost - first_lost + 1), "",
              Gone("records pruned before they were processed")});
    }
    std::vector<StreamRecord> batch;
    int64_t end = state.cursor;
    for (StreamRecord& r : *records) {
      end = r.sequence;
      if (m.filter.Matches(r)) {
        batch.push_back(std::move(r));
        if (static_cast<int>(batch.size()) >= m.batch_size) break;
      }
    }
    if (batch.empty()) {
      const int64_t first = records->front().sequence;
      Advance(mapping, shard, state, end);
      Notify({RuntimeEvent::Kind::kRecordsFiltered, m.name, shard, first, end,
              records->size(), "", Status::OK()});
      return;
    }
    state.pending.push_back(std::move(batch));
    state.range_end = end;
    state.attempts = 0;
    state.has_pending = true;
  }

  const std::vector<StreamRecord> batch = state.pending.front();
  const int64_t now = clock_->NowMicros();
  const int64_t age = now - batch.front().created_micros;  // the oldest: first in order
  if (age > mapping.max_age_micros) {
    std::string reason = "skipped: record age " + std::to_string(age / 1000000) +
                         " s exceeds the maximum of " +
                         std::to_string(mapping.max_age_micros / 1000000) + " s";
    if (!state.last_error.ok()) reason += "; last error: " + state.last_error.ToString();
    SkipRecords(mapping, shard, state, batch, reason);
    return;
  }
  if (m.max_retry_attempts >= 0 && state.attempts > m.max_retry_attempts) {
    SkipRecords(mapping, shard, state, batch,
                "skipped after " + std::to_string(state.attempts) +
                    " failed attempts; last error: " + state.last_error.ToString());
    return;
  }

  Status status = InvokeStream(mapping, shard, batch);
  if (status.ok() && faults_ != nullptr &&
      faults_->ShouldDuplicate("runtime.stream.duplicate")) {
    Status again = InvokeStream(mapping, shard, batch);  // at-least-once delivery
    if (!again.ok()) {
      spdlog::info("runtime: {} shard {}: duplicate delivery failed: {}", m.name, shard,
                   again.ToString());
    }
  }
  if (status.ok() && faults_ != nullptr) {
    status = faults_->Hit("runtime.after_handler_before_checkpoint");
  }
  if (status.ok()) {
    state.pending.pop_front();
    state.attempts = 0;
    state.last_error = Status::OK();
    const int64_t checkpoint =
        state.pending.empty() ? state.range_end : batch.back().sequence;
    Advance(mapping, shard, state, checkpoint);
    state.has_pending = !state.pending.empty();
    Notify({RuntimeEvent::Kind::kBatchSucceeded, m.name, shard, batch.front().sequence,
            checkpoint, batch.size(), "", Status::OK()});
    return;
  }

  mapping.failures.fetch_add(1);
  state.last_error = status;
  if (m.bisect_on_error && batch.size() > 1) {
    // Retry each half at once, front half first, to isolate the failing record.
    const size_t half = batch.size() / 2;
    state.pending.pop_front();
    state.pending.emplace_front(batch.begin() + static_cast<std::ptrdiff_t>(half),
                                batch.end());
    state.pending.emplace_front(batch.begin(),
                                batch.begin() + static_cast<std::ptrdiff_t>(half));
    state.next_attempt_micros = 0;
  } else {
    ++state.attempts;
    // Out of retries: the next step skips the batch, so there is nothing to wait for.
    const bool exhausted =
        m.max_retry_attempts >= 0 && state.attempts > m.max_retry_attempts;
    state.next_attempt_micros =
        exhausted ? 0 : clock_->NowMicros() + BackoffMicros(m, state.attempts);
  }
  Notify({RuntimeEvent::Kind::kBatchFailed, m.name, shard, batch.front().sequence,
          batch.back().sequence, batch.size(), "", status});
}

Status FunctionRuntime::InvokeStream(StreamState& mapping, int shard,
                                     const std::vector<StreamRecord>& batch) {
  RunningCount running(mapping.running);
  const StreamMapping& m = mapping.config;
  const std::string invocation_id = NewRandomUuid();
  LiveInvocation live(&live_, invocation_id);
  const int64_t deadline = clock_->NowMicros() + m.time_budget_micros;

  std::vector<StreamRecord> to_run;
  std::vector<std::string> keys;
  std::vector<Claim> claims;
  if (m.keep_history) {
    std::vector<BeginRequest> requests;
    for (const StreamRecord& r : batch) {
      requests.push_back({m.history_key ? m.history_key(r) : DefaultStreamKey(m.name, r),
                          m.name, invocation_id, r.keys.dump()});
    }
    ASSIGN_OR_RETURN(claims, history_.BeginBatch(requests, m.time_budget_micros));
    bool busy = false;
    for (size_t i = 0; i < claims.size(); ++i) {
      if (IsBusy(claims[i])) busy = true;
      if (claims[i].outcome == BeginOutcome::kAlreadySucceeded)
        mapping.duplicates.fetch_add(1);
      if (TakesOverAbandoned(claims[i])) mapping.abandoned.fetch_add(1);
    }
    if (busy) {
      // A concurrent duplicate holds part of this batch: release what we claimed and
      // retry the batch later (by then it has finished, or its budget has run out).
      std::vector<ExecutionHistory::Outcome> release;
      for (const Claim& c : claims) {
        if (c.outcome == BeginOutcome::kProceed) {
          release.push_back({&c, ExecStatus::kDeferred,
                             "another invocation is running part of this batch"});
        }
      }
      RETURN_IF_ERROR(history_.FinishBatch(release));
      return Unavailable(
          "a concurrent duplicate invocation is running records of shard " +
          std::to_string(shard));
    }
    for (size_t i = 0; i < claims.size(); ++i) {
      if (claims[i].outcome == BeginOutcome::kProceed) {
        to_run.push_back(batch[i]);
        keys.push_back(claims[i].request.partition_key);
      }
    }
    if (to_run.empty()) return Status::OK();  // all duplicates of finished work
  } else {
    to_run = batch;
  }

  InvocationContext ctx(clock_, m.name, invocation_id, deadline, keys);
  mapping.invocations.fetch_add(1);
  Status status =
      faults_ != nullptr ? faults_->Hit("runtime.before_handler") : Status::OK();
  if (status.ok()) status = CallHandler(m.handler, to_run, ctx);
  if (status.ok() && clock_->NowMicros() > deadline) {
    status = Unavailable("invocation exceeded its time budget of " +
                         std::to_string(m.time_budget_micros / 1000000) + " s");
  }
  if (faults_ != nullptr)
    RETURN_IF_ERROR(faults_->Hit("runtime.after_handler_before_history"));
  if (m.keep_history) {
    std::vector<ExecutionHistory::Outcome> outcomes;
    for (const Claim& c : claims) {
      if (c.outcome != BeginOutcome::kProceed) continue;
      outcomes.push_back({&c, status.ok() ? ExecStatus::kSucceeded : ExecStatus::kFailed,
                          status.ok() ? "" : status.ToString()});
    }
    RETURN_IF_ERROR(history_.FinishBatch(outcomes));
  }
  return status;
}

// ---------------------------------------------------------------------------
// Replay (seed 002)

Result<std::vector<FunctionRuntime::ReplayItem>> FunctionRuntime::Replay(
    int64_t since_micros, int64_t until_micros, int limit) {
  ASSIGN_OR_RETURN(std::vector<ExecutionRow> failed,
                   history_.ListFailed(since_micros, until_micros, limit));
  // Work whose invocation died (a crash between `started` and its outcome row) is
  // replayed like failed work.
  if (static_cast<int>(failed.size()) < limit) {
    ASSIGN_OR_RETURN(std::vector<ExecutionRow> abandoned,
                     ListAbandoned(since_micros, until_micros,
                                   limit - static_cast<int>(failed.size())));
    failed.insert(failed.end(), abandoned.begin(), abandoned.end());
  }
  std::vector<ReplayItem> items;
  for (const ExecutionRow& row : failed) {
    Result<ReplayItem> item =
        ReplayItem{row.partition_key, row.source, "not-replayable",
                   "no mapping named '" + row.source + "' in this runtime"};
    for (auto& stream : streams_) {
      if (stream->config.name == row.source) item = ReplayStream(*stream, row);
    }
    for (auto& queue : queues_) {
      if (queue->config.name == row.source) item = ReplayQueue(*queue, row);
    }
    RETURN_IF_ERROR(item.status());
    items.push_back(std::move(item).value());
  }
  return items;
}

Result<FunctionRuntime::ReplayItem> FunctionRuntime::ReplayStream(
    StreamState& mapping, const ExecutionRow& row) {
  const StreamMapping& m = mapping.config;
  ReplayItem item{row.partition_key, m.name, "not-replayable", ""};
  // The default key is "<mapping>:<shard>:<sequence>".
  const std::string prefix = m.name + ":";
  const size_t colon = row.partition_key.rfind(':');
  int shard = -1;
  int64_t sequence = -1;
  if (!m.history_key && row.partition_key.rfind(prefix, 0) == 0 &&
      colon != std::string::npos && colon > prefix.size()) {
    shard =
        std::atoi(row.partition_key.substr(prefix.size(), colon - prefix.size()).c_str());
    sequence = std::atoll(row.partition_key.substr(colon + 1).c_str());
  }
  if (sequence < 1) {
    item.detail = "not a record key of mapping " + m.name;
    return item;
  }
  ASSIGN_OR_RETURN(std::vector<StreamRecord> records,
                   m.feed->Read(shard, sequence - 1, 1));
  if (records.empty() || records.front().sequence != sequence) {
    item.detail = "the record has left the stream (past its retention)";
    return item;
  }
  ASSIGN_OR_RETURN(std::optional<ExecutionRow> latest,
                   history_.Latest(row.partition_key));
  if (latest && latest->status != ExecStatus::kFailed &&
      !history_.IsAbandoned(*latest, m.time_budget_micros, clock_->NowMicros())) {
    item.outcome = "skipped";
    item.detail = "latest status is now " + std::string(ExecStatusText(latest->status));
    return item;
  }
  Status status = InvokeStream(mapping, shard, records);
  ASSIGN_OR_RETURN(latest, history_.Latest(row.partition_key));
  if (status.ok() && latest && latest->status == ExecStatus::kSucceeded) {
    item.outcome = "succeeded";
  } else if (status.ok()) {
    item.outcome = "skipped";  // the guard found it done or running elsewhere
    item.detail = "another invocation ran it";
  } else {
    item.outcome = "failed";
    item.detail = status.ToString();
    mapping.failures.fetch_add(1);
  }
  return item;
}

Result<FunctionRuntime::ReplayItem> FunctionRuntime::ReplayQueue(
    QueueState& mapping, const ExecutionRow& row) {
  const QueueMapping& m = mapping.config;
  ReplayItem item{row.partition_key, m.name, "not-replayable", ""};
  const std::string prefix = m.name + ":";
  if (m.history_key || row.partition_key.rfind(prefix, 0) != 0) {
    item.detail = "not a message key of mapping " + m.name;
    return item;
  }
  const std::string message_id = row.partition_key.substr(prefix.size());
  ASSIGN_OR_RETURN(QueueOptions queue, m.queues->GetQueue(m.queue));
  if (queue.dead_letter_queue.empty()) {
    item.detail = "queue " + m.queue + " has no dead-letter queue";
    return item;
  }
  Result<int64_t> moved = m.queues->Redrive(queue.dead_letter_queue, message_id);
  if (!moved.ok() && !moved.status().IsNotFound()) return moved.status();
  if (!moved.ok() || *moved == 0) {
    item.detail = "message " + message_id + " is not in " + queue.dead_letter_queue +
                  " (still in " + m.queue + " awaiting its retry, or gone)";
    return item;
  }
  item.outcome = "redriven";
  item.detail = "message " + message_id + " moved from " + queue.dead_letter_queue +
                " to " + m.queue;
  return item;
}

// ---------------------------------------------------------------------------
// Queue mappings

void FunctionRuntime::ConsumerLoop(QueueState* mapping) {
  const QueueMapping& m = mapping->config;
  // How long one wait lasts before the consumer re-checks (clock time).
  constexpr int64_t kIdleWaitMicros = 20LL * 1000000;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    Result<bool> ready =
        m.queues->WaitForMessages(m.queue, clock_->NowMicros() + kIdleWaitMicros);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) break;
    }
    if (!ready.ok()) {
      spdlog::warn("runtime: {}: waiting for queue {} failed: {}", m.name, m.queue,
                   ready.status().ToString());
      if (!PauseUntil(clock_->NowMicros() + m.error_backoff_micros)) break;
      continue;
    }
    if (!*ready) continue;
    Status received = ReceiveAndProcess(*mapping);
    if (!received.ok()) {
      spdlog::warn("runtime: {}: receiving from queue {} failed: {}", m.name, m.queue,
                   received.ToString());
      if (!PauseUntil(clock_->NowMicros() + m.error_backoff_micros)) break;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  --consumers_running_;
  stop_cv_.notify_all();
}

Status FunctionRuntime::ReceiveAndProcess(QueueState& mapping) {
  const QueueMapping& m = mapping.config;
  RunningCount running(mapping.running);
  ASSIGN_OR_RETURN(std::vector<ReceivedMessage> messages,
                   m.queues->Receive(m.queue, m.batch_size, m.visibility_timeout_s));
  if (messages.empty()) return Status::OK();
  ProcessMessages(mapping, messages);
  if (faults_ != nullptr && faults_->ShouldDuplicate("runtime.queue.duplicate")) {
    ProcessMessages(mapping, messages);  // at-least-once delivery
  }
  return Status::OK();
}

void FunctionRuntime::ProcessMessages(QueueState& mapping,
                                      const std::vector<ReceivedMessage>& messages) {
  const QueueMapping& m = mapping.config;
  const std::string invocation_id = NewRandomUuid();
  LiveInvocation live(&live_, invocation_id);
  const int64_t deadline = clock_->NowMicros() + m.time_budget_micros;
  auto key_of = [&](const ReceivedMessage& msg) {
    return m.history_key ? m.history_key(msg) : m.name + ":" + msg.id;
  };
  auto fail = [&](const ReceivedMessage& msg, const Status& why) {
    mapping.failures.fetch_add(1);
    Status recorded =
        m.queues->RecordFailure(m.queue, msg.receipt_handle, why.ToString());
    if (!recorded.ok() && !recorded.IsConditionFailed() && !recorded.IsNotFound()) {
      spdlog::warn("runtime: {}: recording failure of {} failed: {}", m.name, msg.id,
                   recorded.ToString());
    }
    Notify({RuntimeEvent::Kind::kMessageFailed, m.name, -1, 0, 0, 1, msg.id, why});
  };

  std::vector<ReceivedMessage> to_run;
  std::vector<std::string> keys;
  std::vector<Claim> claims;  // parallel to to_run when keeping history
  if (m.keep_history) {
    std::vector<BeginRequest> requests;
    for (const ReceivedMessage& msg : messages) {
      requests.push_back({key_of(msg), m.name, invocation_id, msg.id});
    }
    Result<std::vector<Claim>> begun =
        history_.BeginBatch(requests, m.time_budget_micros);
    if (!begun.ok()) {
      for (const ReceivedMessage& msg : messages) fail(msg, begun.status());
      return;
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      const Claim& c = (*begun)[i];
      const ReceivedMessage& msg = messages[i];
      if (c.outcome == BeginOutcome::kAlreadySucceeded) {
        mapping.duplicates.fetch_add(1);
        Status deleted = m.queues->Delete(m.queue, msg.receipt_handle);
        Notify({RuntimeEvent::Kind::kMessageDuplicate, m.name, -1, 0, 0, 1, msg.id,
                deleted});
      } else if (IsBusy(c)) {
        Notify({RuntimeEvent::Kind::kMessageBusy, m.name, -1, 0, 0, 1, msg.id,
                Unavailable(std::string("concurrent duplicate: ") +
                            std::string(BeginOutcomeText(c.outcome)))});
      } else {
        if (TakesOverAbandoned(c)) mapping.abandoned.fetch_add(1);
        to_run.push_back(msg);
        keys.push_back(c.request.partition_key);
        claims.push_back(c);
      }
    }
    if (to_run.empty()) return;
  } else {
    to_run = messages;
  }

  InvocationContext ctx(clock_, m.name, invocation_id, deadline, keys);
  mapping.invocations.fetch_add(1);
  Status status =
      faults_ != nullptr ? faults_->Hit("runtime.before_handler") : Status::OK();
  if (status.ok()) status = CallHandler(m.handler, to_run, ctx);
  if (status.ok() && clock_->NowMicros() > deadline) {
    status = Unavailable("invocation exceeded its time budget of " +
                         std::to_string(m.time_budget_micros / 1000000) + " s");
  }
  if (faults_ != nullptr && !faults_->Hit("runtime.after_handler_before_history").ok()) {
    return;  // as if the process died here: the messages reappear after their timeout
  }

  enum class Fate { kDelete, kFail, kHandled };
  std::vector<Fate> fates(to_run.size());
  std::vector<Status> errors(to_run.size());
  for (size_t i = 0; i < to_run.size(); ++i) {
    const std::string& id = to_run[i].id;
    if (ctx.IsMessageHandled(id)) {
      fates[i] = Fate::kHandled;
    } else if (!status.ok()) {
      fates[i] = Fate::kFail;
      errors[i] = status;
    } else if (std::optional<std::string> failure = ctx.ItemFailure(id)) {
      fates[i] = Fate::kFail;
      errors[i] = Internal(*failure);
    } else {
      fates[i] = Fate::kDelete;
    }
  }
  if (m.keep_history) {
    std::vector<ExecutionHistory::Outcome> outcomes;
    for (size_t i = 0; i < to_run.size(); ++i) {
      switch (fates[i]) {
        case Fate::kDelete:
          outcomes.push_back({&claims[i], ExecStatus::kSucceeded, ""});
          break;
        case Fate::kFail:
          outcomes.push_back({&claims[i], ExecStatus::kFailed, errors[i].ToString()});
          break;
        case Fate::kHandled:
          outcomes.push_back(
              {&claims[i], ExecStatus::kDeferred, "handled by the handler"});
          break;
      }
    }
    Status finished = history_.FinishBatch(outcomes);
    if (!finished.ok()) {
      // Not recorded as done: do not delete; redelivery runs the work again.
      for (size_t i = 0; i < to_run.size(); ++i) {
        if (fates[i] != Fate::kHandled) fail(to_run[i], finished);
      }
      return;
    }
  }
  for (size_t i = 0; i < to_run.size(); ++i) {
    const ReceivedMessage& msg = to_run[i];
    switch (fates[i]) {
      case Fate::kHandled:
        Notify({RuntimeEvent::Kind::kMessageHandled, m.name, -1, 0, 0, 1, msg.id,
                Status::OK()});
        break;
      case Fate::kFail:
        fail(msg, errors[i]);
        break;
      case Fate::kDelete: {
        Status deleted = faults_ != nullptr
                             ? faults_->Hit("runtime.queue.after_history_before_delete")
                             : Status::OK();
        if (deleted.ok()) deleted = m.queues->Delete(m.queue, msg.receipt_handle);
        if (!deleted.ok()) {
          // Stale handle (someone received it again) or an error: the history says
          // succeeded, so the next delivery deletes it as a duplicate.
          spdlog::info("runtime: {}: deleting {} failed: {}", m.name, msg.id,
                       deleted.ToString());
        }
        Notify({RuntimeEvent::Kind::kMessageSucceeded, m.name, -1, 0, 0, 1, msg.id,
                deleted});
        break;
      }
    }
  }
}

}  // namespace sheetlog
