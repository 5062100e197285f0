// PeriodicWorker's schedule on a ManualClock: the first run one period after Start (as
// Start read the clock, however late the thread begins), then one period after the
// start of each run; RunSoon without waiting. Runs are awaited with a real-time bound.
#include "emulator/env/periodic_worker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "emulator/env/clock.h"

namespace sheetlog {
namespace {

using namespace std::chrono_literals;

constexpr int64_t kPeriod = 1000000;

class RunCounter {
 public:
  PeriodicWorker::Task Task() {
    return [this](const std::atomic<bool>&) {
      std::lock_guard<std::mutex> lock(mu_);
      ++runs_;
      cv_.notify_all();
    };
  }
  bool WaitForRuns(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 30s, [&] { return runs_ >= n; });
  }
  int runs() {
    std::lock_guard<std::mutex> lock(mu_);
    return runs_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int runs_ = 0;
};

// Time that passes before the new thread first looks at the clock still counts toward
// the first run (a test moving a ManualClock right after starting a server relies on
// it: the retention and sweep schedules begin when the server starts).
TEST(PeriodicWorkerTest, TheFirstRunIsOnePeriodAfterStartHoweverLateTheThreadBegins) {
  ManualClock clock(0);
  RunCounter counter;
  PeriodicWorker worker(&clock);
  worker.Start(kPeriod, /*run_at_start=*/false, counter.Task());
  clock.Advance(kPeriod);  // most likely before the thread has run at all
  ASSERT_TRUE(counter.WaitForRuns(1));
  // The next period counts from the start of that run.
  clock.Advance(kPeriod);
  ASSERT_TRUE(counter.WaitForRuns(2));
  worker.Stop();
  EXPECT_EQ(counter.runs(), 2);
}

TEST(PeriodicWorkerTest, RunAtStartRunsAtOnceAndRunSoonSkipsTheWait) {
  ManualClock clock(0);
  RunCounter counter;
  PeriodicWorker worker(&clock);
  worker.Start(kPeriod, /*run_at_start=*/true, counter.Task());
  ASSERT_TRUE(counter.WaitForRuns(1));
  worker.RunSoon();  // the clock stands still
  ASSERT_TRUE(counter.WaitForRuns(2));
  worker.Stop();
  EXPECT_EQ(counter.runs(), 2);
  worker.RunSoon();  // no-op once stopped
  EXPECT_EQ(counter.runs(), 2);
}

}  // namespace
}  // namespace sheetlog
