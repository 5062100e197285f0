// A thread that runs a task every period of an injected Clock — the schedule shared by
// background sweeps (the blob lifecycle sweep, log retention). Each run is scheduled
// from the start of the previous one, read before the run: time that passes while (or
// right after) it runs counts toward the next, and a run longer than the period is
// followed by the next at once. With a ManualClock the task runs only as the test moves
// time.
//
// Thread-safe: Start and Stop may be called from any thread (Stop not from the task).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include "emulator/env/clock.h"
#include "emulator/env/mutex.h"

namespace sheetlog {

class PeriodicWorker {
 public:
  // `task` gets the stop flag: long runs check it between steps and return early.
  using Task = std::function<void(const std::atomic<bool>& stopping)>;

  explicit PeriodicWorker(Clock* clock) : clock_(clock) {}
  ~PeriodicWorker() { Stop(); }  // REQUIRES: the task's captures are still alive
  PeriodicWorker(const PeriodicWorker&) = delete;
  PeriodicWorker& operator=(const PeriodicWorker&) = delete;

  // Starts the thread: the first run at once if `run_at_start`, else one period after
  // this call (by the clock as Start reads it).
  // Idempotent while running. REQUIRES: period_micros > 0.
  void Start(int64_t period_micros, bool run_at_start, Task task) EXCLUDES(mu_);
  // Sets the stop flag, wakes the thread and joins it (a run in progress ends at its
  // next check of the flag). Idempotent; Start may follow.
  void Stop() EXCLUDES(mu_);
  // Runs the task as soon as the thread is free, without waiting for the period (a run
  // under way finishes first; calls before the next run starts make one run). The
  // period restarts after it. No-op unless running. Thread-safe.
  void RunSoon() EXCLUDES(mu_);
  // The flag Stop sets, for runs made outside the thread that should also stop.
  const std::atomic<bool>& stopping() const { return stop_; }

 private:
  void Run(int64_t period_micros, int64_t first_run_micros) EXCLUDES(mu_);

  Clock* const clock_;
  Mutex mu_;
  CondVar cv_;  // wakes the thread to stop
  bool running_ GUARDED_BY(mu_) = false;
  bool run_soon_ GUARDED_BY(mu_) = false;
  std::atomic<bool> stop_{false};
  Task task_;
  std::thread thread_;
};

}  // namespace sheetlog
