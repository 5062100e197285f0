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

bool SystemClock::WaitUntil(std::condition_variable& cv,
                            std::unique_lock<std::mutex>& lock, int64_t deadline_micros) {
  int64_t remaining = deadline_micros - NowMicros();
  if (remaining <= 0) return true;
  // Wait on the steady clock so a wall-clock jump cannot stall a worker.
  cv.wait_for(lock, std::chrono::microseconds(remaining));
  return NowMicros() >= deadline_micros;
}

SystemClock* SystemClock::Default() {
  static SystemClock clock;
  return &clock;
}

ManualClock::ManualClock(int64_t start_micros) : now_(start_micros) {}

void ManualClock::Advance(int64_t micros) {
  if (micros > 0) now_.fetch_add(micros, std::memory_order_acq_rel);
}

void ManualClock::Set(int64_t micros) {
  int64_t current = now_.load(std::memory_order_acquire);
  while (micros > current &&
         !now_.compare_exchange_weak(current, micros, std::memory_order_acq_rel)) {
  }
}

bool ManualClock::WaitUntil(std::condition_variable& cv,
                            std::unique_lock<std::mutex>& lock, int64_t deadline_micros) {
  if (NowMicros() >= deadline_micros) return true;
  // Manual time has no real-time deadline to wait for; a short real-time wait bounds how
  // long a waiter takes to notice Advance() without a registry of waiters.
  cv.wait_for(lock, std::chrono::milliseconds(2));
  return NowMicros() >= deadline_micros;
}

}  // namespace sheetlog
