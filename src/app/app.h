// App: one running sheetlog instance — the data directory, the emulated services and the
// seed algorithms wired together, with Start()/Stop() for every background worker.
// main.cc builds one for `serve` (and the offline commands); integration tests run the
// real binary, unit tests may build an App directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "emulator/backup/backup.h"
#include "emulator/blob/s3_client.h"
#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/metrics/metrics.h"
#include "emulator/postgres/postgres_database.h"
#include "emulator/sqlite/database.h"
#include "emulator/status.h"
#include "src/app/health.h"
#include "src/effects/snapshot_healing.h"
#include "src/ops/cost.h"
#include "src/ops/verify.h"

namespace sheetlog {

class BlobStore;
class ChangeFeed;
class EventLog;
class FunctionRuntime;
class HeadViewCache;
class PeriodicWorker;
class PipelineEvents;
class SheetChangeHub;
class SheetPurger;
class SnapshotHealer;
class PeriodicWorker;
class LifecycleSweeper;
class QueueService;
class RetentionWorker;
class SnapshotWorker;
class Uploads;
class TableBrowser;

// Queue names of the snapshot pipeline.
inline constexpr const char* kSnapshotQueue = "snapshots";
inline constexpr const char* kSnapshotDeadLetterQueue = "snapshots-dlq";

struct AppOptions {
  // Where sheetlog.db and blobs/ live. Default: ./data
  std::string data_dir = "./data";
  // Use a temporary data directory removed when the App closes, with no syncs.
  bool in_memory = false;
  // Blobs in this S3-compatible store (`--blobs s3://...`) instead of the directory
  // store under the data directory. Chosen independently of the table store.
  std::optional<S3Location> s3_blobs;
  // Tables, queues, the change feed and the execution history in this PostgreSQL
  // database (`--store postgres://...`, a libpq connection string or URI without a
  // password) instead of SQLite's sheetlog.db under the data directory. Chosen
  // independently of the blob store. Empty: SQLite.
  std::string postgres_store;
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
  // Run the background workers (change feed handlers, snapshot worker, sweeper).
  // Offline commands open the App without them. Default: true.
  bool workers = true;
  // Lambda time budget of a snapshot worker invocation. Default: 60 s. At most the
  // snapshot queue's visibility timeout (60 s), as AWS requires of an SQS event
  // source; a longer build hands off to a fresh invocation after a checkpoint
  // (seed 000), so the budget bounds one invocation, not one snapshot.
  int64_t snapshot_time_budget_seconds = 60;
  // Receives of a snapshot message before it goes to the dead-letter queue. Default: 10.
  int64_t snapshot_max_receives = 10;
  // Retention (seed 003; src/ops/retention.h): keep the newest N segments and/or the
  // segments written in the last D days; 0 = no limit. Both 0: off (the default).
  int64_t retain_segments = 0;
  int64_t retain_days = 0;
  // Archive dropped segments to the blob store first.
  bool retain_archive = false;
  // Clock time between two retention runs. Default: 1 hour.
  int64_t retention_period_seconds = 3600;
  // Prices of GET /v1/sheets/{id}/cost. Default: seed 001's on-demand prices.
  Prices prices;
  // The change feed's batching window (FunctionRuntime::Options): side effects of
  // appends (snapshot requests, upload untags) start at most this much later, and
  // appends committed within one window share one invocation instead of waking the
  // runtime each. Real time. Default: 5 ms.
  int64_t batching_window_micros = 5000;
  // The pipeline's self-healing (src/effects/snapshot_healing.h): at start and then
  // every this many seconds of clock, a Snapshot entry that is not complete and has no
  // live job (no message in the snapshot queue or its dead-letter queue, no invocation
  // on it) gets a job again. Each run reads every sheet's segments and the entries
  // after its newest completed snapshot. 0: off. Default: 600.
  int64_t heal_period_seconds = 600;
  // Only Snapshot entries written at least this long ago (clock seconds): a younger
  // one's job may still be on its way through the change feed. Default: 300.
  int64_t heal_min_age_seconds = 300;
};

// Thread-safe once Start returned: the routes call its getters and Reset,
// PipelineViolations and StreamConsumers from any HTTP worker. Open, Start and Stop
// from the owner's thread.
class App {
 public:
  static Result<std::unique_ptr<App>> Open(const AppOptions& options);
  ~App();

  // Starts the background workers. Idempotent.
  Status Start();
  // Stops background workers, waiting for in-flight work. Idempotent.
  void Stop();

  struct ResetReport {
    int64_t sheets = 0;  // sheets dropped
    int64_t blobs = 0;   // blob store objects deleted
  };
  // POST /v1/admin/reset (tests): drops every sheet with its entries, segments and
  // pending snapshots, every upload, tombstone of a deleted sheet, queued message,
  // unprocessed change-feed record and execution-history row, and every blob (with
  // what the S3 store's tag mirror holds). Each table's owner empties its own tables
  // (EventLog::DeleteAll and the like). What survives, so the workers keep running and
  // the next sheet works as on a fresh install: queue definitions (`queue`), stream
  // definitions, the feed's sequence counters and checkpoints (`stream_config`,
  // `stream_shard`, `stream_checkpoint`), the running nodes' leases and claims
  // (`execution_owner`, `owner_claim`) and the schema's version (`schema_version`);
  // tests/unit/app_reset_test.cc holds every other table of the schema to empty. Work
  // in flight at that moment may leave a blob behind; nothing references it. The
  // caller checks options().allow_reset.
  Result<ResetReport> Reset();

  // POST /v1/admin/backup: a consistent backup of the database and of every object to
  // the absolute directory `to` while the server serves and takes writes
  // (emulator/backup/backup.h: one instant for both; incremental when `to` holds an
  // earlier backup). FailedPrecondition while another backup runs.
  Result<BackupReport> Backup(const std::string& to);
  // `sheetlog restore`: the backup in `from` into `data_dir` (which must not exist or
  // be empty), after checking every file against its checksum; then opens it once
  // without workers, so its migrations run and a database this release cannot open is
  // reported now. No server may use `data_dir`.
  static Result<RestoreReport> Restore(const std::string& from,
                                       const std::string& data_dir);

  // What verify adds beyond the stored state of each sheet: messages in a dead-letter
  // queue (of `sheet` only when given) and, for all sheets, change-feed consumers
  // whose oldest unprocessed record is older than `stall_after_micros` (clock time).
  Result<std::vector<Violation>> PipelineViolations(
      const std::optional<std::string>& sheet, int64_t stall_after_micros);
  // The change feed's consumers that have worked on a shard in this process, for
  // ChangeFeed::Stats: one whose first batch keeps failing has no checkpoint yet.
  std::vector<std::string> StreamConsumers() const;
  // For one verify run (VerifyOptions::explain_pending): explains a blob-auto-delete
  // finding by an untag the change feed has not delivered yet, a snapshot-stalled one
  // by a job still on its way or queued without a failure; reads the feed and the
  // queues once, on its first question.
  std::function<Result<std::optional<std::string>>(const Violation&)> PendingExplainer();
  // One run of the pipeline's self-healing (the periodic worker's, or an operator's):
  // what it re-enqueued, each job also logged. Not once per cluster by itself.
  Result<SnapshotHealingReport> HealSnapshots(
      const std::atomic<bool>* stopping = nullptr);
  // Migrations applied and workers running.
  bool ready() const { return ready_.load(); }
  // GET /v1/health: each store probed with a trivial read and this node's view of the
  // cluster, within a few seconds of real time whatever the stores do (health.h).
  HealthReport Health() { return health_->Check(); }

  const AppOptions& options() const { return options_; }
  const std::string& data_dir() const { return data_dir_; }
  Clock* clock() { return clock_; }
  ManualClock* manual_clock() { return manual_clock_.get(); }  // null unless manual
  FaultInjector* faults() { return faults_.get(); }
  // The version of the newest schema migration applied to the database.
  // "sqlite" or "postgres host=... dbname=..." (no password): for the log.
  std::string store_description() const {
    return sqlite_ != nullptr ? "sqlite" : "postgres " + postgres_->where();
  }
  int schema_version() const {
    return sqlite_ != nullptr ? sqlite_->schema_version() : postgres_->schema_version();
  }
  EventLog* log() { return log_.get(); }
  MetricsRegistry* metrics() { return &metrics_; }
  BlobStore* blobs() { return blobs_.get(); }
  HeadViewCache* head_views() { return head_views_.get(); }
  SheetChangeHub* changes() { return changes_.get(); }
  PipelineEvents* pipeline_events() { return pipeline_events_.get(); }
  QueueService* queues() { return queues_.get(); }
  ChangeFeed* feed() { return feed_.get(); }
  FunctionRuntime* runtime() { return runtime_.get(); }
  Uploads* uploads() { return uploads_.get(); }
  LifecycleSweeper* sweeper() { return sweeper_.get(); }
  SnapshotWorker* snapshot_worker() { return snapshot_worker_.get(); }
  RetentionWorker* retention() { return retention_.get(); }
  SnapshotHealer* healer() { return healer_.get(); }
  SheetUsage* usage() { return &usage_; }
  // Deletes the blobs of deleted sheets (src/log/sheet_deletion.h).
  SheetPurger* purger() { return purger_.get(); }
  // Purges the objects of deleted sheets now: in the background when the workers run
  // (the caller does not wait), else here. Errors are logged: a purge that fails is
  // retried by the next one (every minute and at every start).
  void PurgeDeletedSheets();
  // Read-only browsing of the tables (the console's table browser).
  TableBrowser* tables() { return tables_.get(); }

 private:
  explicit App(const AppOptions& options);
  Status Init();
  Status AddMappings();
  // Whether this node runs `job` (the sweep, retention) now: once per cluster, by
  // whoever holds its claim (ClusterMembership::ClaimName "job/<job>"). On SQLite, one
  // node: always.
  bool HoldsClusterJob(const std::string& job);
  // This node's stable name for its runtime lease: "<host>:<data directory>".
  std::string NodeName() const;
  void AddCollectors();
  // Publishes a "queues" pipeline event when a queue's depths changed since last time.
  void PublishQueueChanges();

  AppOptions options_;
  std::string data_dir_;
  bool remove_data_dir_ = false;
  std::unique_ptr<ManualClock> manual_clock_;
  Clock* clock_ = nullptr;
  std::unique_ptr<FaultInjector> faults_;
  MetricsRegistry metrics_;
  SheetUsage usage_;
  // The table store: SQLite's Database or a PostgresDatabase (one of the two below).
  std::unique_ptr<Transactions> db_;
  Database* sqlite_ = nullptr;            // null on PostgreSQL
  PostgresDatabase* postgres_ = nullptr;  // null on SQLite
  std::unique_ptr<EventLog> log_;
  std::unique_ptr<BlobStore> blobs_;
  std::unique_ptr<HeadViewCache> head_views_;
  std::unique_ptr<QueueService> queues_;
  std::unique_ptr<ChangeFeed> feed_;
  std::unique_ptr<SheetChangeHub> changes_;
  std::unique_ptr<PipelineEvents> pipeline_events_;
  std::unique_ptr<PeriodicWorker> queue_watch_;
  nlohmann::json last_queue_stats_;  // the queue watch's thread only
  std::unique_ptr<Uploads> uploads_;
  std::unique_ptr<TableBrowser> tables_;
  std::unique_ptr<SnapshotWorker> snapshot_worker_;
  std::unique_ptr<FunctionRuntime> runtime_;
  std::unique_ptr<LifecycleSweeper> sweeper_;
  std::unique_ptr<RetentionWorker> retention_;
  std::unique_ptr<SheetPurger> purger_;
  // Resumes and repeats purges of deleted sheets: at start, then every period.
  std::unique_ptr<PeriodicWorker> purge_worker_;
  // The pipeline's self-healing: at start, then every heal_period_seconds.
  std::unique_ptr<SnapshotHealer> healer_;
  std::unique_ptr<PeriodicWorker> heal_worker_;
  std::atomic<int64_t> healed_jobs_{0};  // jobs the self-healing enqueued since start
  // Probes the stores above (destroyed before them: its probes may still be running).
  std::unique_ptr<HealthChecker> health_;
  std::atomic<bool> ready_{false};
  bool started_ = false;
};

}  // namespace sheetlog
