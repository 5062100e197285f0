// Time for everything in sheetlog. Nothing outside emulator/env reads the system clock
// or sleeps: code gets a Clock* through its constructor, so tests drive time with
// ManualClock and never sleep to wait for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <set>

#include "emulator/env/mutex.h"

namespace sheetlog {

class Clock {
 public:
  virtual ~Clock() = default;

  // Microseconds since the Unix epoch.
  virtual int64_t NowMicros() const = 0;
  int64_t NowMillis() const { return NowMicros() / 1000; }
  int64_t NowSeconds() const { return NowMicros() / 1000000; }

  // Lets `micros` of this clock's time pass before returning. SystemClock sleeps;
  // ManualClock advances itself by `micros` and returns at once (simulated time moves
  // only because the caller asked to wait, so retries with backoff stay deterministic).
  virtual void SleepForMicros(int64_t micros) = 0;

  // Blocks on `cv` (with `mu` held on entry and exit) until it is notified or this
  // clock reaches `deadline_micros`. May return spuriously: callers re-check their
  // condition and the time. Returns true if the deadline has passed.
  virtual bool WaitUntil(CondVar& cv, Mutex& mu, int64_t deadline_micros)
      REQUIRES(mu) = 0;

  // True for ManualClock: time moves only when told.
  virtual bool IsManual() const { return false; }
};

// The real wall clock. Thread-safe.
class SystemClock final : public Clock {
 public:
  int64_t NowMicros() const override;
  void SleepForMicros(int64_t micros) override;
  bool WaitUntil(CondVar& cv, Mutex& mu, int64_t deadline_micros) REQUIRES(mu) override;

  // The process-wide instance.
  static SystemClock* Default();
};

// A clock that moves only when Advance()/Set() is called (or a caller sleeps on it).
// Thread-safe. Advance()/Set() notify every condition variable a WaitUntil is
// blocked on, so waiters wake at once; a notification that lands between a waiter's
// own check and its wait is caught by a bounded real-time re-check (50 ms), so an idle
// waiter costs 20 wake-ups a second, not a busy poll.
class ManualClock final : public Clock {
 public:
  // Default start: 2026-01-01T00:00:00Z, so timestamps look plausible.
  explicit ManualClock(int64_t start_micros = 1767225600LL * 1000000);

  int64_t NowMicros() const override { return now_.load(std::memory_order_acquire); }
  void SleepForMicros(int64_t micros) override { Advance(micros); }
  bool WaitUntil(CondVar& cv, Mutex& mu, int64_t deadline_micros) REQUIRES(mu) override;
  bool IsManual() const override { return true; }

  void Advance(int64_t micros);
  void AdvanceSeconds(int64_t seconds) { Advance(seconds * 1000000); }
  // REQUIRES: micros >= NowMicros(): time never goes backwards.
  void Set(int64_t micros);

 private:
  // Wakes every WaitUntil caller now blocked (their condition variables).
  void NotifyWaiters() EXCLUDES(waiters_mu_);

  std::atomic<int64_t> now_;
  Mutex waiters_mu_;
  std::multiset<CondVar*> waiters_ GUARDED_BY(waiters_mu_);
};

}  // namespace sheetlog
