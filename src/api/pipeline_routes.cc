#include "src/api/pipeline_routes.h"

#include <time.h>

#include <map>

#include "emulator/env/clock.h"
#include "emulator/env/time_text.h"
#include "emulator/runtime/execution_history.h"
#include "emulator/runtime/function_runtime.h"
#include "emulator/stream/change_feed.h"
#include "src/api/request_params.h"
#include "src/effects/reprocess.h"
#include "src/log/pending_snapshots.h"

namespace sheetlog::api {

namespace {

// A time field of a request body: required, ISO-8601 UTC or unix seconds.
int64_t RequiredTimeField(const char* name, const std::optional<std::string>& text) {
  if (!text) {
    throw ApiError::Validation(std::string("field '") + name +
                               "' is required (ISO-8601 UTC, e.g. 2026-01-01T00:00:00Z)");
  }
  std::optional<int64_t> seconds = ParseTimePoint(*text);
  if (!seconds) {
    throw ApiError::Validation(std::string("field '") + name +
                               "' must be ISO-8601 UTC (2026-01-01T00:00:00Z) or unix "
                               "seconds, got '" +
                               *text + "'");
  }
  return *seconds;
}

json QueueJson(QueueService& queues, const QueueOptions& q) {
  QueueStats stats = Check(queues.Stats(q.name));
  return json{{"name", q.name},
              {"visible", stats.visible},
              {"in_flight", stats.in_flight},
              {"delayed", stats.delayed},
              {"oldest_age_s", stats.oldest_age_s},
              {"visibility_timeout_s", q.visibility_timeout_s},
              {"retention_s", q.retention_s},
              {"max_receive_count", q.max_receive_count},
              {"dead_letter_queue",
               q.dead_letter_queue.empty() ? json(nullptr) : json(q.dead_letter_queue)},
              {"dead_letter_depth",
               stats.dead_letter_depth ? json(*stats.dead_letter_depth) : json(nullptr)}};
}

}  // namespace

QueueOptions ExistingQueue(QueueService& queues, const std::string& name) {
  Result<QueueOptions> queue = queues.GetQueue(name);
  if (queue.status().IsNotFound()) throw ApiError::NotFound("no queue '" + name + "'");
  return Check(std::move(queue));
}

void PipelineRoutes::AddTo(Router& router) {
  AddRoutes<PipelineRoutes>(
      router, this,
      {
          {"GET", "/v1/admin/queues", &PipelineRoutes::ListQueues, kUnmeteredRoute},
          {"GET", R"(/v1/admin/queues/([^/]+)/dead-letters)",
           &PipelineRoutes::ListDeadLetters, kUnmeteredRoute},
          {"POST", R"(/v1/admin/queues/([^/]+)/redrive)", &PipelineRoutes::Redrive,
           kUnmeteredRoute},
          {"GET", "/v1/admin/feed", &PipelineRoutes::Feed, kUnmeteredRoute},
          {"GET", "/v1/admin/pending-snapshots", &PipelineRoutes::PendingSnapshots,
           kUnmeteredRoute},
          {"GET", "/v1/admin/jobs", &PipelineRoutes::ListJobs, kUnmeteredRoute},
          {"POST", "/v1/admin/jobs/replay", &PipelineRoutes::ReplayJobs, kUnmeteredRoute},
          {"POST", "/v1/admin/reprocess", &PipelineRoutes::ReprocessEntries,
           kUnmeteredRoute},
      });
}

void PipelineRoutes::ListQueues(Call& call) {
  json out = json::array();
  for (const QueueOptions& q : Check(queues_.ListQueues())) {
    out.push_back(QueueJson(queues_, q));
  }
  call.Reply(200, json{{"queues", out}});
}

void PipelineRoutes::ListDeadLetters(Call& call) {
  QueueOptions queue = ExistingQueue(queues_, call.Path(1));
  const std::string dlq =
      queue.dead_letter_queue.empty() ? queue.name : queue.dead_letter_queue;
  json out = json::array();
  for (const DeadLetterMessage& m : Check(queues_.ListDeadLetters(
           dlq, QueryLimit(call, 100, 1000), call.Query("after").value_or("")))) {
    out.push_back(json{{"id", m.id},
                       {"body", m.body},
                       {"receive_count", m.receive_count},
                       {"last_error", m.last_error}});
  }
  call.Reply(200, json{{"dead_letter_queue", dlq}, {"messages", out}});
}

void PipelineRoutes::Redrive(Call& call) {
  QueueOptions queue = ExistingQueue(queues_, call.Path(1));
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<std::string> message_id = fields.String("message_id");
  fields.Finish();
  // Either the dead-letter queue itself or a queue that has one.
  const std::string dlq =
      queue.dead_letter_queue.empty() ? queue.name : queue.dead_letter_queue;
  int64_t moved = Check(queues_.Redrive(dlq, message_id));
  call.Reply(200, json{{"dead_letter_queue", dlq}, {"moved", moved}});
}

void PipelineRoutes::Feed(Call& call) {
  json shards = json::array();
  std::map<std::pair<std::string, int>, ShardProgress> progress;
  for (ShardProgress& p : runtime_.StreamProgress()) {
    progress[{p.mapping, p.shard}] = std::move(p);
  }
  for (const ShardStats& s : Check(feed_.Stats(stream_consumers_()))) {
    json consumers = json::array();
    for (const ConsumerShardStats& c : s.consumers) {
      json consumer{
          {"consumer", c.consumer},
          {"checkpoint", c.checkpoint},
          {"lag_records", c.lag_records},
          {"oldest_unprocessed_age_s", c.oldest_unprocessed_age_micros / 1000000},
          {"failed_attempts", 0},
          {"last_error", nullptr},
          {"next_attempt", nullptr}};
      // A batch that keeps failing holds its shard back: say so, and why.
      auto p = progress.find({c.consumer, s.shard});
      if (p != progress.end() && p->second.failed_attempts > 0) {
        consumer["failed_attempts"] = p->second.failed_attempts;
        consumer["last_error"] = p->second.last_error;
        consumer["next_attempt"] = p->second.next_attempt_micros / 1000000;
      }
      consumers.push_back(std::move(consumer));
    }
    shards.push_back(json{{"shard", s.shard},
                          {"latest", s.latest_sequence},
                          {"oldest", s.oldest_sequence},
                          {"retained", s.retained_records},
                          {"consumers", consumers}});
  }
  call.Reply(200, json{{"stream", feed_.stream()}, {"shards", shards}});
}

void PipelineRoutes::PendingSnapshots(Call& call) {
  const int limit = QueryLimit(call, 100, 1000);
  json out = json::array();
  const std::vector<PendingSnapshot> pending =
      Check(log_->pending_snapshots()->Scan(limit, &call.meter));
  const int64_t now = clock_.NowSeconds();
  for (const PendingSnapshot& p : pending) {
    out.push_back(json{{"sheet", p.sheet_id},
                       {"segment", p.segment},
                       {"entry", p.entry},
                       {"created", p.created},
                       {"modified", p.modified},
                       {"age_s", now - p.modified},
                       {"active", p.active},
                       {"increment", p.increment},
                       {"has_checkpoint", p.state.has_value()}});
  }
  call.Reply(200, json{{"pending_snapshots", out}});
}

void PipelineRoutes::ListJobs(Call& call) {
  const std::string status = call.Query("status").value_or("failed");
  if (status != "failed" && status != "abandoned") {
    throw ApiError::Validation(
        "status must be failed (the keys whose latest run failed) or abandoned "
        "(the keys whose latest run was started by an invocation that died)");
  }
  const int64_t now = clock_.NowSeconds();
  const int64_t since = QueryTime(call, "since", 0);
  const int64_t until = QueryTime(call, "until", now + 1);
  const int limit = QueryLimit(call, 100, 10000);
  json out = json::array();
  const std::vector<ExecutionRow> rows =
      status == "failed"
          ? Check(runtime_.history().ListFailed(since * 1000000, until * 1000000, limit))
          : Check(runtime_.ListAbandoned(since * 1000000, until * 1000000, limit));
  for (const ExecutionRow& row : rows) {
    out.push_back(json{{"key", row.partition_key},
                       {"status", status},
                       {"sequence", row.sequence},
                       {"source", row.source},
                       {"at", row.created_at / 1000000},
                       {"error", row.error},
                       {"detail", row.detail}});
  }
  call.Reply(200, json{{"jobs", out}});
}

// Seed 002's replay of the keys whose latest run failed, in [since, until).
void PipelineRoutes::ReplayJobs(Call& call) {
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<std::string> since_text = fields.String("since");
  std::optional<std::string> until_text = fields.String("until");
  std::optional<int64_t> limit = fields.Int("limit");
  fields.Finish();
  const int64_t since = RequiredTimeField("since", since_text);
  const int64_t until =
      until_text ? RequiredTimeField("until", until_text) : clock_.NowSeconds() + 1;
  if (until < since) {
    throw ApiError::Validation("'until' must not be before 'since'");
  }
  if (limit && (*limit < 1 || *limit > 10000)) {
    throw ApiError::Validation("field 'limit' must be 1..10000");
  }
  json jobs = json::array();
  std::map<std::string, int64_t> counts;
  for (const FunctionRuntime::ReplayItem& item : Check(runtime_.Replay(
           since * 1000000, until * 1000000, static_cast<int>(limit.value_or(1000))))) {
    ++counts[item.outcome];
    jobs.push_back(json{{"key", item.key},
                        {"source", item.source},
                        {"outcome", item.outcome},
                        {"detail", item.detail}});
  }
  json out{{"jobs", jobs}};
  for (const char* outcome :
       {"succeeded", "failed", "redriven", "skipped", "not-replayable"}) {
    out[outcome] = counts[outcome];
  }
  call.Reply(200, out);
}

void PipelineRoutes::ReprocessEntries(Call& call) {
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<std::string> since_text = fields.String("since");
  std::optional<std::string> sheet = fields.String("sheet");
  fields.Finish();
  const int64_t since = RequiredTimeField("since", since_text);
  ReprocessRequest request{since, sheet};
  ReprocessReport report =
      Check(Reprocess(request, log_, blobs_, uploads_, &queues_, snapshot_queue_));
  call.Reply(200, json{{"sheets", report.sheets},
                       {"entries", report.entries},
                       {"snapshots_enqueued", report.snapshots_enqueued},
                       {"blobs_untagged", report.blobs_untagged},
                       {"actions", report.actions}});
}

}  // namespace sheetlog::api
