// FunctionRuntime's lifecycle: adding mappings, Start() (configuration checks, loading
// checkpoints, starting the threads), Stop(), and the counters. The stream path is in
// function_runtime_stream.cc, the queue path in function_runtime_queue.cc, abandoned
// work and replay in function_runtime_replay.cc.
#include "emulator/runtime/function_runtime.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "emulator/env/clock.h"
#include "emulator/runtime/function_runtime_internal.h"

namespace sheetlog {

FunctionRuntime::FunctionRuntime(Transactions* db, Clock* clock, FaultInjector* faults)
    : FunctionRuntime(db, clock, faults, Options()) {}

FunctionRuntime::FunctionRuntime(Transactions* db, Clock* clock, FaultInjector* faults,
                                 Options options)
    : clock_(clock),
      faults_(faults),
      options_(std::move(options)),
      membership_(db, clock),
      history_(db, clock, faults, &membership_) {
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
  MutexLock lock(&mu_);
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
  MutexLock lock(&mu_);
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
    MutexLock lock(&mu_);
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

  // This process's lease: other processes on the same database judge its `started`
  // rows running while it lasts, and its claims live as long (ClusterMembership).
  ClusterMembership::LeaseOptions lease;
  lease.node = options_.node;
  // Queue messages a gone process had received (its lease released at its restart,
  // or lapsed) are handed on at once instead of after their visibility timeout.
  std::set<QueueService*> services;
  for (auto& q : queues_) services.insert(q->config.queues);
  if (!services.empty()) {
    membership_.SetOwnersGoneListener([services](const std::vector<std::string>& owners) {
      for (QueueService* service : services) {
        Result<int64_t> released = service->ReleaseReceivedBy(owners);
        if (!released.ok()) {
          // They reappear after their visibility timeout instead.
          spdlog::warn(
              "runtime: releasing the queue messages of {} gone node(s) "
              "failed: {}",
              owners.size(), released.status().ToString());
        } else if (*released > 0) {
          spdlog::info(
              "runtime: {} queue message(s) held by {} gone node(s) "
              "released for redelivery",
              *released, owners.size());
        }
      }
    });
  }
  RETURN_IF_ERROR(membership_.StartLease(lease));

  // Subscribed before taking mu_: the feed calls back under its own lock, then takes
  // mu_, so the opposite order here could deadlock with a concurrent commit.
  for (auto& s : streams_) {
    s->subscription = s->config.feed->Subscribe([this] {
      MutexLock guard(&mu_);
      heads_dirty_ = true;
      if (in_batching_window_) return;  // the dispatcher reads the heads at its end
      wake_ = true;
      dispatch_cv_.NotifyOne();
    });
  }
  MutexLock lock(&mu_);
  started_ = true;
  if (!streams_.empty()) {
    // Counted from Start, not from whenever the thread first runs (a test's
    // ManualClock may move before then).
    const int64_t first_prune = options_.prune_interval_micros > 0
                                    ? clock_->NowMicros() + options_.prune_interval_micros
                                    : INT64_MAX;
    threads_.emplace_back([this, first_prune] { DispatchLoop(first_prune); });
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
    MutexLock lock(&mu_);
    stopping_ = true;              // also makes a later Start() fail
    if (threads_.empty()) return;  // never started, or already stopped
    tasks_.clear();                // queued shard steps never start
  }
  dispatch_cv_.NotifyAll();
  work_cv_.NotifyAll();
  stop_cv_.NotifyAll();
  for (auto& s : streams_) {
    if (s->subscription != 0) s->config.feed->Unsubscribe(s->subscription);
    s->subscription = 0;
  }
  // Queue consumers may be blocked in WaitForMessages. A wake-up that arrives before a
  // consumer blocks is not remembered, so repeat it until every consumer has left.
  std::set<QueueService*> services;
  for (auto& q : queues_) services.insert(q->config.queues);
  {
    MutexLock lock(&mu_);
    while (consumers_running_ > 0) {
      lock.Unlock();
      for (QueueService* service : services) service->WakeWaiters();
      lock.Lock();
      clock_->WaitUntil(stop_cv_, mu_, clock_->NowMicros() + 1000);
    }
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
  // The listener's queue services may go before this runtime; nothing of this
  // process holds a message any more but ones it deferred, which keep their time.
  membership_.SetOwnersGoneListener(nullptr);
  membership_.StopLease();  // nothing of this process runs any more
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

void FunctionRuntime::Notify(const RuntimeEvent& event) {
  if (options_.observer) options_.observer(event);
}

bool FunctionRuntime::PauseUntil(int64_t deadline_micros) {
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (clock_->WaitUntil(stop_cv_, mu_, deadline_micros)) break;
  }
  return !stopping_;
}

}  // namespace sheetlog
