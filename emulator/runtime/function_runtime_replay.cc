// FunctionRuntime's failed and abandoned work (seed 002): ListAbandoned, which also
// resolves the `started` rows of dead invocations whose queue message is gone, and
// Replay, which re-runs a failed stream record through its mapping's handler or
// redrives a failed queue message from its dead-letter queue.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "emulator/env/clock.h"
#include "emulator/runtime/function_runtime.h"
#include "emulator/runtime/function_runtime_internal.h"

namespace sheetlog {

Result<std::vector<ExecutionRow>> FunctionRuntime::ListAbandoned(int64_t since_micros,
                                                                 int64_t until_micros,
                                                                 int limit) {
  // A row is abandoned by its mapping's own time budget; the shortest one bounds the
  // query and each row is checked against its own mapping below.
  int64_t shortest_budget = kDefaultTimeBudgetMicros;
  std::map<std::string, int64_t> budget_of;
  std::map<std::string, const QueueMapping*> queue_of;
  for (const auto& s : streams_) budget_of[s->config.name] = s->config.time_budget_micros;
  for (const auto& q : queues_) {
    budget_of[q->config.name] = q->config.time_budget_micros;
    queue_of[q->config.name] = &q->config;
  }
  for (const auto& [name, budget] : budget_of) {
    shortest_budget = std::min(shortest_budget, budget);
  }
  std::vector<ExecutionRow> out;
  // Rows resolved below drop out of the history's answer, so ask again until a query
  // resolves nothing (each round resolves at least one row or is the last).
  while (true) {
    ASSIGN_OR_RETURN(
        std::vector<ExecutionRow> rows,
        history_.ListAbandoned(since_micros, until_micros, shortest_budget, limit));
    const int64_t now = clock_->NowMicros();
    out.clear();
    int resolved = 0;
    for (ExecutionRow& row : rows) {
      auto budget = budget_of.find(row.source);
      if (budget != budget_of.end() && !history_.IsAbandoned(row, budget->second, now)) {
        continue;
      }
      auto queue = queue_of.find(row.source);
      if (queue != queue_of.end() && !row.detail.empty()) {
        // The runtime keeps the message id as the row's detail (whatever the key).
        ASSIGN_OR_RETURN(std::optional<std::string> holder,
                         queue->second->queues->QueueOfMessage(row.detail));
        if (!holder) {
          // Nothing left to redeliver or replay. A live invocation (over its budget)
          // writes its own outcome; a dead one's is recorded for it.
          if (!live_.Contains(row.invocation_id)) {
            RETURN_IF_ERROR(ResolveGoneMessage(*queue->second, row));
            ++resolved;
          }
          continue;
        }
      }
      out.push_back(std::move(row));
    }
    if (resolved == 0) break;
  }
  return out;
}

Status FunctionRuntime::ResolveGoneMessage(const QueueMapping& m,
                                           const ExecutionRow& row) {
  // The runtime deletes a message only after writing its outcome row, and any later
  // delivery of the message would have written a newer row for its key; so a message
  // that is gone while this dead invocation's `started` row is still the latest was
  // deleted by that invocation's handler before the process died (its work done, or
  // replaced by a delayed copy of itself, which runs under its own key: the snapshot
  // worker's deferral), or expired by retention. Record what the runtime would have
  // recorded after such a handler: `deferred` (neither failed nor abandoned work).
  ASSIGN_OR_RETURN(bool written,
                   history_.RecordIfLatest(
                       row, ExecStatus::kDeferred,
                       "handled by the handler; recorded after its invocation died: "
                       "message " +
                           row.detail + " was gone, nothing left to redeliver"));
  if (written) {
    spdlog::info(
        "runtime: {}: {}: dead invocation {} had already disposed of message {}; its "
        "started row is resolved as deferred",
        m.name, row.partition_key, row.invocation_id, row.detail);
  }
  return Status::OK();  // not written: a newer row came first, not abandoned either
}

Result<std::vector<FunctionRuntime::ReplayItem>> FunctionRuntime::Replay(
    int64_t since_micros, int64_t until_micros, int limit) {
  ASSIGN_OR_RETURN(std::vector<ExecutionRow> failed,
                   history_.ListFailed(since_micros, until_micros, limit));
  // Work whose invocation died (a crash between `started` and its outcome row) is
  // replayed like failed work.
  if (static_cast<int>(failed.size()) < limit) {
    ASSIGN_OR_RETURN(std::vector<ExecutionRow> abandoned,
                     ListAbandoned(since_micros, until_micros,
                                   limit - static_cast<int>(failed.size())));
    failed.insert(failed.end(), abandoned.begin(), abandoned.end());
  }
  std::vector<ReplayItem> items;
  for (const ExecutionRow& row : failed) {
    Result<ReplayItem> item =
        ReplayItem{row.partition_key, row.source, "not-replayable",
                   "no mapping named '" + row.source + "' in this runtime"};
    for (auto& stream : streams_) {
      if (stream->config.name == row.source) item = ReplayStream(*stream, row);
    }
    for (auto& queue : queues_) {
      if (queue->config.name == row.source) item = ReplayQueue(*queue, row);
    }
    RETURN_IF_ERROR(item.status());
    items.push_back(std::move(item).value());
  }
  return items;
}

Result<FunctionRuntime::ReplayItem> FunctionRuntime::ReplayStream(
    StreamState& mapping, const ExecutionRow& row) {
  const StreamMapping& m = mapping.config;
  ReplayItem item{row.partition_key, m.name, "not-replayable", ""};
  // The default key is "<mapping>:<shard>:<sequence>".
  const std::string prefix = m.name + ":";
  const size_t colon = row.partition_key.rfind(':');
  int shard = -1;
  int64_t sequence = -1;
  if (!m.history_key && row.partition_key.rfind(prefix, 0) == 0 &&
      colon != std::string::npos && colon > prefix.size()) {
    shard =
        std::atoi(row.partition_key.substr(prefix.size(), colon - prefix.size()).c_str());
    sequence = std::atoll(row.partition_key.substr(colon + 1).c_str());
  }
  if (sequence < 1) {
    item.detail = "not a record key of mapping " + m.name;
    return item;
  }
  ASSIGN_OR_RETURN(std::vector<StreamRecord> records,
                   m.feed->Read(shard, sequence - 1, 1));
  if (records.empty() || records.front().sequence != sequence) {
    item.detail = "the record has left the stream (past its retention)";
    return item;
  }
  ASSIGN_OR_RETURN(std::optional<ExecutionRow> latest,
                   history_.Latest(row.partition_key));
  if (latest && latest->status != ExecStatus::kFailed &&
      !history_.IsAbandoned(*latest, m.time_budget_micros, clock_->NowMicros())) {
    item.outcome = "skipped";
    item.detail = "latest status is now " + std::string(ExecStatusText(latest->status));
    return item;
  }
  Status status = InvokeStream(mapping, shard, records);
  ASSIGN_OR_RETURN(latest, history_.Latest(row.partition_key));
  if (status.ok() && latest && latest->status == ExecStatus::kSucceeded) {
    item.outcome = "succeeded";
  } else if (status.ok()) {
    item.outcome = "skipped";  // the guard found it done or running elsewhere
    item.detail = "another invocation ran it";
  } else {
    item.outcome = "failed";
    item.detail = status.ToString();
    mapping.failures.fetch_add(1);
  }
  return item;
}

Result<FunctionRuntime::ReplayItem> FunctionRuntime::ReplayQueue(
    QueueState& mapping, const ExecutionRow& row) {
  const QueueMapping& m = mapping.config;
  ReplayItem item{row.partition_key, m.name, "not-replayable", ""};
  const std::string prefix = m.name + ":";
  if (m.history_key || row.partition_key.rfind(prefix, 0) != 0) {
    item.detail = "not a message key of mapping " + m.name;
    return item;
  }
  const std::string message_id = row.partition_key.substr(prefix.size());
  ASSIGN_OR_RETURN(QueueOptions queue, m.queues->GetQueue(m.queue));
  if (queue.dead_letter_queue.empty()) {
    item.detail = "queue " + m.queue + " has no dead-letter queue";
    return item;
  }
  Result<int64_t> moved = m.queues->Redrive(queue.dead_letter_queue, message_id);
  if (!moved.ok() && !moved.status().IsNotFound()) return moved.status();
  if (!moved.ok() || *moved == 0) {
    item.detail = "message " + message_id + " is not in " + queue.dead_letter_queue +
                  " (still in " + m.queue + " awaiting its retry, or gone)";
    return item;
  }
  item.outcome = "redriven";
  item.detail = "message " + message_id + " moved from " + queue.dead_letter_queue +
                " to " + m.queue;
  return item;
}

}  // namespace sheetlog
