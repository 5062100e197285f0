#include "src/app/app.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <string_view>
#include <system_error>

#include "emulator/blob/blob_lifecycle.h"
#include "emulator/blob/blob_tag_mirror.h"
#include "emulator/blob/directory_blob_store.h"
#include "emulator/blob/s3_blob_store.h"
#include "emulator/env/periodic_worker.h"
#include "emulator/queue/queue.h"
#include "emulator/runtime/execution_history.h"
#include "emulator/runtime/function_runtime.h"
#include "emulator/stream/change_feed.h"
#include "src/app/schema.h"
#include "src/app/table_browser.h"
#include "src/effects/entry_effects.h"
#include "src/effects/pipeline_events.h"
#include "src/effects/sheet_changes.h"
#include "src/effects/snapshot_healing.h"
#include "src/log/event_log.h"
#include "src/log/sheet_deletion.h"
#include "src/log/uploads.h"
#include "src/ops/retention.h"
#include "src/snapshot/build_factory.h"
#include "src/snapshot/head_view_cache.h"
#include "src/snapshot/import_check.h"
#include "src/snapshot/worker.h"
#include "src/version.h"

namespace sheetlog {

namespace fs = std::filesystem;

namespace {

// How often (clock time) queue depths are compared for GET /v1/admin/events.
constexpr int64_t kQueueWatchPeriodMicros = 5LL * 1000000;

// The runtime's failures and skips as "job" events; successes are too many to show.
void PublishJobEvent(PipelineEvents* events, const RuntimeEvent& e) {
  const char* what = nullptr;
  switch (e.kind) {
    case RuntimeEvent::Kind::kBatchFailed:
      what = "batch_failed";
      break;
    case RuntimeEvent::Kind::kRecordsSkipped:
      what = "records_skipped";
      break;
    case RuntimeEvent::Kind::kRecordsLost:
      what = "records_lost";
      break;
    case RuntimeEvent::Kind::kMessageFailed:
      what = "message_failed";
      break;
    default:
      return;
  }
  nlohmann::json data{{"what", what},
                      {"mapping", e.mapping},
                      {"count", e.count},
                      {"error", e.status.ToString()}};
  if (e.shard >= 0) {
    data["shard"] = e.shard;
    data["first_sequence"] = e.first_sequence;
    data["last_sequence"] = e.last_sequence;
  }
  if (!e.message_id.empty()) data["message_id"] = e.message_id;
  events->Publish("job", std::move(data));
}

// SHEETLOG_ARM_FAULTS="point[:crash|error],...": fault points armed (once each) before
// anything is opened, for the points no request can reach in time, such as
// migration.before_commit. Only with --enable-faults (tests).
Status ArmStartupFaults(FaultInjector* faults) {
  const char* text = std::getenv("SHEETLOG_ARM_FAULTS");
  for (std::string_view rest = text == nullptr ? "" : text; !rest.empty();) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    const size_t colon = item.find(':');
    FaultSpec spec;
    const std::string_view kind =
        colon == std::string_view::npos ? "error" : item.substr(colon + 1);
    if (kind == "crash") {
      spec.kind = FaultKind::kCrash;
    } else if (kind != "error") {
      return InvalidArgument("SHEETLOG_ARM_FAULTS: kind must be crash or error, got '" +
                             std::string(kind) + "'");
    }
    // A name not in emulator/env/fault_points.h is refused, as through the API.
    if (Status armed = faults->Arm(item.substr(0, colon), spec); !armed.ok()) {
      return armed.Annotate("SHEETLOG_ARM_FAULTS");
    }
  }
  return Status::OK();
}

}  // namespace

App::App(const AppOptions& options) : options_(options) {}

App::~App() {
  Stop();
  health_.reset();  // waits for probes still running on the stores below
  heal_worker_.reset();
  healer_.reset();
  purge_worker_.reset();
  purger_.reset();
  // Reverse order of construction: workers before the services they use.
  retention_.reset();
  sweeper_.reset();
  queue_watch_.reset();
  runtime_.reset();
  pipeline_events_.reset();
  snapshot_worker_.reset();
  uploads_.reset();
  head_views_.reset();
  changes_.reset();
  feed_.reset();
  queues_.reset();
  blobs_.reset();
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
  if (options_.enable_faults) RETURN_IF_ERROR(ArmStartupFaults(faults_.get()));

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
  const bool sync = !options_.in_memory;

  if (options_.postgres_store.empty()) {
    Database::Options db_options;
    db_options.path = (fs::path(data_dir_) / "sheetlog.db").string();
    db_options.sync = sync ? options_.sync : SyncMode::kOff;
    db_options.clock = clock_;
    db_options.release = Version();
    db_options.faults = faults_.get();
    ASSIGN_OR_RETURN(std::unique_ptr<Database> sqlite, OpenSheetlogDatabase(db_options));
    sqlite_ = sqlite.get();
    db_ = std::move(sqlite);
  } else {
    // Durability is the server's (synchronous_commit); the data directory keeps only
    // what is not shared (the directory blob store, unless --blobs s3://...).
    PostgresDatabase::Options db_options;
    db_options.conninfo = options_.postgres_store;
    db_options.clock = clock_;
    db_options.release = Version();
    db_options.faults = faults_.get();
    ASSIGN_OR_RETURN(std::unique_ptr<PostgresDatabase> postgres,
                     OpenSheetlogPostgresDatabase(db_options));
    postgres_ = postgres.get();
    db_ = std::move(postgres);
  }

  if (options_.s3_blobs) {
    // Blobs in an S3-compatible store; their tags mirrored in this database's
    // blob_mirror table (emulator/blob/s3_blob_store.h).
    S3BlobStoreOptions s3_options;
    s3_options.location = *options_.s3_blobs;
    Result<std::unique_ptr<S3BlobStore>> s3 =
        S3BlobStore::Open(s3_options, db_.get(), clock_, faults_.get());
    if (!s3.ok()) {
      return s3.status().Annotate("opening the blob store s3://" +
                                  options_.s3_blobs->bucket + " at " +
                                  options_.s3_blobs->endpoint);
    }
    blobs_ = std::move(s3).value();
  } else {
    BlobStoreOptions blob_options;
    blob_options.root = (fs::path(data_dir_) / "blobs").string();
    blob_options.sync = sync;
    ASSIGN_OR_RETURN(blobs_,
                     DirectoryBlobStore::Open(blob_options, clock_, faults_.get()));
  }

  EventLog::Options log_options;
  // Appends go through WriteAsync, whose batches (group commit on either backend) run
  // this node's appends one after another in one transaction: they never race each
  // other for head + 1, so no lock per sheet is needed (event_log.h). Between nodes the
  // conditional put and its retries arbitrate.
  log_options.serialize_appends_per_sheet = false;
  log_ = std::make_unique<EventLog>(db_.get(), clock_, faults_.get(), log_options);
  head_views_ =
      std::make_unique<HeadViewCache>(log_.get(), blobs_.get(), HeadViewCache::Options{});
  queues_ = std::make_unique<QueueService>(db_.get(), clock_, faults_.get());
  feed_ = std::make_unique<ChangeFeed>(db_.get(), clock_, "entry");
  changes_ = std::make_unique<SheetChangeHub>(feed_.get(), clock_);
  Uploads::Options upload_options;
  upload_options.inline_limit = options_.inline_limit;
  upload_options.validate_payload = ImportPayloadCheck();
  uploads_ = std::make_unique<Uploads>(db_.get(), log_.get(), blobs_.get(), clock_,
                                       faults_.get(), upload_options);
  purger_ = std::make_unique<SheetPurger>(db_.get(), blobs_.get(), clock_, faults_.get());
  tables_ = std::make_unique<TableBrowser>(db_.get());
  purge_worker_ = std::make_unique<PeriodicWorker>(clock_);

  QueueOptions dlq;
  dlq.name = kSnapshotDeadLetterQueue;
  RETURN_IF_ERROR(queues_->CreateQueue(dlq));
  QueueOptions snapshots;
  snapshots.name = kSnapshotQueue;
  snapshots.visibility_timeout_s = 60;
  snapshots.max_receive_count = options_.snapshot_max_receives;
  snapshots.dead_letter_queue = kSnapshotDeadLetterQueue;
  RETURN_IF_ERROR(queues_->CreateQueue(snapshots));

  SnapshotWorker::Options worker_options;
  QueueService* queues = queues_.get();
  worker_options.send_job = [queues](const SnapshotJob& job) {
    return queues->Send(kSnapshotQueue, job.ToJson()).status();
  };
  // The pending item records which node's invocation holds it, so a build a dead node
  // left Active is taken over as soon as that node's lease is gone, not after
  // stale_seconds. runtime_ is made below, so these read it when called. Safe: the
  // worker runs only as runtime_'s queue handler (AddMappings), and ~App stops runtime_
  // (waiting for its invocations) and destroys it before the worker; without a runtime
  // (never the case while a handler runs) there is no owner and nobody is known gone.
  worker_options.owner = [this] {
    return runtime_ ? runtime_->membership().owner() : std::string();
  };
  worker_options.owner_live = [this](const std::string& owner) -> Result<bool> {
    if (!runtime_) return true;
    return runtime_->membership().IsLive(owner);
  };
  snapshot_worker_ = std::make_unique<SnapshotWorker>(
      log_.get(), clock_, faults_.get(), MakeSnapshotBuildFactory(blobs_.get()),
      std::move(worker_options));

  LifecycleSweeperOptions sweep;
  sweep.rule.tag_key = kAutoDeleteTag;
  sweep.rule.tag_value = "true";
  sweep.rule.max_age_micros = options_.orphan_ttl_seconds * 1000000;
  Uploads* uploads = uploads_.get();
  sweep.may_run = [this] { return HoldsClusterJob("sweep"); };
  sweeper_ = std::make_unique<LifecycleSweeper>(
      blobs_.get(), clock_, sweep,
      [uploads](const std::string& key) { return uploads->KeepForSweep(key); });

  RetentionOptions retention;
  retention.retain_segments = options_.retain_segments;
  retention.retain_days = options_.retain_days;
  retention.archive = options_.retain_archive;
  retention.period_micros = options_.retention_period_seconds * 1000000;
  retention.may_run = [this] { return HoldsClusterJob("retention"); };
  retention_ =
      std::make_unique<RetentionWorker>(log_.get(), blobs_.get(), clock_, retention);

  SnapshotHealingOptions healing;
  healing.queue = kSnapshotQueue;
  healing.dead_letter_queue = kSnapshotDeadLetterQueue;
  healing.min_age_seconds = options_.heal_min_age_seconds;
  healing.stale_seconds = SnapshotWorker::Options{}.stale_seconds;
  healer_ = std::make_unique<SnapshotHealer>(log_.get(), queues_.get(), clock_, healing);
  heal_worker_ = std::make_unique<PeriodicWorker>(clock_);

  pipeline_events_ = std::make_unique<PipelineEvents>();
  FunctionRuntime::Options runtime_options;
  runtime_options.batching_window_micros = options_.batching_window_micros;
  runtime_options.node = NodeName();
  runtime_options.observer = [events = pipeline_events_.get()](const RuntimeEvent& e) {
    PublishJobEvent(events, e);
  };
  runtime_ = std::make_unique<FunctionRuntime>(db_.get(), clock_, faults_.get(),
                                               std::move(runtime_options));
  queue_watch_ = std::make_unique<PeriodicWorker>(clock_);

  HealthChecker::Dependencies health;
  health.table_store = db_.get();
  health.table_store_kind = sqlite_ != nullptr ? "sqlite" : "postgres";
  health.table_store_location = sqlite_ != nullptr
                                    ? (fs::path(data_dir_) / "sheetlog.db").string()
                                    : postgres_->where();
  health.blob_store = blobs_.get();
  health.blob_store_location =
      options_.s3_blobs
          ? "s3://" + options_.s3_blobs->bucket + " at " + options_.s3_blobs->endpoint
          : (fs::path(data_dir_) / "blobs").string();
  health.membership = &runtime_->membership();
  health.node_name = NodeName();
  health.faults = faults_.get();
  health_ = std::make_unique<HealthChecker>(std::move(health));

  RETURN_IF_ERROR(AddMappings());
  AddCollectors();
  return Status::OK();
}

Status App::AddMappings() {
  StreamMapping effects;
  effects.name = kEntryEffectsMapping;
  effects.feed = feed_.get();
  effects.filter = EntryEffectsFilter();
  effects.handler = MakeEntryEffectsHandler(queues_.get(), kSnapshotQueue, uploads_.get(),
                                            faults_.get());
  effects.batch_size = 100;
  RETURN_IF_ERROR(runtime_->AddStreamMapping(std::move(effects)));

  QueueMapping worker;
  worker.name = "snapshot-worker";
  worker.queues = queues_.get();
  worker.queue = kSnapshotQueue;
  MetricFamily& outcomes = metrics_.Counter(
      "sheetlog_snapshot_messages_total",
      "Snapshot queue messages handled by the snapshot worker, by seed 000 outcome.",
      {"outcome"});
  MetricFamily& durations = metrics_.Histogram(
      "sheetlog_snapshot_invocation_duration_seconds",
      "Clock time the snapshot worker spent on one message, by outcome.", {"outcome"},
      {0.001, 0.01, 0.1, 1, 10, 60, 300, 900});
  worker.handler = MakeSnapshotQueueHandler(
      snapshot_worker_.get(), queues_.get(), kSnapshotQueue,
      [this, &outcomes, &durations](const SnapshotJob& job,
                                    SnapshotWorker::Outcome outcome,
                                    int64_t elapsed_micros) {
        const std::string name = SnapshotWorker::OutcomeName(outcome);
        outcomes.Add({name});
        durations.Observe({name}, static_cast<double>(elapsed_micros) / 1e6);
        pipeline_events_->Publish("snapshot", {{"sheet", job.sheet_id},
                                               {"segment", job.segment},
                                               {"entry", job.entry},
                                               {"outcome", name},
                                               {"seconds", elapsed_micros / 1e6}});
      });
  worker.concurrency = 2;
  worker.time_budget_micros = options_.snapshot_time_budget_seconds * 1000000;
  return runtime_->AddQueueMapping(std::move(worker));
}

void App::AddCollectors() {
  metrics_.AddCollector([this](MetricsRegistry& m) {
    BlobStats blobs = blobs_->Stats();
    m.Gauge("sheetlog_blob_objects", "Objects in the blob store.").Set({}, blobs.objects);
    m.Gauge("sheetlog_blob_bytes", "Bytes of object bodies in the blob store.")
        .Set({}, blobs.bytes);
    Result<std::vector<QueueOptions>> queues = queues_->ListQueues();
    for (const QueueOptions& queue :
         queues.ok() ? *queues : std::vector<QueueOptions>{}) {
      const std::string& name = queue.name;
      Result<QueueStats> stats = queues_->Stats(name);
      if (!stats.ok()) continue;
      if (stats->dead_letter_depth) {
        m.Gauge("sheetlog_queue_dead_letter_depth",
                "Messages in the queue's dead-letter queue.", {"queue"})
            .Set({name}, *stats->dead_letter_depth);
      }
      m.Gauge("sheetlog_queue_visible", "Messages receivable now.", {"queue"})
          .Set({name}, stats->visible);
      m.Gauge("sheetlog_queue_in_flight", "Messages received and hidden.", {"queue"})
          .Set({name}, stats->in_flight);
      m.Gauge("sheetlog_queue_delayed", "Messages not yet due.", {"queue"})
          .Set({name}, stats->delayed);
      m.Gauge("sheetlog_queue_oldest_age_seconds", "Age of the oldest message.",
              {"queue"})
          .Set({name}, stats->oldest_age_s);
    }
    LifecycleSweeperCounters sweeps = sweeper_->counters();
    m.Gauge("sheetlog_sweeper_deleted_objects", "Objects deleted by the lifecycle sweep.")
        .Set({}, sweeps.deleted);
    m.Gauge("sheetlog_sweeper_sweeps", "Lifecycle sweeps run.").Set({}, sweeps.sweeps);
    m.Gauge("sheetlog_add_entry_retries", "Add Entry attempts that lost their condition.")
        .Set({}, log_->retries());
    m.Gauge("sheetlog_appends", "Entries appended since start (system entries included).")
        .Set({}, log_->appends());
    if (Result<std::vector<ShardStats>> shards = feed_->Stats(StreamConsumers());
        shards.ok()) {
      for (const ShardStats& shard : *shards) {
        const std::string id = std::to_string(shard.shard);
        m.Gauge("sheetlog_feed_retained_records", "Change-feed records not yet pruned.",
                {"shard"})
            .Set({id}, shard.retained_records);
        for (const ConsumerShardStats& c : shard.consumers) {
          m.Gauge("sheetlog_feed_lag_records",
                  "Change-feed records after the consumer's checkpoint.",
                  {"consumer", "shard"})
              .Set({c.consumer, id}, c.lag_records);
          m.Gauge("sheetlog_feed_lag_age_seconds",
                  "Age of the oldest change-feed record the consumer has not processed.",
                  {"consumer", "shard"})
              .Set({c.consumer, id}, c.oldest_unprocessed_age_micros / 1e6);
        }
      }
    }
    const int64_t stale_before =
        clock_->NowSeconds() - SnapshotWorker::Options{}.stale_seconds;
    if (Result<PendingSnapshotSummary> pending =
            log_->pending_snapshots()->Summarize(stale_before, nullptr);
        pending.ok()) {
      m.Gauge("sheetlog_pending_snapshots", "Items in the Pending Snapshots table.")
          .Set({}, pending->count);
      m.Gauge("sheetlog_pending_snapshots_stale",
              "Pending snapshots nobody has made progress on for longer than the "
              "worker's stale timeout.")
          .Set({}, pending->stale);
      m.Gauge("sheetlog_pending_snapshot_oldest_age_seconds",
              "Age of the oldest pending snapshot (0 when none).")
          .Set({}, pending->count == 0
                       ? 0
                       : clock_->NowSeconds() - pending->oldest_created_s);
    }
    for (const ShardProgress& shard : runtime_->StreamProgress()) {
      m.Gauge("sheetlog_stream_failed_attempts",
              "Failed attempts of the batch a stream mapping's shard is retrying "
              "(0: progressing).",
              {"mapping", "shard"})
          .Set({shard.mapping, std::to_string(shard.shard)}, shard.failed_attempts);
    }
    for (const MappingStats& mapping : runtime_->Stats()) {
      m.Gauge("sheetlog_function_invocations", "Handler invocations since start.",
              {"mapping"})
          .Set({mapping.name}, mapping.invocations);
      m.Gauge("sheetlog_function_failures",
              "Failed invocations (or messages) since start.", {"mapping"})
          .Set({mapping.name}, mapping.failures);
      m.Gauge("sheetlog_function_running",
              "Invocations under way now (a queue mapping's from its receive).",
              {"mapping"})
          .Set({mapping.name}, mapping.running);
      m.Gauge("sheetlog_function_duplicates",
              "Deliveries the execution history found already done.", {"mapping"})
          .Set({mapping.name}, mapping.duplicates);
      m.Gauge("sheetlog_function_abandoned",
              "Records or messages run again because their earlier invocation died "
              "(a crash between its start and its outcome).",
              {"mapping"})
          .Set({mapping.name}, mapping.abandoned);
    }
    HeadViewCache::Counters views = head_views_->counters();
    MetricFamily& view_reads = m.Gauge(
        "sheetlog_head_view_reads",
        "Reads at a sheet's head by how the loaded sheet served them: hit (already at "
        "the head), extended (carried over new entries), opened (from a snapshot), "
        "reopened (a read of the loaded view found its snapshot truncated away; the "
        "view opened again is also counted as opened).",
        {"how"});
    view_reads.Set({"hit"}, views.hits);
    view_reads.Set({"extended"}, views.extended);
    view_reads.Set({"opened"}, views.opened);
    view_reads.Set({"reopened"}, views.reopened);
    m.Gauge("sheetlog_head_view_sheets", "Sheets kept loaded at their head.")
        .Set({}, static_cast<int64_t>(head_views_->size()));
    RetentionCounters retention = retention_->counters();
    m.Gauge("sheetlog_retention_segments_dropped", "Segments dropped by retention.")
        .Set({}, retention.segments_dropped);
    m.Gauge("sheetlog_retention_errors", "Sheets retention failed to truncate.")
        .Set({}, retention.errors);
    // ClusterMembership measures it at each start and renewal of the lease (PostgreSQL
    // with the system clock); 0 where the node's clock is the one leases use (SQLite:
    // the database's clock is the node's; --clock manual) or before the first measure.
    m.Gauge("sheetlog_clock_skew_seconds",
            "This node's clock minus the database's (PostgreSQL's clock_timestamp()), "
            "measured at each lease renewal; leases are judged on the database's clock, "
            "so a skew misdates only what this node writes. 0 where the node's clock is "
            "the database's (SQLite, --clock manual).")
        .Set({},
             static_cast<double>(runtime_->membership().clock_skew_micros().value_or(0)) /
                 1e6);
    m.Gauge("sheetlog_snapshot_jobs_healed",
            "Snapshot jobs the pipeline's self-healing enqueued again since start (a "
            "Snapshot entry left with no job: lost, or dropped by a queue's retention).")
        .Set({}, healed_jobs_.load());
  });
}

void App::PublishQueueChanges() {
  Result<std::vector<QueueOptions>> queues = queues_->ListQueues();
  if (!queues.ok()) return;
  nlohmann::json now = nlohmann::json::object();
  for (const QueueOptions& queue : *queues) {
    Result<QueueStats> stats = queues_->Stats(queue.name);
    if (!stats.ok()) continue;
    now[queue.name] = {{"visible", stats->visible},
                       {"in_flight", stats->in_flight},
                       {"delayed", stats->delayed},
                       {"dead_letters", stats->dead_letter_depth
                                            ? nlohmann::json(*stats->dead_letter_depth)
                                            : nlohmann::json(nullptr)}};
  }
  if (now == last_queue_stats_) return;
  last_queue_stats_ = now;
  pipeline_events_->Publish("queues", std::move(now));
}

std::vector<std::string> App::StreamConsumers() const {
  std::set<std::string> names;
  for (const ShardProgress& p : runtime_->StreamProgress()) names.insert(p.mapping);
  return {names.begin(), names.end()};
}

Result<std::vector<Violation>> App::PipelineViolations(
    const std::optional<std::string>& sheet, int64_t stall_after_micros) {
  std::vector<Violation> out;
  ASSIGN_OR_RETURN(std::vector<DeadLetterMessage> dead,
                   queues_->ListDeadLetters(kSnapshotDeadLetterQueue, 1000));
  for (const DeadLetterMessage& message : dead) {
    Result<SnapshotJob> job = SnapshotJob::FromJson(message.body);
    if (sheet && (!job.ok() || job->sheet_id != *sheet)) continue;
    Violation v;
    v.invariant = "dead-letter";
    if (job.ok()) {
      v.sheet = job->sheet_id;
      v.segment = job->segment;
    }
    v.detail = "message " + message.id + " (" + message.body.substr(0, 200) +
               ") is in the dead-letter queue " + kSnapshotDeadLetterQueue + " after " +
               std::to_string(message.receive_count) + " receives" +
               (message.last_error.empty() ? std::string()
                                           : "; last error: " + message.last_error) +
               "; fix the cause, then POST /v1/admin/queues/" + kSnapshotQueue +
               "/redrive";
    out.push_back(std::move(v));
  }
  if (sheet || stall_after_micros <= 0) return out;
  std::map<std::pair<std::string, int>, ShardProgress> progress;
  for (ShardProgress& p : runtime_->StreamProgress()) {
    progress[{p.mapping, p.shard}] = std::move(p);
  }
  ASSIGN_OR_RETURN(std::vector<ShardStats> shards, feed_->Stats(StreamConsumers()));
  for (const ShardStats& shard : shards) {
    for (const ConsumerShardStats& c : shard.consumers) {
      if (c.lag_records == 0 || c.oldest_unprocessed_age_micros <= stall_after_micros) {
        continue;
      }
      Violation v;
      v.invariant = "feed-stalled";
      v.detail = "consumer " + c.consumer + " of change-feed shard " +
                 std::to_string(shard.shard) + " has " + std::to_string(c.lag_records) +
                 " records to process, the oldest " +
                 std::to_string(c.oldest_unprocessed_age_micros / 1000000) + " s old";
      auto p = progress.find({c.consumer, shard.shard});
      if (p != progress.end() && p->second.failed_attempts > 0) {
        v.detail += "; its batch failed " + std::to_string(p->second.failed_attempts) +
                    " times, last error: " + p->second.last_error;
      }
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::function<Result<std::optional<std::string>>(const Violation&)>
App::PendingExplainer() {
  auto backlog =
      std::make_shared<PipelineBacklog>(feed_.get(), kEntryEffectsMapping, queues_.get(),
                                        kSnapshotQueue, kSnapshotDeadLetterQueue);
  return [backlog](const Violation& v) -> Result<std::optional<std::string>> {
    if (v.invariant == "blob-auto-delete" && v.blob) {
      return backlog->UntagPending(*v.blob);
    }
    if (v.invariant == "snapshot-stalled" && v.segment && v.num) {
      return backlog->SnapshotPending({v.sheet, *v.segment, *v.num});
    }
    return std::optional<std::string>();
  };
}

Result<SnapshotHealingReport> App::HealSnapshots(const std::atomic<bool>* stopping) {
  ASSIGN_OR_RETURN(SnapshotHealingReport report, healer_->RunOnce(stopping));
  healed_jobs_ += report.enqueued;
  for (const std::string& action : report.actions) {
    spdlog::warn("self-healing: {}", action);
  }
  return report;
}

Result<App::ResetReport> App::Reset() {
  ResetReport report;
  // Each table's owner empties its own tables, all in one transaction (what survives
  // and why: app.h).
  RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(report.sheets, log_->DeleteAll(conn));
    RETURN_IF_ERROR(uploads_->DeleteAll(conn));
    RETURN_IF_ERROR(DeleteAllSheetDeletions(conn));
    RETURN_IF_ERROR(queues_->DeleteAllMessages(conn).status());
    RETURN_IF_ERROR(runtime_->history().DeleteAll(conn).status());
    // After the log: the entries' delete triggers write stream records.
    RETURN_IF_ERROR(feed_->DeleteAllRecords(conn).status());
    return Status::OK();
  }));
  usage_.Clear();
  while (true) {
    BlobListOptions all;  // from the start each time: what was listed is gone
    ASSIGN_OR_RETURN(BlobListResult page, blobs_->List(all));
    if (page.keys.empty()) break;
    for (const BlobInfo& info : page.keys) {
      RETURN_IF_ERROR(blobs_->Delete(info.key));
      ++report.blobs;
    }
  }
  // After the objects (deleting one removes its row): what is left of the S3 store's
  // tag mirror belongs to no object (upload URLs never used). Empty on the directory
  // store.
  RETURN_IF_ERROR(BlobTagMirror(db_.get()).DeleteAll().status());
  return report;
}

void App::PurgeDeletedSheets() {
  if (started_ && options_.workers) {
    purge_worker_->RunSoon();
    return;
  }
  Result<PurgeReport> purged = purger_->PurgeAll();
  if (!purged.ok()) {
    spdlog::warn("purge of deleted sheets failed: {}", purged.status().ToString());
  }
}

Result<BackupReport> App::Backup(const std::string& to) {
  BackupOptions options;
  options.to = to;
  options.app_version = Version();
  options.schema_version = schema_version();
  options.clock = clock_;
  if (sqlite_ == nullptr) {
    return FailedPrecondition(
        "backup of a PostgreSQL table store (" + postgres_->where() +
        "): use PostgreSQL's own backups (pg_basebackup with WAL archiving, or pg_dump); "
        "`sheetlog backup` copies SQLite's sheetlog.db");
  }
  return WriteBackup(*sqlite_, *blobs_, options);
}

Result<RestoreReport> App::Restore(const std::string& from, const std::string& data_dir) {
  std::error_code ec;
  if (fs::exists(data_dir, ec) && !fs::is_empty(data_dir, ec)) {
    return FailedPrecondition("data directory " + data_dir +
                              " is not empty: restore only into an empty or new one");
  }
  ASSIGN_OR_RETURN(
      RestoreReport report,
      RestoreBackup(from, (fs::path(data_dir) / "sheetlog.db").string(),
                    (fs::path(data_dir) / "blobs").string(), SystemClock::Default()));
  AppOptions options;
  options.data_dir = data_dir;
  options.workers = false;
  Result<std::unique_ptr<App>> opened = App::Open(options);
  if (!opened.ok()) {
    return opened.status().Annotate("restored to " + data_dir +
                                    ", but this sheetlog cannot open it");
  }
  return report;
}

std::string App::NodeName() const {
  // The host and the data directory: a restart of this node (same host, same data
  // directory) takes over its predecessor's lease at once. In memory: no name.
  if (data_dir_.empty()) return "";
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::path(data_dir_), ec);
  return std::string(host) + ":" + (ec ? data_dir_ : dir.string());
}

bool App::HoldsClusterJob(const std::string& job) {
  // The claim lives as long as this node's runtime lease: the first node to run the
  // job keeps it until it stops or dies, then the next to try takes it over.
  Result<bool> held = runtime_->membership().ClaimName("job/" + job);
  if (!held.ok()) {
    spdlog::warn("{}: claiming the cluster job failed, skipping this run: {}", job,
                 held.status().ToString());
    return false;
  }
  return *held;
}

Status App::Start() {
  if (started_) return Status::OK();
  if (options_.workers) {
    RETURN_IF_ERROR(runtime_->Start());
    RETURN_IF_ERROR(sweeper_->Start());
    RETURN_IF_ERROR(retention_->Start());
    // At start (a delete a crash interrupted resumes by itself), then every minute of
    // clock (objects a build still running at the delete wrote afterwards).
    constexpr int64_t kSheetPurgePeriodMicros = 60LL * 1000000;
    purge_worker_->Start(kSheetPurgePeriodMicros, /*run_at_start=*/true,
                         [this](const std::atomic<bool>& stopping) {
                           Result<PurgeReport> purged = purger_->PurgeAll(&stopping);
                           if (!purged.ok()) {
                             spdlog::warn("purge of deleted sheets failed: {}",
                                          purged.status().ToString());
                           }
                         });
    RETURN_IF_ERROR(changes_->Start());
    queue_watch_->Start(kQueueWatchPeriodMicros, /*run_at_start=*/true,
                        [this](const std::atomic<bool>&) { PublishQueueChanges(); });
    // At start (what a stop, a crash or the queues' retention lost while the server
    // was down gets a job at once), then every period; once per cluster.
    if (options_.heal_period_seconds > 0) {
      heal_worker_->Start(options_.heal_period_seconds * 1000000, /*run_at_start=*/true,
                          [this](const std::atomic<bool>& stopping) {
                            if (!HoldsClusterJob("heal")) return;
                            Result<SnapshotHealingReport> healed =
                                HealSnapshots(&stopping);
                            if (!healed.ok()) {
                              spdlog::warn("self-healing of snapshots failed: {}",
                                           healed.status().ToString());
                            }
                          });
    }
  }
  started_ = true;
  ready_ = true;
  return Status::OK();
}

void App::Stop() {
  if (!started_) return;
  ready_ = false;
  if (heal_worker_) heal_worker_->Stop();
  if (queue_watch_) queue_watch_->Stop();
  if (changes_) changes_->Stop();
  if (retention_) retention_->Stop();
  if (purge_worker_) purge_worker_->Stop();
  if (sweeper_) sweeper_->Stop();
  if (queues_) queues_->WakeWaiters();
  if (runtime_) runtime_->Stop();
  started_ = false;
}

}  // namespace sheetlog
