// FunctionRuntime's stream mappings (Lambda + DynamoDB Streams): the dispatcher that
// watches the feeds' heads and prunes them, the workers that run one shard step at a
// time (read a batch, invoke, retry, bisect, skip, checkpoint), and the invocation of a
// batch through the execution history. The delivery rules are in function_runtime.h.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>
#include <set>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/env/mutex.h"
#include "emulator/env/uuid.h"
#include "emulator/runtime/function_runtime.h"
#include "emulator/runtime/function_runtime_internal.h"

namespace sheetlog {

using runtime_internal::DefaultStreamKey;
using runtime_internal::InvokeWithinBudget;
using runtime_internal::IsBusy;
using runtime_internal::RunningCount;
using runtime_internal::TakesOverAbandoned;

namespace {

int64_t BackoffMicros(const StreamMapping& m, int attempts) {
  int64_t delay = m.retry_base_micros;
  for (int i = 1; i < attempts && delay < m.retry_max_micros; ++i) delay *= 2;
  return std::min(delay, m.retry_max_micros);
}

}  // namespace

void FunctionRuntime::DispatchLoop(int64_t first_prune_micros) {
  int64_t next_prune = first_prune_micros;
  int64_t heads_retry_at = INT64_MAX;
  const int64_t window = options_.batching_window_micros;
  Clock* window_clock = options_.batching_window_clock != nullptr
                            ? options_.batching_window_clock
                            : SystemClock::Default();
  int64_t last_heads_read = INT64_MIN;
  int64_t next_claim_round = INT64_MIN;
  MutexLock lock(&mu_);
  while (!stopping_) {
    wake_ = false;
    int64_t now = clock_->NowMicros();
    if (heads_dirty_ || now >= heads_retry_at) {
      if (window > 0) {
        // Wait out the batching window that began with the last read of the heads:
        // commits meanwhile only mark the heads dirty (in_batching_window_). A clock
        // that went back ends the window.
        in_batching_window_ = true;
        while (!stopping_ && last_heads_read != INT64_MIN) {
          const int64_t window_now = window_clock->NowMicros();
          if (window_now >= last_heads_read + window || window_now < last_heads_read) {
            break;
          }
          window_clock->WaitUntil(dispatch_cv_, mu_, last_heads_read + window);
        }
        in_batching_window_ = false;
        if (stopping_) break;
        last_heads_read = window_clock->NowMicros();
      }
      heads_dirty_ = false;
      heads_retry_at = INT64_MAX;
      lock.Unlock();
      std::map<ChangeFeed*, Result<std::map<int, int64_t>>> heads;
      for (auto& s : streams_) {
        if (heads.count(s->config.feed) == 0) {
          heads.emplace(s->config.feed, s->config.feed->LatestSequences());
        }
      }
      lock.Lock();
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
      lock.Unlock();
      std::set<ChangeFeed*> feeds;
      for (auto& s : streams_) feeds.insert(s->config.feed);
      for (ChangeFeed* feed : feeds) {
        Result<int64_t> pruned = feed->Prune();
        if (!pruned.ok()) {
          spdlog::warn("runtime: pruning stream {} failed: {}", feed->stream(),
                       pruned.status().ToString());
        }
      }
      lock.Lock();
      now = clock_->NowMicros();
      next_prune = now + options_.prune_interval_micros;
      if (stopping_) break;
    }

    // Claims: at start, every kClaimRecheckMicros, and when a shard appears.
    bool new_shard = false;
    for (auto& s : streams_) {
      for (const auto& [shard, head] : s->heads) {
        if (s->shards.count(shard) == 0) new_shard = true;
      }
    }
    if (new_shard || now >= next_claim_round) {
      ClaimRound round = PlanClaimRound();
      lock.Unlock();
      RunClaimRound(round);
      lock.Lock();
      ApplyClaimRound(round);
      // A periodic round reads the heads again afterwards: shards taken may have
      // records this node never heard of (another node's commits), and it is the
      // fallback when wake-ups from other nodes are lost. (A round for a new shard
      // follows a read of the heads already.)
      if (!new_shard) heads_dirty_ = true;
      now = clock_->NowMicros();
      next_claim_round = now + kClaimRecheckMicros;
      if (stopping_) break;
    }

    int64_t next_wake = std::min({next_prune, heads_retry_at, next_claim_round});
    int scheduled = 0;
    for (auto& s : streams_) {
      for (const auto& [shard, head] : s->heads) {
        ShardState& st = s->shards[shard];
        if (!st.claimed || st.in_flight) continue;
        if (!st.has_pending && head <= st.cursor) continue;
        if (st.next_attempt_micros > now) {
          next_wake = std::min(next_wake, st.next_attempt_micros);
          continue;
        }
        st.in_flight = true;
        tasks_.push_back(Task{s.get(), shard, head});
        ++scheduled;
      }
    }
    // One worker per new task: waking them all would send the rest straight back to
    // sleep (a context switch each, after every commit).
    for (int i = 0; i < scheduled; ++i) work_cv_.NotifyOne();
    if (wake_ || heads_dirty_) continue;
    if (next_wake == INT64_MAX) {
      dispatch_cv_.Wait(mu_);
    } else {
      clock_->WaitUntil(dispatch_cv_, mu_, next_wake);
    }
  }
}

FunctionRuntime::ClaimRound FunctionRuntime::PlanClaimRound() {
  ClaimRound round;
  for (auto& s : streams_) {
    for (const auto& [shard, head] : s->heads) {
      auto [it, inserted] = s->shards.try_emplace(shard);
      ShardState& st = it->second;
      if (inserted) {
        auto cp = s->checkpoints.find(shard);
        st.cursor = cp == s->checkpoints.end() ? 0 : cp->second;
      }
      ClaimRound::Shard planned;
      planned.mapping = s.get();
      planned.shard = shard;
      planned.claimed = st.claimed;
      planned.in_flight = st.in_flight;
      round.shards.push_back(planned);
    }
  }
  return round;
}

void FunctionRuntime::RunClaimRound(ClaimRound& round) {
  using Outcome = ClaimRound::Shard::Outcome;
  Result<int> live = membership_.LiveOwners();
  if (!live.ok()) {
    spdlog::warn("runtime: counting live owners failed: {}", live.status().ToString());
  }
  const int owners = std::max(1, live.ok() ? *live : 1);
  auto claim_name = [](const StreamState& m, int shard) {
    return "stream/" + m.config.name + "/" + std::to_string(shard);
  };
  size_t begin = 0;
  while (begin < round.shards.size()) {
    size_t end = begin;
    while (end < round.shards.size() &&
           round.shards[end].mapping == round.shards[begin].mapping) {
      ++end;
    }
    StreamState& m = *round.shards[begin].mapping;
    const int count = static_cast<int>(end - begin);
    const int share = (count + owners - 1) / owners;
    int held = 0;
    for (size_t i = begin; i < end; ++i) held += round.shards[i].claimed ? 1 : 0;
    // Past the share: give up the highest shards not running a step.
    for (size_t i = end; i-- > begin && held > share;) {
      ClaimRound::Shard& sh = round.shards[i];
      if (!sh.claimed || sh.in_flight) continue;
      Status released = membership_.ReleaseName(claim_name(m, sh.shard));
      if (!released.ok()) {
        spdlog::warn("runtime: {} shard {}: giving up the claim failed: {}",
                     m.config.name, sh.shard, released.ToString());
      }
      sh.outcome = Outcome::kGivenUp;  // not scheduled here either way
      --held;
    }
    for (size_t i = begin; i < end; ++i) {
      ClaimRound::Shard& sh = round.shards[i];
      if (sh.outcome == Outcome::kGivenUp) continue;
      if (!sh.claimed && (sh.in_flight || held >= share)) continue;
      Result<bool> claimed = membership_.ClaimName(claim_name(m, sh.shard));
      if (!claimed.ok()) {
        spdlog::warn("runtime: {} shard {}: claiming failed: {}", m.config.name, sh.shard,
                     claimed.status().ToString());
        // A claim held stays held until its lease lapses: keep working it.
        continue;
      }
      if (sh.claimed) {
        sh.outcome = *claimed ? Outcome::kKept : Outcome::kLost;
        if (!*claimed) --held;
        continue;
      }
      if (!*claimed) continue;
      Result<int64_t> checkpoint = m.config.feed->Checkpoint(m.config.name, sh.shard);
      if (!checkpoint.ok()) {
        // Taken but not startable: give it back for now (the next round retries).
        spdlog::warn("runtime: {} shard {}: reading the checkpoint failed: {}",
                     m.config.name, sh.shard, checkpoint.status().ToString());
        (void)membership_.ReleaseName(claim_name(m, sh.shard));
        continue;
      }
      sh.outcome = Outcome::kTaken;
      sh.checkpoint = *checkpoint;
      ++held;
    }
    begin = end;
  }
}

void FunctionRuntime::ApplyClaimRound(const ClaimRound& round) {
  using Outcome = ClaimRound::Shard::Outcome;
  for (const ClaimRound::Shard& sh : round.shards) {
    ShardState& st = sh.mapping->shards[sh.shard];
    switch (sh.outcome) {
      case Outcome::kUnchanged:
      case Outcome::kKept:
        break;
      case Outcome::kLost:
      case Outcome::kGivenUp:
        // A step in flight finishes (its checkpoint only moves forward); nothing more
        // is scheduled here.
        st.claimed = false;
        break;
      case Outcome::kTaken:
        // Start where the previous holder's checkpoint says: a batch read while this
        // runtime held the shard before may have been done by another since.
        st.claimed = true;
        st.cursor = sh.checkpoint;
        st.pending.clear();
        st.has_pending = false;
        st.attempts = 0;
        st.next_attempt_micros = 0;
        st.last_error = Status::OK();
        break;
    }
  }
}

void FunctionRuntime::WorkerLoop() {
  MutexLock lock(&mu_);
  while (true) {
    while (!stopping_ && tasks_.empty()) work_cv_.Wait(mu_);
    if (stopping_) return;
    Task task = tasks_.front();
    tasks_.pop_front();
    ShardState& state = task.mapping->shards.at(task.shard);
    lock.Unlock();
    RunShardStep(*task.mapping, task.shard, state, task.head);
    PublishProgress(*task.mapping, task.shard, state);
    lock.Lock();
    state.in_flight = false;
    wake_ = true;
    dispatch_cv_.NotifyOne();
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
  MutexLock lock(&mapping.progress_mu);
  mapping.progress[shard] = std::move(progress);
}

std::vector<ShardProgress> FunctionRuntime::StreamProgress() const {
  std::vector<ShardProgress> out;
  for (const auto& s : streams_) {
    MutexLock lock(&s->progress_mu);
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
      faults_->ShouldDuplicate(FaultPoint::kRuntimeStreamDuplicate)) {
    Status again = InvokeStream(mapping, shard, batch);  // at-least-once delivery
    if (!again.ok()) {
      spdlog::info("runtime: {} shard {}: duplicate delivery failed: {}", m.name, shard,
                   again.ToString());
    }
  }
  if (status.ok() && faults_ != nullptr) {
    status = faults_->Hit(FaultPoint::kRuntimeAfterHandlerBeforeCheckpoint);
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
  Status status = InvokeWithinBudget(m.handler, to_run, ctx, clock_, faults_, deadline,
                                     m.time_budget_micros);
  if (faults_ != nullptr)
    RETURN_IF_ERROR(faults_->Hit(FaultPoint::kRuntimeAfterHandlerBeforeHistory));
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

}  // namespace sheetlog
