// The state FunctionRuntime keeps per mapping and per shard, and the helpers its stream
// and queue paths share. Internal to emulator/runtime (function_runtime*.cc): other
// code goes through FunctionRuntime (function_runtime.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "emulator/env/faults.h"
#include "emulator/env/mutex.h"
#include "emulator/runtime/function_runtime.h"

namespace sheetlog {

// Members marked "guarded by the runtime's mu_" are read and written only with
// FunctionRuntime::mu_ held. Clang's analysis cannot name the mutex of the object that
// owns these structs, so that is not checked here (it is in function_runtime.h).
struct FunctionRuntime::ShardState {
  // Read by the dispatcher only while !in_flight; written by the shard's task while
  // in_flight. The in_flight hand-off happens under mu_.
  bool in_flight = false;    // guarded by the runtime's mu_
  int64_t cursor = 0;        // checkpointed sequence
  bool has_pending = false;  // a read batch is not finished
  int64_t next_attempt_micros = 0;
  // This runtime holds the shard's claim (docs/cluster.md "One consumer per change-feed
  // shard"): only then is it scheduled. Read and written by the dispatcher.
  bool claimed = false;

  // Owned by the shard's task.
  std::deque<std::vector<StreamRecord>> pending;  // front first; halves after bisect
  int64_t range_end = 0;  // checkpoint once `pending` is done (covers filtered records)
  int attempts = 0;       // failed attempts of pending.front()
  Status last_error;
};

struct FunctionRuntime::ClaimRound {
  struct Shard {
    StreamState* mapping = nullptr;
    int shard = 0;
    bool claimed = false;    // at planning
    bool in_flight = false;  // at planning: not given up, not taken
    enum class Outcome { kUnchanged, kKept, kLost, kTaken, kGivenUp };
    Outcome outcome = Outcome::kUnchanged;
    int64_t checkpoint = 0;  // kTaken: where the previous holder left off
  };
  std::vector<Shard> shards;  // grouped by mapping, in shard order
};

struct FunctionRuntime::StreamState {
  StreamMapping config;
  int64_t max_age_micros = 0;  // resolved at Start()
  int subscription = 0;
  std::map<int, int64_t> checkpoints;  // loaded at Start()
  std::map<int, int64_t> heads;        // guarded by the runtime's mu_
  std::map<int, ShardState>
      shards;  // guarded by the runtime's mu_ (the map; see ShardState)
  std::atomic<int64_t> invocations{0}, failures{0}, skipped{0}, duplicates{0};
  std::atomic<int64_t> running{0}, abandoned{0};
  // What ShardProgress() reports, published by the shard's task after each step.
  Mutex progress_mu;
  std::map<int, ShardProgress> progress GUARDED_BY(progress_mu);
};

struct FunctionRuntime::QueueState {
  QueueMapping config;
  std::atomic<int64_t> invocations{0}, failures{0}, skipped{0}, duplicates{0};
  std::atomic<int64_t> running{0}, abandoned{0};
};

namespace runtime_internal {

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

// The execution-history key of a record of a mapping without its own history_key:
// "<mapping>:<shard>:<sequence>" (Replay parses it back).
inline std::string DefaultStreamKey(const std::string& mapping,
                                    const StreamRecord& record) {
  return mapping + ":" + std::to_string(record.shard) + ":" +
         std::to_string(record.sequence);
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

// One invocation of a mapping's handler, as both mapping kinds run it: the
// "runtime.before_handler" fault point, the handler (CallHandler), then Lambda's
// timeout — a handler that returned OK after `deadline` failed all the same.
template <typename Handler, typename Batch>
Status InvokeWithinBudget(const Handler& handler, const Batch& batch,
                          InvocationContext& ctx, Clock* clock, FaultInjector* faults,
                          int64_t deadline, int64_t time_budget_micros) {
  Status status =
      faults != nullptr ? faults->Hit(FaultPoint::kRuntimeBeforeHandler) : Status::OK();
  if (status.ok()) status = CallHandler(handler, batch, ctx);
  if (status.ok() && clock->NowMicros() > deadline) {
    status = Unavailable("invocation exceeded its time budget of " +
                         std::to_string(time_budget_micros / 1000000) + " s");
  }
  return status;
}

inline bool IsBusy(const Claim& claim) {
  return claim.outcome == BeginOutcome::kRunningElsewhere ||
         claim.outcome == BeginOutcome::kLostRace;
}

// A claim that proceeds over a `started` row: the work's earlier invocation died.
inline bool TakesOverAbandoned(const Claim& claim) {
  return claim.outcome == BeginOutcome::kProceed && claim.latest &&
         claim.latest->status == ExecStatus::kStarted;
}

}  // namespace runtime_internal
}  // namespace sheetlog
