#include "emulator/env/periodic_worker.h"

namespace sheetlog {

void PeriodicWorker::Start(int64_t period_micros, bool run_at_start, Task task) {
  MutexLock lock(&mu_);
  if (running_) return;
  stop_ = false;
  running_ = true;
  task_ = std::move(task);
  // The schedule counts from this call, not from whenever the new thread first runs:
  // with a ManualClock a test may move time before then.
  const int64_t first_run = clock_->NowMicros() + (run_at_start ? 0 : period_micros);
  thread_ =
      std::thread([this, period_micros, first_run] { Run(period_micros, first_run); });
}

void PeriodicWorker::Stop() {
  {
    MutexLock lock(&mu_);
    if (!running_) return;
    stop_ = true;
  }
  cv_.NotifyAll();
  thread_.join();
  MutexLock lock(&mu_);
  running_ = false;
}

void PeriodicWorker::RunSoon() {
  {
    MutexLock lock(&mu_);
    if (!running_) return;
    run_soon_ = true;
  }
  cv_.NotifyAll();
}

void PeriodicWorker::Run(int64_t period_micros, int64_t first_run_micros) {
  int64_t next = first_run_micros;
  while (true) {
    {
      MutexLock lock(&mu_);
      while (!stop_ && !run_soon_ && clock_->NowMicros() < next) {
        clock_->WaitUntil(cv_, mu_, next);
      }
      if (stop_) return;
      run_soon_ = false;
    }
    next = clock_->NowMicros() + period_micros;
    task_(stop_);
  }
}

}  // namespace sheetlog
