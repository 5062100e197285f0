// `sheetlog verify`: checks the invariants of design/architecture.md on the stored
// state of one sheet or of every sheet, and reports each violation precisely (which
// invariant, which sheet, segment, entry or blob, and what was found instead).
//
// It reads the Segment and Entry tables partition by partition in key order (not by
// seq), so a duplicate or missing seq is seen as such rather than hidden by the seq
// index, replays the retained log in memory (src/sheet's Sheet) and compares every
// completed snapshot with the replay, and checks every referenced blob in the blob
// store. Read-only: safe while the server runs (a snapshot completing or an entry
// appended during the run is seen or not, never reported as a violation by itself).
//
// Pending vs violated: on a busy server some findings are only work the pipeline has
// not done yet — an external body still tagged auto-delete while the change feed has
// not delivered its entry to the handler that untags it, a Snapshot entry past the
// stall threshold while its job is still on its way or queued without a failure.
// VerifyOptions::explain_pending (the server's view of its queues and change feed)
// says which; those go to VerifyReport::pending instead of `violations`, and do not
// make the report fail. Every such finding is looked at again after the pass (the
// untag, or the snapshot, may have happened meanwhile: then it is not reported).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/status.h"
#include "src/log/event_log.h"

namespace sheetlog {

// One broken invariant. `invariant` is a stable machine-readable name:
//   segment-gap          Segment nums of a sheet do not run 0..K
//   segment-first-seq    a segment's first_seq is not the previous segment's first_seq
//                        plus its entry count
//   segment-empty        a retained segment holds no entries
//   segment-start        a segment's entry 0 is not a Snapshot entry
//   segment-end          a segment other than the last does not end with EndSegment
//   end-segment-misplaced  an EndSegment entry that is not the last entry of its
//                        segment, or lies in the last segment
//   seq-gap              entry nums skip (the seqs between are missing)
//   seq-duplicate        an entry's seq is already held by an earlier entry
//   seq-mismatch         an entry's seq is not its segment's first_seq + num
//   first-seq            the sheet's first_seq is not its first retained entry's seq
//   last-snapshot        a segment's last_snapshot does not name a completed Snapshot
//                        entry of that segment
//   snapshot-unreadable  a completed snapshot's root or chunks cannot be read
//   snapshot-differs     a completed snapshot's cells differ from replaying the log
//   entry-unreadable     an entry's body cannot be replayed (replay stops there)
//   blob-missing         a referenced blob (external body, snapshot root or chunk) is
//                        not in the blob store
//   blob-auto-delete     a referenced blob still carries the auto-delete tag
//   snapshot-stalled     a Snapshot entry is still not complete longer than
//                        VerifyOptions::stall_after_micros after it was written
// The server adds pipeline-wide ones (App::PipelineViolations): `dead-letter` (a
// message sits in a dead-letter queue) and `feed-stalled` (a change-feed consumer has
// not processed a record for longer than the stall threshold).
struct Violation {
  std::string sheet;
  std::string invariant;
  std::string detail;  // a sentence naming the place and what was found
  std::optional<int64_t> segment;
  std::optional<int64_t> seq;
  std::optional<std::string> blob;
  // The entry's num in `segment` (snapshot-stalled: with segment, its snapshot job).
  std::optional<int64_t> num;
};

struct VerifyReport {
  int64_t sheets = 0;
  int64_t segments = 0;
  int64_t entries = 0;
  int64_t snapshots_compared = 0;  // completed snapshots compared with the replay
  int64_t blobs_checked = 0;
  std::vector<Violation> violations;
  // Findings explained by work still queued or in flight (see "Pending vs violated"),
  // each with why appended to its detail. Not failures: they clear as the pipeline
  // drains.
  std::vector<Violation> pending;
};

struct VerifyOptions {
  std::optional<std::string> sheet;  // nullopt: every sheet
  // With stall_after_micros > 0: report a Snapshot entry written more than that long
  // before `now_micros` (clock time) that is still not complete. Default: off.
  int64_t now_micros = 0;
  int64_t stall_after_micros = 0;
  // Called after each sheet with the number of sheets done (for a progress display).
  std::function<void(int64_t sheets_done)> on_sheet_done;
  // Asked after the pass about each blob-auto-delete and snapshot-stalled finding:
  // why work still queued or in flight explains it (the finding is then pending), or
  // nullopt (it stays a violation). Null: nothing is pending.
  std::function<Result<std::optional<std::string>>(const Violation&)> explain_pending;
};

// NotFound if `options.sheet` names no sheet. Storage errors stop the run; broken
// invariants never do (they are the report).
Result<VerifyReport> Verify(const VerifyOptions& options, EventLog* log,
                            BlobStore* blobs);

}  // namespace sheetlog
