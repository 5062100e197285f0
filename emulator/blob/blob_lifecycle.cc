#include "emulator/blob/blob_lifecycle.h"

#include <chrono>

#include "emulator/env/clock.h"

namespace sheetlog {

LifecycleSweeper::LifecycleSweeper(BlobStore* store, Clock* clock,
                                   LifecycleSweeperOptions options,
                                   BlobKeepPredicate keep)
    : store_(store),
      clock_(clock),
      options_(std::move(options)),
      keep_(std::move(keep)) {}

LifecycleSweeper::~LifecycleSweeper() { Stop(); }

Status LifecycleSweeper::Start() {
  if (options_.period_micros <= 0) {
    return InvalidArgument("lifecycle sweep period must be positive");
  }
  if (options_.rule.tag_key.empty() || options_.rule.max_age_micros < 0) {
    return InvalidArgument("lifecycle rule needs a tag key and a non-negative age");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return Status::OK();
  stop_ = false;
  running_ = true;
  thread_ = std::thread([this] { Run(); });
  return Status::OK();
}

void LifecycleSweeper::Stop() {
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

void LifecycleSweeper::Run() {
  int64_t next = options_.sweep_at_start ? clock_->NowMicros()
                                         : clock_->NowMicros() + options_.period_micros;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (!stop_ && clock_->NowMicros() < next) clock_->WaitUntil(cv_, lock, next);
      if (stop_) return;
    }
    // Scheduled from the start of this sweep, read before the sweep is counted: time
    // that passes while (or right after) it runs counts toward the next one. A sweep
    // longer than the period is followed by the next at once.
    next = clock_->NowMicros() + options_.period_micros;
    // Errors are recorded in the counters; the worker keeps its schedule.
    (void)SweepOnce(&stop_);
  }
}

Result<SweepReport> LifecycleSweeper::RunNow() { return SweepOnce(nullptr); }

Result<SweepReport> LifecycleSweeper::SweepOnce(const std::atomic<bool>* cancel) {
  std::lock_guard<std::mutex> sweeping(sweep_mu_);
  Result<SweepReport> report = store_->Sweep(options_.rule, keep_, cancel);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.sweeps;
    counters_.last_sweep_micros = clock_->NowMicros();
    if (!report.ok()) {
      ++counters_.failed_sweeps;
      counters_.last_error = report.status().ToString();
    } else {
      counters_.deleted += report->deleted;
      counters_.deleted_bytes += report->deleted_bytes;
      counters_.kept_by_predicate += report->kept_by_predicate;
      counters_.unreadable = report->unreadable;
      counters_.errors += report->errors;
      if (!report->first_error.empty()) counters_.last_error = report->first_error;
    }
  }
  cv_.notify_all();
  return report;
}

LifecycleSweeperCounters LifecycleSweeper::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

bool LifecycleSweeper::WaitForSweeps(int64_t count, int64_t real_timeout_millis) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(real_timeout_millis),
                      [&] { return counters_.sweeps >= count; });
}

}  // namespace sheetlog
