#include "emulator/env/periodic_worker.h"

namespace sheetlog {

void PeriodicWorker::Start(int64_t period_micros, bool run_at_start, Task task) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return;
  stop_ = false;
  running_ = true;
  task_ = std::move(task);
  thread_ = std::thread(
      [this, period_micros, run_at_start] { Run(period_micros, run_at_start); });
}

void PeriodicWorker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
}

void PeriodicWorker::RunSoon() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    run_soon_ = true;
  }
  cv_.notify_all();
}

void PeriodicWorker::Run(int64_t period_micros, bool run_at_start) {
  int64_t next = clock_->NowMicros() + (run_at_start ? 0 : period_micros);
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (!stop_ && !run_soon_ && clock_->NowMicros() < next) {
        clock_->WaitUntil(cv_, lock, next);
      }
      if (stop_) return;
      run_soon_ = false;
    }
    next = clock_->NowMicros() + period_micros;
    task_(stop_);
  }
}

}  // namespace sheetlog
