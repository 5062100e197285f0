// A manual clock for the HTTP server's timeouts (HttpServerOptions::clock_ms), moved by
// the test, that counts its readings: the event loop reads it once a turn (at least
// every 50 ms of real time), so a test waits for the loop to have seen what it did,
// without a sleep.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace sheetlog::testing {

class CountingManualClock {
 public:
  int64_t Read() {
    std::lock_guard lock(mu_);
    ++reads_;
    read_.notify_all();
    return now_ms_;
  }
  void Advance(int64_t ms) {
    std::lock_guard lock(mu_);
    now_ms_ += ms;
  }
  // Returns once the server has read the clock `n` more times: 3 are two whole turns
  // of the loop after the call.
  void WaitForReads(int n) {
    std::unique_lock lock(mu_);
    const int64_t target = reads_ + n;
    read_.wait(lock, [&] { return reads_ >= target; });
  }

 private:
  std::mutex mu_;
  std::condition_variable read_;
  int64_t now_ms_ = 1000000;
  int64_t reads_ = 0;
};

}  // namespace sheetlog::testing
