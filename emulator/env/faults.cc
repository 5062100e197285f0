#include "emulator/env/faults.h"

#include <signal.h>
#include <unistd.h>

#include "emulator/env/clock.h"

namespace sheetlog {
namespace {

size_t Index(FaultPoint point) { return static_cast<size_t>(point); }

Status UnknownPoint(std::string_view name) {
  std::string known;
  for (const FaultPointInfo& info : kFaultPoints) {
    known += (known.empty() ? "" : ", ") + std::string(info.name);
  }
  return InvalidArgument("unknown fault point '" + std::string(name) +
                         "' (known points: " + known + ")");
}

}  // namespace

FaultInjector::FaultInjector(Clock* clock, uint64_t seed) : clock_(clock), rng_(seed) {}

void FaultInjector::Arm(FaultPoint point, FaultSpec spec) {
  MutexLock lock(&mu_);
  points_[Index(point)] = PointState{true, spec, 0};
  armed_[Index(point)].store(true, std::memory_order_relaxed);
}

Status FaultInjector::Arm(std::string_view name, FaultSpec spec) {
  const std::optional<FaultPoint> point = FindFaultPoint(name);
  if (!point) return UnknownPoint(name);
  Arm(*point, spec);
  return Status::OK();
}

void FaultInjector::Disarm(FaultPoint point) {
  MutexLock lock(&mu_);
  points_[Index(point)] = PointState{};
  armed_[Index(point)].store(false, std::memory_order_relaxed);
}

Status FaultInjector::Disarm(std::string_view name) {
  const std::optional<FaultPoint> point = FindFaultPoint(name);
  if (!point) return UnknownPoint(name);
  Disarm(*point);
  return Status::OK();
}

void FaultInjector::DisarmAll() {
  MutexLock lock(&mu_);
  for (size_t i = 0; i < kFaultPointCount; ++i) {
    points_[i] = PointState{};
    armed_[i].store(false, std::memory_order_relaxed);
  }
}

bool FaultInjector::Fire(FaultPoint point, FaultSpec* fired) {
  if (!armed_[Index(point)].load(std::memory_order_relaxed)) return false;
  MutexLock lock(&mu_);
  PointState& state = points_[Index(point)];
  if (!state.armed || state.spec.remaining == 0) return false;
  if (state.spec.probability < 1.0) {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    if (coin(rng_) >= state.spec.probability) return false;
  }
  if (state.spec.remaining > 0) --state.spec.remaining;
  ++state.fired;
  *fired = state.spec;
  return true;
}

Status FaultInjector::Hit(FaultPoint point) {
  FaultSpec spec;
  if (!Fire(point, &spec)) return Status::OK();
  const std::string name(FaultPointName(point));
  switch (spec.kind) {
    case FaultKind::kError:
      return Unavailable("fault injected at " + name);
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
      return InsufficientStorage("fault injected at " + name +
                                 ": No space left on device");
  }
  return Status::OK();
}

bool FaultInjector::ShouldDuplicate(FaultPoint point) {
  FaultSpec spec;
  return Fire(point, &spec) && spec.kind == FaultKind::kDuplicate;
}

int64_t FaultInjector::FiredCount(FaultPoint point) const {
  MutexLock lock(&mu_);
  const PointState& state = points_[Index(point)];
  return state.armed ? state.fired : 0;
}

std::vector<FaultPointState> FaultInjector::Armed() const {
  MutexLock lock(&mu_);
  std::vector<FaultPointState> out;
  for (const FaultPointInfo& info : kFaultPoints) {
    const PointState& state = points_[Index(info.point)];
    if (state.armed) out.push_back({std::string(info.name), state.spec, state.fired});
  }
  return out;
}

}  // namespace sheetlog
