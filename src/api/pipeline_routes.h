// Routes of api.md "Operations" that show and repair the side-effect path: queues and
// their dead letters, the change feed, pending snapshots, failed jobs and their
// replay, and seed 000's manual fallback (reprocess). All behind the token, none
// charged.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "emulator/queue/queue.h"
#include "src/api/router.h"

namespace sheetlog {
class BlobStore;
class ChangeFeed;
class Clock;
class EventLog;
class FunctionRuntime;
class Uploads;
}  // namespace sheetlog

namespace sheetlog::api {

class PipelineRoutes : public RouteGroup {
 public:
  // `stream_consumers` names the change feed's consumers (App::StreamConsumers);
  // `snapshot_queue` is the queue reprocess sends snapshot jobs to.
  PipelineRoutes(QueueService* queues, FunctionRuntime* runtime, ChangeFeed* feed,
                 EventLog* log, BlobStore* blobs, Uploads* uploads, Clock* clock,
                 std::function<std::vector<std::string>()> stream_consumers,
                 std::string snapshot_queue)
      : queues_(*queues),
        runtime_(*runtime),
        feed_(*feed),
        log_(log),
        blobs_(blobs),
        uploads_(uploads),
        clock_(*clock),
        stream_consumers_(std::move(stream_consumers)),
        snapshot_queue_(std::move(snapshot_queue)) {}

  void AddTo(Router& router) override;

  void ListQueues(Call& call);        // GET /v1/admin/queues
  void ListDeadLetters(Call& call);   // GET /v1/admin/queues/{name}/dead-letters
  void Redrive(Call& call);           // POST /v1/admin/queues/{name}/redrive
  void Feed(Call& call);              // GET /v1/admin/feed
  void PendingSnapshots(Call& call);  // GET /v1/admin/pending-snapshots
  void ListJobs(Call& call);          // GET /v1/admin/jobs
  void ReplayJobs(Call& call);        // POST /v1/admin/jobs/replay
  void ReprocessEntries(Call& call);  // POST /v1/admin/reprocess

 private:
  QueueService& queues_;
  FunctionRuntime& runtime_;
  ChangeFeed& feed_;
  EventLog* log_;
  BlobStore* blobs_;
  Uploads* uploads_;
  Clock& clock_;
  std::function<std::vector<std::string>()> stream_consumers_;
  const std::string snapshot_queue_;
};

// The queue `name`: NotFound "no queue 'name'" if there is none.
QueueOptions ExistingQueue(QueueService& queues, const std::string& name);

}  // namespace sheetlog::api
