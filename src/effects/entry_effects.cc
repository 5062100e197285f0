#include "src/effects/entry_effects.h"

#include "emulator/env/faults.h"
#include "src/log/tables.h"

namespace sheetlog {

EventFilter EntryEffectsFilter() {
  return EventFilter{{
      FilterPattern{{StreamEventName::kInsert},
                    {AttributeTest::Equals("type", {kSnapshotType})}},
      FilterPattern{{StreamEventName::kInsert}, {AttributeTest::Exists("external")}},
  }};
}

StreamHandler MakeEntryEffectsHandler(QueueService* queues,
                                      const std::string& snapshot_queue, Uploads* uploads,
                                      FaultInjector* faults) {
  return [=](const std::vector<StreamRecord>& batch, InvocationContext&) -> Status {
    for (const StreamRecord& record : batch) {
      const nlohmann::json& entry = record.new_image;
      if (!entry.is_object()) continue;
      if (entry.value("type", "") == kSnapshotType) {
        SnapshotJob job{entry.value("sheet_id", ""), entry.value("segment", int64_t{0}),
                        entry.value("num", int64_t{0})};
        RETURN_IF_ERROR(queues->Send(snapshot_queue, job.ToJson()).status());
        RETURN_IF_ERROR(faults->Hit(FaultPoint::kEffectsAfterSnapshotSend));
      }
      if (entry.contains("external") && entry["external"].is_string()) {
        RETURN_IF_ERROR(faults->Hit(FaultPoint::kEffectsBeforeUntag));
        RETURN_IF_ERROR(uploads->Untag(entry["external"].get<std::string>()));
      }
    }
    return Status::OK();
  };
}

Status QueueMessageControl::Defer(int64_t seconds) {
  // The copy first: a crash between the two leaves a duplicate, never no message.
  RETURN_IF_ERROR(queues_->Send(queue_, body_, seconds).status());
  return Delete();
}

Status QueueMessageControl::Delete() {
  Status status = queues_->Delete(queue_, receipt_);
  // A stale handle means a newer delivery owns the message now; our part is done.
  return status.IsConditionFailed() ? Status::OK() : status;
}

QueueHandler MakeSnapshotQueueHandler(SnapshotWorker* worker, QueueService* queues,
                                      const std::string& snapshot_queue,
                                      SnapshotOutcomeObserver observe) {
  return [=](const std::vector<ReceivedMessage>& messages,
             InvocationContext& ctx) -> Status {
    for (const ReceivedMessage& message : messages) {
      Result<SnapshotJob> job = SnapshotJob::FromJson(message.body);
      if (!job.ok()) {
        ctx.ReportItemFailure(message.id, job.status().message());  // poison: to the DLQ
        continue;
      }
      QueueMessageControl control(queues, snapshot_queue, message);
      Status error;
      const int64_t remaining_before = ctx.RemainingMicros();
      SnapshotWorker::Outcome outcome =
          worker->HandleMessage(*job, control, ctx.deadline_micros(), &error);
      if (observe) observe(*job, outcome, remaining_before - ctx.RemainingMicros());
      if (outcome == SnapshotWorker::Outcome::kFailed) {
        ctx.ReportItemFailure(message.id, error.ToString());
        continue;
      }
      ctx.MarkMessageHandled(message.id);
    }
    return Status::OK();
  };
}

}  // namespace sheetlog
