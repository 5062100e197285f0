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
  worker_.Start(options_.period_micros, options_.sweep_at_start,
                [this](const std::atomic<bool>& stopping) {
                  if (options_.may_run && !options_.may_run()) return;
                  // Errors are recorded in the counters; the worker keeps its schedule.
                  (void)SweepOnce(&stopping);
                });
  return Status::OK();
}

void LifecycleSweeper::Stop() { worker_.Stop(); }

Result<SweepReport> LifecycleSweeper::RunNow() { return SweepOnce(nullptr); }

Result<SweepReport> LifecycleSweeper::SweepOnce(const std::atomic<bool>* cancel) {
  MutexLock sweeping(&sweep_mu_);
  Result<SweepReport> report = store_->Sweep(options_.rule, keep_, cancel);
  {
    MutexLock lock(&mu_);
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
  cv_.NotifyAll();
  return report;
}

LifecycleSweeperCounters LifecycleSweeper::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

bool LifecycleSweeper::WaitForSweeps(int64_t count, int64_t real_timeout_millis) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(real_timeout_millis);
  MutexLock lock(&mu_);
  while (counters_.sweeps < count) {
    if (!cv_.WaitUntil(mu_, deadline)) return counters_.sweeps >= count;
  }
  return true;
}

}  // namespace sheetlog
