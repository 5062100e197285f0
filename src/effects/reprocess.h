// Seed 000's "Manual Fallback": when a side effect was lost (stream records expired
// while the handler was down, a queue message deleted before its work, a crash between
// steps), read the log from a point in time and re-trigger every side effect that has
// not happened:
//   - a Snapshot entry without a root    -> a snapshot job on the snapshot queue
//   - an external body still auto-delete -> untag it (the blob is referenced)
// Both are what the entry-effects handler would have done, and both are idempotent
// (the snapshot worker treats extra messages as duplicates), so a reprocess is safe
// while the server runs, and twice.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/queue/queue.h"
#include "src/log/event_log.h"
#include "src/log/uploads.h"

namespace sheetlog {

struct ReprocessRequest {
  int64_t since_seconds = 0;         // entries created at or after this (unix seconds)
  std::optional<std::string> sheet;  // one sheet; nullopt = every sheet
};

struct ReprocessReport {
  int64_t sheets = 0;   // sheets read
  int64_t entries = 0;  // entries at or after `since` looked at
  int64_t snapshots_enqueued = 0;
  int64_t blobs_untagged = 0;
  // One line per action taken, e.g. "sheet <id>: snapshot seq 40 enqueued".
  std::vector<std::string> actions;
};

// NotFound if `sheet` is given and does not exist. Errors stop the run; what was done
// before stays done (and a rerun skips it).
Result<ReprocessReport> Reprocess(const ReprocessRequest& request, EventLog* log,
                                  BlobStore* blobs, Uploads* uploads,
                                  QueueService* queues,
                                  const std::string& snapshot_queue);

}  // namespace sheetlog
