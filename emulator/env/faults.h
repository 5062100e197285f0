// Named fault points. Code marks the steps where a crash or an error would matter with
// `RETURN_IF_ERROR(faults->Hit("snapshot.after_chunk_write"))`; tests (or, with
// --enable-faults, operators over HTTP) arm a point to make that step fail.
//
// Unarmed points cost one relaxed atomic load. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

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
  void Arm(const std::string& point, FaultSpec spec);
  void Disarm(const std::string& point);
  void DisarmAll();

  // Call at a fault point. OK unless an armed error fires there.
  Status Hit(const std::string& point);
  // For duplicate-delivery points: true if an armed kDuplicate fires.
  bool ShouldDuplicate(const std::string& point);

  // How many times `point` has fired since it was armed.
  int64_t FiredCount(const std::string& point) const;
  std::vector<FaultPointState> Armed() const;

 private:
  // Decides under mu_ whether an armed point fires now; returns its spec if so.
  bool Fire(const std::string& point, FaultSpec* fired);

  Clock* clock_;
  std::atomic<int> armed_count_{0};
  mutable std::mutex mu_;
  std::map<std::string, FaultPointState> armed_;  // GUARDED_BY(mu_)
  std::mt19937_64 rng_;                           // GUARDED_BY(mu_)
};

}  // namespace sheetlog
