// SnapshotWorker: the snapshot queue's consumer, seed 000's "Snapshot Creation" and
// "Checkpoints". Each message names one Snapshot entry (sheet, segment, entry num);
// HandleMessage builds that snapshot from the previous one and the entries since,
// checkpointing into the entry's Pending Snapshots item, and completes it (root key onto
// the Snapshot entry, the segment's last snapshot forward, pending item and message
// deleted). Each delivery ends in one Outcome (below).
//
// Messages may be duplicated, late, reordered or delivered to two invocations at once,
// and invocations may crash between any two writes or run out of time: conditional
// writes on the pending item decide who builds, and a loser waits (defers) instead of
// deleting the message, so until its snapshot completes a job always has a message in
// the queue (unless a queue's retention drops it: src/effects/snapshot_healing.h).
// Deferring never counts against the queue's maxReceiveCount; only kFailed does.
// The seed's cases step by step, and why losers wait: docs/architecture.md "The
// snapshot worker".
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
    // (seed 000). An entry Active, not timed out, and whose claimant's lease (when
    // recorded: see `owner_live`) still lives is waited for. Default: 60 s.
    int64_t stale_seconds = 60;
    // Hand off when less than this remains of the invocation's budget after a
    // checkpoint. Default: 10 s.
    int64_t handoff_margin_micros = 10 * 1000000LL;
    // Sends a message for a snapshot job (the snapshot queue). When set, a completed
    // snapshot sends one for the next unfinished Snapshot entry of its sheet at once,
    // so a backlog drains at build speed instead of one defer_seconds per snapshot
    // (the next one's own message is deferred; the extra one is a harmless duplicate).
    std::function<Status(const SnapshotJob& job)> send_job;
    // This process's lease owner id (ClusterMembership::owner, emulator/runtime), written
    // into the pending entry when the worker creates or claims it. Unset, or "": none
    // (no owner on a create; a claim writes "" over another owner, so that owner's
    // lease no longer speaks for the item).
    std::function<std::string()> owner;
    // Whether the lease of the owner id given lives now (ClusterMembership::IsLive).
    // When set, an Active entry not timed out whose recorded owner is another
    // process's and whose lease is gone (that process died: released by its restart,
    // or lapsed) is claimed at once, as a stale one, instead of being waited for up to
    // stale_seconds. Entries without an owner (written before migration 015, or by a
    // process without a lease), this process's own (a live thread of ours may hold
    // it), and errors of the check keep the age rule alone.
    std::function<Result<bool>(const std::string& owner)> owner_live;
    // Test hook: runs right before each conditional write of the seed's steps, named
    // "claim", "create", "checkpoint" and "complete", where a concurrent invocation may
    // slip in (or the clock pass the invocation's deadline: the write is then not made).
    std::function<void(const std::string& step)> test_before_conditional_write;
  };

  // How a delivery ended. Every "defer" goes through MessageControl::Defer.
  enum class Outcome {
    // An earlier pending snapshot exists for the log: deferred by defer_seconds. An
    // earlier item whose Snapshot entry lies before the sheet's first_seq (truncated
    // away) is obsolete, not waited for: deleted.
    kDeferredEarlierPending,
    // The pending item exists and our conditional claim on Increment lost: another
    // invocation has it: deferred by stale_seconds (losers wait).
    kDuplicateLostClaim,
    // The pending item is Active, not timed out, and its claimant's lease (when
    // recorded) still lives: deferred by the time remaining before it times out.
    kDeferredActive,
    // No pending item, and the segment's last snapshot is already at or past this one:
    // the message is deleted.
    kLateDuplicate,
    // The conditional create of the pending item failed: deferred by stale_seconds, to
    // wait for the creator.
    kDuplicateCreateFailed,
    // An earlier Snapshot entry in the log is not complete: Active cleared, deferred.
    kDeferredEarlierUnprocessed,
    // A forward-only checkpoint write failed: another invocation is active: deferred by
    // stale_seconds.
    kLostCheckpoint,
    // Near the end of the time budget after a checkpoint: Active cleared, redelivered
    // at once; the next invocation resumes from the checkpoint.
    kHandedOff,
    // Root key onto the Snapshot entry, segment's last snapshot forward, pending item
    // deleted, message deleted.
    kCompleted,
    // An error, or the deadline passed before a conditional write (Lambda would have
    // killed the invocation: it stops and writes nothing more). The message stays and
    // reappears after its visibility timeout (the runtime retries; the DLQ catches
    // poison messages).
    kFailed,
    // Only with the fault point "snapshot.message_lost" armed: the message was deleted
    // before any work, as if lost (tests of the manual fallback).
    kMessageLost,
    // The sheet no longer exists (deleted while its job waited): nothing to build;
    // the message is deleted rather than failed until it is dead-lettered.
    kSheetGone,
    // The job's Snapshot entry was truncated away while it ran (an exact truncation
    // committed after its "already complete?" check, and its reads, build or completion
    // failed on what the cut removed): obsolete, so its pending item and message are
    // deleted rather than left to hold back later snapshots until a redelivery.
    kTruncated,
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
  // Step 1's wait: whether a pending item before `job` that is not obsolete exists.
  // Obsolete items (their Snapshot entry lies before the sheet's first_seq) are
  // deleted on the way.
  Result<bool> EarlierLivePending(const SnapshotJob& job, UnitMeter* meter);
  // Step 2: whether the Active `item`'s claimant is known to be gone: its recorded
  // owner is not `own` (this process's, "" for none) and Options::owner_live says that
  // owner's lease no longer lives.
  bool ClaimantGone(const PendingSnapshot& item, const std::string& own) const;
  // This process's owner id (Options::owner), "" for none.
  std::string OwnOwner() const;

  EventLog* log_;
  Clock* clock_;
  FaultInjector* faults_;
  SnapshotBuildFactory build_factory_;
  Options options_;
};

}  // namespace sheetlog
