// A clock that runs a fixed offset from real time (SystemClock), as the clock of a node
// whose time synchronisation failed (a node 45 s ahead). Not manual
// (Clock::IsManual is false), so a ClusterMembership on it takes the database's clock
// for its leases, as in production; its waits are real-time waits.
#pragma once

#include <cstdint>

#include "emulator/env/clock.h"

namespace sheetlog::testing {

class OffsetSystemClock final : public Clock {
 public:
  // `offset_micros` > 0: ahead of real time; < 0: behind it.
  explicit OffsetSystemClock(int64_t offset_micros) : offset_micros_(offset_micros) {}

  int64_t NowMicros() const override {
    return SystemClock::Default()->NowMicros() + offset_micros_;
  }
  void SleepForMicros(int64_t micros) override {
    SystemClock::Default()->SleepForMicros(micros);
  }
  bool WaitUntil(CondVar& cv, Mutex& mu, int64_t deadline_micros) REQUIRES(mu) override {
    return SystemClock::Default()->WaitUntil(cv, mu, deadline_micros - offset_micros_);
  }

 private:
  const int64_t offset_micros_;
};

}  // namespace sheetlog::testing
