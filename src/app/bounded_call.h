// BoundedCall: a call whose caller waits for its answer at most until a deadline of
// real time, for the health report (GET /v1/health), which must answer within a few
// seconds even when a store does not answer at all (a database whose packets are
// dropped, an S3 endpoint that stalls).
//
// The call runs on a thread of its own; the caller waits on a condition variable,
// bounded by SystemClock (real time whatever the sheet clock: a manual clock would never
// reach the deadline). A call that has not answered is left running, and one run at a
// time: a Start while it runs starts nothing, and Await then waits for that same run.
// So however often a hung store is asked, it holds one thread per BoundedCall, and the
// first answer it gives (late) is what the next Await sees.
//
// Thread-safe. The destructor waits for a run in progress: the call must end by itself,
// which the stores' own bounds see to (PostgreSQL's connect timeout, S3's request
// timeout), and it must not use anything destroyed before its BoundedCall.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <thread>
#include <utility>

#include "emulator/env/clock.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"

namespace sheetlog {

template <typename T>
class BoundedCall {
 public:
  using Call = std::function<Result<T>()>;

  struct Outcome {
    // The call's answer; nullopt when it had not answered by the deadline.
    std::optional<Result<T>> answer;
    // Real time the call took or, without an answer, how long it has run so far.
    int64_t elapsed_micros = 0;
  };

  explicit BoundedCall(Call call) : call_(std::move(call)) {}
  ~BoundedCall() {
    std::thread thread;
    {
      MutexLock lock(&mu_);
      thread = std::move(thread_);
    }
    if (thread.joinable()) thread.join();
  }
  BoundedCall(const BoundedCall&) = delete;
  BoundedCall& operator=(const BoundedCall&) = delete;

  // Starts a run unless one is in progress (then Await waits for that one).
  void Start() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    if (running_) return;
    // The previous run has ended: its thread set running_ false under mu_, which it
    // does not take again, so joining it here cannot wait on this lock.
    if (thread_.joinable()) thread_.join();
    running_ = true;
    ++started_runs_;
    started_at_micros_ = real_clock_->NowMicros();
    thread_ = std::thread([this] { RunOnce(); });
  }

  // Waits until the run started last has ended or SystemClock reaches
  // `deadline_micros`, whichever comes first. REQUIRES: Start was called.
  Outcome Await(int64_t deadline_micros) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    const uint64_t run = started_runs_;
    while (finished_runs_ < run) {
      if (real_clock_->WaitUntil(cv_, mu_, deadline_micros)) break;
    }
    Outcome outcome;
    if (finished_runs_ >= run) {
      outcome.answer = last_answer_;
      outcome.elapsed_micros = last_elapsed_micros_;
    } else {
      outcome.elapsed_micros = real_clock_->NowMicros() - started_at_micros_;
    }
    return outcome;
  }

 private:
  void RunOnce() EXCLUDES(mu_) {
    const int64_t started = real_clock_->NowMicros();
    Result<T> answer = call_();
    const int64_t elapsed = real_clock_->NowMicros() - started;
    {
      MutexLock lock(&mu_);
      last_answer_.emplace(std::move(answer));
      last_elapsed_micros_ = elapsed;
      ++finished_runs_;
      running_ = false;
    }
    cv_.NotifyAll();
  }

  Clock* const real_clock_ = SystemClock::Default();
  const Call call_;
  Mutex mu_;
  CondVar cv_;  // a run ended
  bool running_ GUARDED_BY(mu_) = false;
  uint64_t started_runs_ GUARDED_BY(mu_) = 0;
  uint64_t finished_runs_ GUARDED_BY(mu_) = 0;
  int64_t started_at_micros_ GUARDED_BY(mu_) = 0;
  std::optional<Result<T>> last_answer_ GUARDED_BY(mu_);
  int64_t last_elapsed_micros_ GUARDED_BY(mu_) = 0;
  std::thread thread_ GUARDED_BY(mu_);
};

}  // namespace sheetlog
