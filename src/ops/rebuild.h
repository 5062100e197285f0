// `sheetlog rebuild-snapshots`: recreates every retained completed snapshot of a sheet
// from the log and checks each against the one that exists.
//
// Snapshots are rebuilt in log order, each from the one before it plus the entries
// between them, exactly as the snapshot worker builds them, first under fresh scratch
// keys (deleted afterwards), and compared with an in-memory replay of the log and with
// the existing snapshot. Only when the existing one differs (or cannot be read) and the
// rebuild equals the log is it repaired: rebuilt into its own deterministic keys
// (seed 000 "Idempotence"), as the worker would have written it. When older segments
// were truncated, the earliest retained completed snapshot is the base: nothing before
// it is left to rebuild it from, so it is kept as it is and the rebuild starts from it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/status.h"
#include "src/log/event_log.h"
#include "src/snapshot/snapshot_builder.h"

namespace sheetlog {

struct RebuiltSnapshot {
  int64_t seq = 0;
  int64_t segment = 0;
  int64_t num = 0;
  std::string root;
  // "same": the existing snapshot and the rebuild both equal the replay (left as is);
  // "repaired": the existing one differed or could not be read (`detail` says how)
  // and was rewritten from the rebuild; "base": the earliest retained snapshot of a
  // truncated log, kept; "failed": the rebuild failed or does not equal the replay
  // (nothing rewritten; `detail` says why).
  std::string outcome;
  std::string detail;
  int64_t cells = 0;  // cells of the rebuilt (or base) snapshot
};

struct RebuildReport {
  std::string sheet;
  int64_t entries = 0;  // retained entries replayed
  std::vector<RebuiltSnapshot> snapshots;
  int64_t Count(const std::string& outcome) const;
};

struct RebuildOptions {
  // The layout the snapshot worker writes with (chunk keys depend on it).
  SnapshotBuilder::Options builder;
  // Called after each snapshot with the number done so far.
  std::function<void(int64_t snapshots_done)> on_snapshot_done;
};

// NotFound for no such sheet. Storage errors stop the run (what was repaired stays
// repaired). Snapshots are only ever rewritten with what the worker itself would
// write, so running it beside the server is safe.
Result<RebuildReport> RebuildSnapshots(const std::string& sheet_id, EventLog* log,
                                       BlobStore* blobs, const RebuildOptions& options);

}  // namespace sheetlog
