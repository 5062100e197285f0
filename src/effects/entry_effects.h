// The side effects of the event log, run from the change feed (seed 000): a Lambda on
// the entry table's stream, filtered so it sees only the records that need work —
//   - a new Snapshot entry  -> send a snapshot job to the snapshot queue (duplicates are
//                              fine: the snapshot worker is idempotent);
//   - a new entry with an external body -> remove the blob's auto-delete tag.
// And the snapshot queue's consumer, which hands each message to the SnapshotWorker.
#pragma once

#include <functional>

#include "emulator/queue/queue.h"
#include "emulator/runtime/function_runtime.h"
#include "src/log/uploads.h"
#include "src/snapshot/worker.h"

namespace sheetlog {

// The stream mapping that runs these effects (also the name of its change-feed
// checkpoints).
inline constexpr const char* kEntryEffectsMapping = "entry-effects";

// INSERTs of Snapshot entries, and INSERTs of entries with `external`.
EventFilter EntryEffectsFilter();

StreamHandler MakeEntryEffectsHandler(QueueService* queues,
                                      const std::string& snapshot_queue, Uploads* uploads,
                                      FaultInjector* faults);

// `observe` (optional) hears every handled message's outcome and how much clock time
// the worker spent on it (for metrics).
using SnapshotOutcomeObserver = std::function<void(
    const SnapshotJob& job, SnapshotWorker::Outcome outcome, int64_t elapsed_micros)>;
QueueHandler MakeSnapshotQueueHandler(SnapshotWorker* worker, QueueService* queues,
                                      const std::string& snapshot_queue,
                                      SnapshotOutcomeObserver observe = {});

// MessageControl over a received queue message. Defer sends a copy of the message
// delayed by the deferral (a fresh receive count), then deletes this one.
class QueueMessageControl : public MessageControl {
 public:
  QueueMessageControl(QueueService* queues, std::string queue,
                      const ReceivedMessage& message)
      : queues_(queues),
        queue_(std::move(queue)),
        receipt_(message.receipt_handle),
        body_(message.body) {}
  Status Defer(int64_t seconds) override;
  Status Delete() override;

 private:
  QueueService* queues_;
  std::string queue_;
  std::string receipt_;
  std::string body_;
};

}  // namespace sheetlog
