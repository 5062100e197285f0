#include "emulator/env/faults.h"

#include <signal.h>
#include <unistd.h>

#include "emulator/env/clock.h"

namespace sheetlog {

FaultInjector::FaultInjector(Clock* clock, uint64_t seed) : clock_(clock), rng_(seed) {}

void FaultInjector::Arm(const std::string& point, FaultSpec spec) {
  std::lock_guard<std::mutex> lock(mu_);
  armed_[point] = FaultPointState{point, spec, 0};
  armed_count_.store(static_cast<int>(armed_.size()), std::memory_order_release);
}

void FaultInjector::Disarm(const std::string& point) {
  std::lock_guard<std::mutex> lock(mu_);
  armed_.erase(point);
  armed_count_.store(static_cast<int>(armed_.size()), std::memory_order_release);
}

void FaultInjector::DisarmAll() {
  std::lock_guard<std::mutex> lock(mu_);
  armed_.clear();
  armed_count_.store(0, std::memory_order_release);
}

bool FaultInjector::Fire(const std::string& point, FaultSpec* fired) {
  if (armed_count_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = armed_.find(point);
  if (it == armed_.end()) return false;
  FaultPointState& state = it->second;
  if (state.spec.remaining == 0) return false;
  if (state.spec.probability < 1.0) {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    if (coin(rng_) >= state.spec.probability) return false;
  }
  if (state.spec.remaining > 0) --state.spec.remaining;
  ++state.fired;
  *fired = state.spec;
  return true;
}

Status FaultInjector::Hit(const std::string& point) {
  FaultSpec spec;
  if (!Fire(point, &spec)) return Status::OK();
  switch (spec.kind) {
    case FaultKind::kError:
      return Unavailable("fault injected at " + point);
    case FaultKind::kCrash:
      // As abrupt as `kill -9`: no destructors, no flushing, no atexit handlers.
      kill(getpid(), SIGKILL);
      _exit(137);
    case FaultKind::kDelay:
      if (clock_ != nullptr) clock_->SleepForMicros(spec.delay_micros);
      return Status::OK();
    case FaultKind::kDuplicate:
      return Status::OK();
    case FaultKind::kDiskFull:
      return InsufficientStorage("fault injected at " + point +
                                 ": No space left on device");
  }
  return Status::OK();
}

bool FaultInjector::ShouldDuplicate(const std::string& point) {
  FaultSpec spec;
  return Fire(point, &spec) && spec.kind == FaultKind::kDuplicate;
}

int64_t FaultInjector::FiredCount(const std::string& point) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = armed_.find(point);
  return it == armed_.end() ? 0 : it->second.fired;
}

std::vector<FaultPointState> FaultInjector::Armed() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FaultPointState> out;
  for (const auto& [name, state] : armed_) out.push_back(state);
  return out;
}

}  // namespace sheetlog
