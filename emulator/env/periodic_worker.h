// A thread that runs a task every period of an injected Clock — the schedule shared by
// background sweeps (the blob lifecycle sweep, log retention). Each run is scheduled
// from the start of the previous one, read before the run: time that passes while (or
// right after) it runs counts toward the next, and a run longer than the period is
// followed by the next at once. With a ManualClock the task runs only as the test moves
// time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "emulator/env/clock.h"

namespace sheetlog {

class PeriodicWorker {
 public:
  // `task` gets the stop flag: long runs check it between steps and return early.
  using Task = std::function<void(const std::atomic<bool>& stopping)>;

  explicit PeriodicWorker(Clock* clock) : clock_(clock) {}
  ~PeriodicWorker() { Stop(); }  // REQUIRES: the task's captures are still alive
  PeriodicWorker(const PeriodicWorker&) = delete;
  PeriodicWorker& operator=(const PeriodicWorker&) = delete;

  // Starts the thread: the first run at once if `run_at_start`, else after one period.
  // Idempotent while running. REQUIRES: period_micros > 0.
  void Start(int64_t period_micros, bool run_at_start, Task task);
  // Sets the stop flag, wakes the thread and joins it (a run in progress ends at its
  // next check of the flag). Idempotent; Start may follow.
  void Stop();
  // Runs the task as soon as the thread is free, without waiting for the period (a run
  // under way finishes first; calls before the next run starts make one run). The
  // period restarts after it. No-op unless running. Thread-safe.
  void RunSoon();
  // The flag Stop sets, for runs made outside the thread that should also stop.
  const std::atomic<bool>& stopping() const { return stop_; }

 private:
  void Run(int64_t period_micros, bool run_at_start);

  Clock* const clock_;
  std::mutex mu_;
  std::condition_variable cv_;  // wakes the thread to stop
  bool running_ = false;        // GUARDED_BY(mu_)
  bool run_soon_ = false;       // GUARDED_BY(mu_)
  std::atomic<bool> stop_{false};
  Task task_;
  std::thread thread_;
};

}  // namespace sheetlog
