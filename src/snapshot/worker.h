// The snapshot worker: seed 000's "Snapshot Creation" and "Checkpoints", step by step.
//
// It consumes the snapshot queue. Each message names one Snapshot entry (sheet,
// segment, entry num). Messages may be duplicated, late, reordered, or delivered to two
// invocations at once; invocations may crash between any two writes or run out of
// time. The Pending Snapshots table orchestrates: one item per snapshot in progress,
// with Active, Modified, Increment (optimistic concurrency) and State (checkpoint).
//
// HandleMessage walks the seed's cases in its order; each case is a named outcome:
//   kDeferredEarlierPending  an earlier pending snapshot exists for the log: wait
//                            (visibility timeout = defer_seconds), exit
//   kDuplicateLostClaim      the pending entry exists and our conditional claim on
//                            Increment lost: another invocation has it: wait for it
//                            (defer by stale_seconds; see "Losers wait" below)
//   kDeferredActive          the pending entry is Active and not timed out: visibility =
//                            time remaining before it times out, exit
//   kLateDuplicate           no pending entry and the segment's last snapshot is
//                            already at or past this one: delete message
//   kDuplicateCreateFailed   the conditional create of the pending entry failed: wait
//                            for the creator (defer by stale_seconds)
//   kDeferredEarlierUnprocessed  an earlier Snapshot entry in the log is not complete:
//                            clear Active, defer, exit
//   kLostCheckpoint          a forward-only checkpoint write failed: another invocation
//                            is active: wait for it (defer by stale_seconds), exit
//   kHandedOff               near the end of the time budget after a checkpoint: clear
//                            Active, redeliver now, exit; the next invocation resumes
//                            from the checkpoint
// Losers wait: seed 000 deletes the message of an invocation that loses a conditional
// write ("this must be a duplicate message"), but the same message can be in two
// invocations at once (one overran its budget while the message was redelivered), and
// then the winner may hold only a stale receipt: if it fails, no message is left and
// the pending item holds back every later snapshot of the sheet for good. So a loser
// defers the job by stale_seconds instead; when it comes back the winner has
// completed (kLateDuplicate: deleted), is still checkpointing (kDeferredActive) or
// died (its claim is stale: taken over). Until its snapshot completes, a job always
// has a message in the queue.
// Every "defer"/"redeliver" goes through MessageControl::Defer, which never counts
// against the queue's maxReceiveCount: only kFailed does.
//   kCompleted               root key onto the Snapshot entry, segment last snapshot,
//                            pending entry deleted, message deleted
//   kSheetGone               the sheet was deleted meanwhile: delete the message
//   kFailed                  an error, or the deadline passed before a conditional
//                            write (Lambda would have killed the invocation: it stops
//                            and writes nothing more); the message stays and reappears
//                            after its visibility timeout (the runtime retries; the DLQ
//                            catches poison messages)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/status.h"
#include "emulator/table/request_units.h"
#include "src/log/event_log.h"

namespace sheetlog {

// What a snapshot queue message names.
struct SnapshotJob {
  std::string sheet_id;
  int64_t segment = 0;
  int64_t entry = 0;

  std::string ToJson() const;
  static Result<SnapshotJob> FromJson(const std::string& text);
};

// How the worker acts on the message it is handling (the runtime backs this with the
// queue and the message's receipt handle).
class MessageControl {
 public:
  virtual ~MessageControl() = default;
  // Have the job delivered again `seconds` from now (0 = at once), WITHOUT the wait
  // counting as a failed delivery. Seed 000 defers by changing the visibility timeout
  // of the message it keeps, but SQS counts every receive against the redrive
  // policy's maxReceiveCount, so a snapshot deferred ten times behind a backlog would
  // be dead-lettered with no failure at all. Implementations send a fresh copy of the
  // message with that delay, then delete this one (a crash in between leaves a
  // duplicate, which the worker tolerates; never a lost job).
  virtual Status Defer(int64_t seconds) = 0;
  // The work is done (or was someone else's): remove the message.
  virtual Status Delete() = 0;
};

// One resumable snapshot build (implemented over src/snapshot's builder).
class SnapshotBuild {
 public:
  virtual ~SnapshotBuild() = default;
  // Writes the next chunk. True once every chunk is written.
  virtual Result<bool> WriteNextChunk() = 0;
  // Small JSON from which a new build resumes where this one stands.
  virtual nlohmann::json Checkpoint() const = 0;
  // Writes the root manifest; returns its key. REQUIRES: WriteNextChunk returned true.
  virtual Result<std::string> Finish() = 0;
};

// Creates a build of `job`'s snapshot (its Snapshot entry has seq `job_seq`) from the
// previous completed snapshot (root key, if any) and the log entries after it, resuming
// from `checkpoint` (null = start).
using SnapshotBuildFactory = std::function<Result<std::unique_ptr<SnapshotBuild>>(
    const SnapshotJob& job, int64_t job_seq,
    const std::optional<std::string>& previous_root,
    const std::vector<EntryRecord>& entries_since, const nlohmann::json& checkpoint)>;

// Thread-safe: Handle runs on several queue-consumer threads at once (its state is in
// the tables and the blob store).
class SnapshotWorker {
 public:
  struct Options {
    // Visibility timeout when deferring behind an earlier snapshot. Default: 5 s.
    int64_t defer_seconds = 5;
    // An Active pending entry whose Modified is older than this is presumed dead and
    // may be claimed. It bounds the time between checkpoints, not a whole build
    // (seed 000). Default: 60 s.
    int64_t stale_seconds = 60;
    // Hand off when less than this remains of the invocation's budget after a
    // checkpoint. Default: 10 s.
    int64_t handoff_margin_micros = 10 * 1000000LL;
    // Sends a message for a snapshot job (the snapshot queue). When set, a completed
    // snapshot sends one for the next unfinished Snapshot entry of its sheet at once,
    // so a backlog drains at build speed instead of one defer_seconds per snapshot
    // (the next one's own message is deferred; the extra one is a harmless duplicate).
    std::function<Status(const SnapshotJob& job)> send_job;
    // Test hook: runs right before each conditional write of the seed's steps, named
    // "claim", "create", "checkpoint" and "complete", where a concurrent invocation may
    // slip in (or the clock pass the invocation's deadline: the write is then not made).
    std::function<void(const std::string& step)> test_before_conditional_write;
  };

  enum class Outcome {
    kDeferredEarlierPending,
    kDuplicateLostClaim,
    kDeferredActive,
    kLateDuplicate,
    kDuplicateCreateFailed,
    kDeferredEarlierUnprocessed,
    kLostCheckpoint,
    kHandedOff,
    kCompleted,
    kFailed,
    // Only with the fault point "snapshot.message_lost" armed: the message was deleted
    // before any work, as if lost (tests of the manual fallback).
    kMessageLost,
    // The sheet no longer exists (deleted while its job waited): nothing to build;
    // the message is deleted rather than failed until it is dead-lettered.
    kSheetGone,
  };
  static const char* OutcomeName(Outcome outcome);

  SnapshotWorker(EventLog* log, Clock* clock, FaultInjector* faults,
                 SnapshotBuildFactory build_factory, Options options);

  // Handles one delivery of a snapshot message. `deadline_micros` is the end of the
  // invocation's time budget on the clock. On kFailed, `*error` says why.
  Outcome HandleMessage(const SnapshotJob& job, MessageControl& message,
                        int64_t deadline_micros, Status* error = nullptr,
                        UnitMeter* meter = nullptr);

 private:
  // After a completion: a message for the next unfinished Snapshot entry (see
  // Options::send_job).
  void SendNextJob(const SnapshotJob& job, int64_t job_seq, UnitMeter* meter);

  EventLog* log_;
  Clock* clock_;
  FaultInjector* faults_;
  SnapshotBuildFactory build_factory_;
  Options options_;
};

}  // namespace sheetlog
