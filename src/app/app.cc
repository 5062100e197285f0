#include "src/app/app.h"

#include <stdlib.h>

#include <filesystem>
#include <system_error>

#include "src/log/event_log.h"

namespace sheetlog {

namespace fs = std::filesystem;

App::App(const AppOptions& options) : options_(options) {}

App::~App() {
  Stop();
  log_.reset();
  db_.reset();
  if (remove_data_dir_) {
    std::error_code ignored;
    fs::remove_all(data_dir_, ignored);
  }
}

Result<std::unique_ptr<App>> App::Open(const AppOptions& options) {
  std::unique_ptr<App> app(new App(options));
  RETURN_IF_ERROR(app->Init());
  return app;
}

Status App::Init() {
  if (options_.manual_clock) {
    manual_clock_ = std::make_unique<ManualClock>();
    clock_ = manual_clock_.get();
  } else {
    clock_ = SystemClock::Default();
  }
  faults_ = std::make_unique<FaultInjector>(clock_);

  if (options_.in_memory) {
    // A RAM-backed temporary directory when the system has one: the same code paths
    // (WAL, separate readers, real files) as on disk, at memory speed, gone at exit.
    std::error_code ec;
    fs::path base =
        fs::exists("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::string pattern = (base / "sheetlog-mem-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return Internal("cannot create a temporary data directory under " + base.string());
    }
    data_dir_ = pattern;
    remove_data_dir_ = true;
  } else {
    data_dir_ = options_.data_dir;
    std::error_code ec;
    fs::create_directories(data_dir_, ec);
    if (ec)
      return Internal("cannot create data directory " + data_dir_ + ": " + ec.message());
  }

  Database::Options db_options;
  db_options.path = (fs::path(data_dir_) / "sheetlog.db").string();
  db_options.sync = options_.in_memory ? SyncMode::kOff : options_.sync;
  db_options.clock = clock_;
  ASSIGN_OR_RETURN(db_, Database::Open(db_options));

  EventLog::Options log_options;
  log_ = std::make_unique<EventLog>(db_.get(), clock_, faults_.get(), log_options);
  return Status::OK();
}

Status App::Start() {
  if (started_) return Status::OK();
  started_ = true;
  ready_ = true;
  return Status::OK();
}

void App::Stop() {
  if (!started_) return;
  ready_ = false;
  started_ = false;
}

}  // namespace sheetlog
