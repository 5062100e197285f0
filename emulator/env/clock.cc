#include "emulator/env/clock.h"

#include <chrono>
#include <thread>

namespace sheetlog {

int64_t SystemClock::NowMicros() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SystemClock::SleepForMicros(int64_t micros) {
  if (micros > 0) std::this_thread::sleep_for(std::chrono::microseconds(micros));
}

bool SystemClock::WaitUntil(CondVar& cv, Mutex& mu, int64_t deadline_micros) {
  int64_t remaining = deadline_micros - NowMicros();
  if (remaining <= 0) return true;
  // Wait on the steady clock so a wall-clock jump cannot stall a worker.
  cv.WaitFor(mu, std::chrono::microseconds(remaining));
  return NowMicros() >= deadline_micros;
}

SystemClock* SystemClock::Default() {
  static SystemClock clock;
  return &clock;
}

ManualClock::ManualClock(int64_t start_micros) : now_(start_micros) {}

void ManualClock::Advance(int64_t micros) {
  if (micros <= 0) return;
  now_.fetch_add(micros, std::memory_order_acq_rel);
  NotifyWaiters();
}

void ManualClock::Set(int64_t micros) {
  int64_t current = now_.load(std::memory_order_acquire);
  while (micros > current &&
         !now_.compare_exchange_weak(current, micros, std::memory_order_acq_rel)) {
  }
  NotifyWaiters();
}

void ManualClock::NotifyWaiters() {
  // The waiters' own mutexes are not taken: Advance may be called with any lock held
  // (SleepForMicros from a worker), and taking theirs could deadlock. The price is a
  // wake-up that can be missed in a narrow window, which WaitUntil's bound covers.
  MutexLock guard(&waiters_mu_);
  for (CondVar* cv : waiters_) cv->NotifyAll();
}

bool ManualClock::WaitUntil(CondVar& cv, Mutex& mu, int64_t deadline_micros) {
  if (NowMicros() >= deadline_micros) return true;
  {
    MutexLock guard(&waiters_mu_);
    waiters_.insert(&cv);
  }
  // Manual time has no real-time deadline; the bound only catches a notification that
  // arrived between the check above and this wait.
  if (NowMicros() < deadline_micros) cv.WaitFor(mu, std::chrono::milliseconds(50));
  {
    MutexLock guard(&waiters_mu_);
    waiters_.erase(waiters_.find(&cv));
  }
  return NowMicros() >= deadline_micros;
}

}  // namespace sheetlog
