// App: one running sheetlog instance — the data directory, the emulated services and the
// seed algorithms wired together, with Start()/Stop() for every background worker.
// main.cc builds one for `serve` (and the offline commands); integration tests run the
// real binary, unit tests may build an App directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/metrics/metrics.h"
#include "emulator/sqlite/database.h"
#include "emulator/status.h"

namespace sheetlog {

class EventLog;

struct AppOptions {
  // Where sheetlog.db and blobs/ live. Default: ./data
  std::string data_dir = "./data";
  // Use a temporary data directory removed when the App closes, with no syncs.
  bool in_memory = false;
  // Durability of acknowledged writes (see README "Durability").
  SyncMode sync = SyncMode::kNormal;
  // Time moves only through /v1/admin/clock (tests).
  bool manual_clock = false;
  // /v1/admin/faults may arm fault points.
  bool enable_faults = false;
  // /v1/admin/reset may drop everything.
  bool allow_reset = false;
  // Encoded entry bodies larger than this go to the blob store. Default: 16 KiB.
  int64_t inline_limit = 16 * 1024;
  // Uploads never completed are swept after this long. Default: 3 days.
  int64_t orphan_ttl_seconds = 3 * 24 * 3600;
};

class App {
 public:
  static Result<std::unique_ptr<App>> Open(const AppOptions& options);
  ~App();

  // Starts the background workers. Idempotent.
  Status Start();
  // Stops background workers, waiting for in-flight work. Idempotent.
  void Stop();
  // Migrations applied and workers running.
  bool ready() const { return ready_.load(); }

  const AppOptions& options() const { return options_; }
  const std::string& data_dir() const { return data_dir_; }
  Clock* clock() { return clock_; }
  ManualClock* manual_clock() { return manual_clock_.get(); }  // null unless manual
  FaultInjector* faults() { return faults_.get(); }
  Database* db() { return db_.get(); }
  EventLog* log() { return log_.get(); }
  MetricsRegistry* metrics() { return &metrics_; }

 private:
  explicit App(const AppOptions& options);
  Status Init();

  AppOptions options_;
  std::string data_dir_;
  bool remove_data_dir_ = false;
  std::unique_ptr<ManualClock> manual_clock_;
  Clock* clock_ = nullptr;
  std::unique_ptr<FaultInjector> faults_;
  MetricsRegistry metrics_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<EventLog> log_;
  std::atomic<bool> ready_{false};
  bool started_ = false;
};

}  // namespace sheetlog
