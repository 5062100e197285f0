// Fault points (the list: fault_points.h). Code marks the steps where a crash or an
// error would matter with
// `RETURN_IF_ERROR(faults->Hit(FaultPoint::kSnapshotAfterChunk))`; tests (or, with
// --enable-faults, operators over HTTP) arm a point to make that step fail.
//
// A hit at an unarmed point costs one relaxed atomic load and allocates nothing.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/env/fault_points.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"

namespace sheetlog {

class Clock;

enum class FaultKind {
  kError,      // Hit() returns Unavailable("fault injected at <point>")
  kCrash,      // the process dies at once with SIGKILL, as `kill -9` would
  kDelay,      // Hit() lets `delay_micros` pass on the clock, then returns OK
  kDuplicate,  // Hit() returns OK; ShouldDuplicate() answers true (duplicate delivery)
  kDiskFull,   // Hit() returns InsufficientStorage, as a write to a full disk would
};

struct FaultSpec {
  FaultKind kind = FaultKind::kError;
  // How many more hits fire; -1 = every hit until disarmed.
  int64_t remaining = 1;
  // Probability that an eligible hit fires, in [0, 1].
  double probability = 1.0;
  int64_t delay_micros = 0;
};

struct FaultPointState {
  std::string name;
  FaultSpec spec;
  int64_t fired = 0;
};

class FaultInjector {
 public:
  explicit FaultInjector(Clock* clock = nullptr, uint64_t seed = 0x5eed);

  // Arms `point`, replacing any earlier arming of it.
  void Arm(FaultPoint point, FaultSpec spec) EXCLUDES(mu_);
  // Arms the point named `name` (fault_points.h). InvalidArgument naming the known
  // points if there is none of that name; nothing is armed then.
  Status Arm(std::string_view name, FaultSpec spec);
  void Disarm(FaultPoint point) EXCLUDES(mu_);
  // InvalidArgument, as Arm, for an unknown name.
  Status Disarm(std::string_view name);
  void DisarmAll() EXCLUDES(mu_);

  // Call at a fault point. OK unless an armed error fires there.
  Status Hit(FaultPoint point) EXCLUDES(mu_);
  // For duplicate-delivery points: true if an armed kDuplicate fires.
  bool ShouldDuplicate(FaultPoint point) EXCLUDES(mu_);

  // How many times `point` has fired since it was armed.
  int64_t FiredCount(FaultPoint point) const EXCLUDES(mu_);
  // The armed points, in the order of the list.
  std::vector<FaultPointState> Armed() const EXCLUDES(mu_);

 private:
  struct PointState {
    bool armed = false;
    FaultSpec spec;
    int64_t fired = 0;
  };

  // Decides under mu_ whether an armed point fires now; returns its spec if so.
  bool Fire(FaultPoint point, FaultSpec* fired) EXCLUDES(mu_);

  Clock* const clock_;
  // Per point: armed now. Written under mu_; read without it by Hit (a relaxed load:
  // a hit that races an Arm may miss it, as it would a moment earlier; a true answer is
  // checked again under mu_).
  std::atomic<bool> armed_[kFaultPointCount] = {};
  mutable Mutex mu_;
  PointState points_[kFaultPointCount] GUARDED_BY(mu_);
  std::mt19937_64 rng_ GUARDED_BY(mu_);
};

}  // namespace sheetlog
