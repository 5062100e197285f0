#include "src/snapshot/worker.h"

#include <algorithm>

#include "emulator/env/faults.h"
#include "emulator/json_text.h"
#include "src/log/event_log.h"
#include "src/log/pending_snapshots.h"
#include "src/log/tables.h"

namespace sheetlog {

using nlohmann::json;

std::string SnapshotJob::ToJson() const {
  return json{{"sheet", sheet_id}, {"segment", segment}, {"entry", entry}}.dump();
}

Result<SnapshotJob> SnapshotJob::FromJson(const std::string& text) {
  json j = ParseJsonOrDiscarded(text);
  if (!j.is_object() || !j.contains("sheet") || !j["sheet"].is_string() ||
      !j.contains("segment") || !j["segment"].is_number_integer() ||
      !j.contains("entry") || !j["entry"].is_number_integer()) {
    return InvalidArgument("not a snapshot job message: " + text.substr(0, 200));
  }
  return SnapshotJob{j["sheet"].get<std::string>(), j["segment"].get<int64_t>(),
                     j["entry"].get<int64_t>()};
}

const char* SnapshotWorker::OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kDeferredEarlierPending:
      return "deferred_earlier_pending";
    case Outcome::kDuplicateLostClaim:
      return "duplicate_lost_claim";
    case Outcome::kDeferredActive:
      return "deferred_active";
    case Outcome::kLateDuplicate:
      return "late_duplicate";
    case Outcome::kDuplicateCreateFailed:
      return "duplicate_create_failed";
    case Outcome::kDeferredEarlierUnprocessed:
      return "deferred_earlier_unprocessed";
    case Outcome::kLostCheckpoint:
      return "lost_checkpoint";
    case Outcome::kHandedOff:
      return "handed_off";
    case Outcome::kCompleted:
      return "completed";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kSheetGone:
      return "sheet_gone";
    case Outcome::kMessageLost:
      return "message_lost";
    case Outcome::kTruncated:
      return "truncated";
  }
  return "unknown";
}

SnapshotWorker::SnapshotWorker(EventLog* log, Clock* clock, FaultInjector* faults,
                               SnapshotBuildFactory build_factory, Options options)
    : log_(log),
      clock_(clock),
      faults_(faults),
      build_factory_(std::move(build_factory)),
      options_(options) {}

namespace {

PendingSnapshotChanges SetActive(bool active, std::optional<int64_t> modified) {
  PendingSnapshotChanges changes;
  changes.active = active;
  changes.modified = modified;
  return changes;
}

}  // namespace

SnapshotWorker::Outcome SnapshotWorker::HandleMessage(const SnapshotJob& job,
                                                      MessageControl& message,
                                                      int64_t deadline_micros,
                                                      Status* error, UnitMeter* meter) {
  PendingSnapshots& pending = *log_->pending_snapshots();
  const PendingSnapshotKey key{job.sheet_id, job.segment, job.entry};
  auto fail = [&](const Status& status) {
    if (error != nullptr) *error = status;
    return Outcome::kFailed;
  };
  auto done_with_message = [&](Outcome outcome) {
    Status deleted = message.Delete();
    return deleted.ok() ? outcome : fail(deleted.Annotate("deleting the message"));
  };
  auto race_point = [&](const char* step) {
    if (options_.test_before_conditional_write) {
      options_.test_before_conditional_write(step);
    }
  };
  // Before each conditional write: the test hook, then Lambda's timeout. Lambda kills
  // an invocation at its deadline; a worker thread cannot be killed, so it stops itself
  // here once past it, leaving what a killed invocation leaves. Correctness does not
  // rest on this (losers wait, below), but a write from an invocation that overran
  // would make a live one lose its race and wait out a stale timeout for nothing.
  auto may_write = [&](const char* step) -> Status {
    race_point(step);
    if (clock_->NowMicros() > deadline_micros) {
      return Unavailable(std::string("past its time budget before the ") + step +
                         " write: stopped, as Lambda stops an invocation at its timeout");
    }
    return Status::OK();
  };
  auto defer = [&](Outcome outcome, int64_t seconds) {
    Status deferred = message.Defer(seconds);
    return deferred.ok() ? outcome : fail(deferred.Annotate("deferring the message"));
  };
  // Once the job's seq is known: whether its Snapshot entry lies before the sheet's
  // first_seq now (an exact truncation committed after this invocation found the entry
  // retained and incomplete). Such a job is obsolete: nothing will ever read its
  // snapshot, and its entries may be gone. It finishes as kTruncated (pending item and
  // message deleted) instead of failing, so its item holds back no later snapshot of
  // the sheet until the message comes back after its visibility timeout.
  std::optional<int64_t> job_seq_known;
  auto truncated_away = [&]() {
    if (!job_seq_known) return false;
    Result<SheetInfo> now_sheet = log_->GetSheet(job.sheet_id, meter);
    return now_sheet.ok() && *job_seq_known < now_sheet->first_seq;
  };
  auto finish_truncated = [&]() {
    Status removed = pending.Delete(key, std::nullopt, meter);
    if (!removed.ok()) return fail(removed.Annotate("deleting an obsolete pending item"));
    return done_with_message(Outcome::kTruncated);
  };
  // A failure once the job's item exists: obsolete if truncated away meanwhile.
  auto fail_unless_truncated = [&](const Status& status) {
    return truncated_away() ? finish_truncated() : fail(status);
  };
  // A conditional write lost to another invocation. Seed 000 deletes the message here
  // ("this must be a duplicate message"), but the winner may hold no live message: an
  // invocation that overran its time budget while its message was redelivered to us
  // holds a stale receipt, and if it then fails, nothing would ever finish the
  // snapshot (and its pending item would hold back every later one). So the job waits
  // out the stale timeout instead: by then the winner has completed (a late
  // duplicate, deleted), is still checkpointing (deferred again), or has died (its
  // claim is stale: taken over). A job truncated away meanwhile has nothing to wait
  // for: it finishes as kTruncated.
  auto wait_for_winner = [&](Outcome outcome) {
    if (truncated_away()) return finish_truncated();
    return defer(outcome, options_.stale_seconds);
  };

  // Fault point: the message is lost before any work is done (an operator's purge, a
  // bug elsewhere): deleted, nothing written. Seed 000's manual fallback repairs it.
  if (!faults_->Hit(FaultPoint::kSnapshotMessageLost).ok()) {
    return done_with_message(Outcome::kMessageLost);
  }

  // The sheet was deleted while its job waited: nothing to build. A build that raced
  // the delete may have created its pending item after the delete removed the sheet's;
  // nothing else would ever remove it (and it would hold back nothing, but leak).
  if (Result<SheetInfo> sheet = log_->GetSheet(job.sheet_id, meter);
      sheet.status().IsNotFound()) {
    Status removed = pending.Delete(key, std::nullopt, meter);
    if (!removed.ok()) return fail(removed);
    return done_with_message(Outcome::kSheetGone);
  }

  // 1. The first in-progress snapshot for the log: an earlier one must finish first.
  std::optional<PendingSnapshot> first_pending;
  std::optional<PendingSnapshot> existing;
  if (Result<std::optional<PendingSnapshot>> first = pending.First(job.sheet_id, meter);
      first.ok()) {
    first_pending = *std::move(first);
  } else {
    return fail(first.status());
  }
  if (Result<std::optional<PendingSnapshot>> item = pending.Get(key, meter); item.ok()) {
    existing = *std::move(item);
  } else {
    return fail(item.status());
  }
  if (first_pending) {
    std::pair<int64_t, int64_t> first{first_pending->segment, first_pending->entry};
    if (first < std::make_pair(job.segment, job.entry)) {
      // Unless every earlier item is obsolete (truncated away): those are deleted.
      Result<bool> earlier = EarlierLivePending(job, meter);
      if (!earlier.ok()) return fail(earlier.status());
      if (*earlier) {
        return defer(Outcome::kDeferredEarlierPending, options_.defer_seconds);
      }
    }
  }

  const int64_t now = clock_->NowSeconds();
  // Recorded on the item this invocation creates or claims (Options::owner).
  const std::string own = OwnOwner();
  int64_t increment = 0;
  json checkpoint = nullptr;
  if (existing) {
    // 2. A pending entry exists: a retry (Active clear), a dead invocation (Active and
    // Modified older than the timeout, or its claimant's lease gone), or a duplicate
    // running right now.
    const bool active = existing->active;
    const int64_t age = now - existing->modified;
    if (active && age < options_.stale_seconds && !ClaimantGone(*existing, own)) {
      return defer(Outcome::kDeferredActive,
                   std::max<int64_t>(1, options_.stale_seconds - age));
    }
    const int64_t seen = existing->increment;
    if (Status stop = may_write("claim"); !stop.ok()) return fail(stop);
    PendingSnapshotChanges claimed = SetActive(true, now);
    if (!own.empty()) {
      claimed.owner = own;
    } else if (existing->owner && !existing->owner->empty()) {
      // Claimed without a lease: the earlier claimant's owner no longer says who
      // holds it (its lease gone must not let another node take this claim over).
      claimed.owner = "";
    }
    Status claim = pending.Update(key, seen, claimed, meter);
    if (claim.IsConditionFailed()) return wait_for_winner(Outcome::kDuplicateLostClaim);
    if (!claim.ok()) return fail(claim);
    increment = seen + 1;
    if (existing->state) {
      checkpoint = ParseJsonOrDiscarded(*existing->state);
      if (checkpoint.is_discarded()) checkpoint = nullptr;  // start over: still correct
    }
  }

  // The segments tell where the previous completed snapshot is, and whether this one
  // (or a later one) is already complete.
  Result<std::vector<SegmentInfo>> segments = log_->ListSegments(job.sheet_id, meter);
  if (!segments.ok()) return fail(segments.status());
  bool already_complete = false;
  const SegmentInfo* job_segment = nullptr;
  for (const SegmentInfo& seg : *segments) {
    if (seg.num == job.segment) job_segment = &seg;
    if (seg.last_snapshot &&
        (seg.num > job.segment ||
         (seg.num == job.segment && *seg.last_snapshot >= job.entry))) {
      already_complete = true;
    }
  }
  if (job_segment == nullptr) {
    return fail(NotFound("sheet " + job.sheet_id + " has no segment " +
                         std::to_string(job.segment)));
  }
  // A Snapshot entry truncated away (by an exact truncation) is as good as done.
  Result<SheetInfo> sheet = log_->GetSheet(job.sheet_id, meter);
  if (!sheet.ok()) return fail(sheet.status());
  const int64_t job_seq = job_segment->first_seq + job.entry;
  if (job_seq < sheet->first_seq) already_complete = true;
  job_seq_known = job_seq;

  if (!existing) {
    // 3. No pending entry, and the snapshot is already done: a late duplicate.
    if (already_complete) return done_with_message(Outcome::kLateDuplicate);
    // 4. Formally start: create the pending entry, conditional on it not existing.
    if (Status stop = may_write("create"); !stop.ok()) return fail(stop);
    PendingSnapshot started;
    started.sheet_id = job.sheet_id;
    started.segment = job.segment;
    started.entry = job.entry;
    started.created = now;
    started.modified = now;
    started.active = true;
    started.increment = 1;
    if (!own.empty()) started.owner = own;
    Status created = pending.Create(started, meter);
    if (created.IsConditionFailed())
      return wait_for_winner(Outcome::kDuplicateCreateFailed);
    if (!created.ok()) return fail_unless_truncated(created);
    increment = 1;
  } else if (already_complete) {
    // A previous invocation completed the snapshot but died before cleaning up.
    Status removed = pending.Delete(key, increment, meter);
    // Lost: another invocation holds the item and removes it — unless it dies first,
    // and a leftover item would hold back every later snapshot of the sheet.
    if (removed.IsConditionFailed()) return wait_for_winner(Outcome::kLateDuplicate);
    if (!removed.ok()) return fail(removed);
    return done_with_message(Outcome::kLateDuplicate);
  }

  // 5. Read every entry since the previous completed snapshot. After an exact
  // truncation snapshots before first_seq are gone, and the sheet's base_root holds
  // every entry before first_seq.
  std::optional<EntryRecord> previous;
  for (auto it = segments->rbegin(); it != segments->rend() && !previous; ++it) {
    if (it->num > job.segment || !it->last_snapshot) continue;
    int64_t num = *it->last_snapshot;
    if (it->num == job.segment && num >= job.entry) continue;
    if (it->first_seq + num < sheet->first_seq) break;
    Result<EntryRecord> entry = log_->GetEntry(job.sheet_id, it->first_seq + num, meter);
    if (!entry.ok()) return fail_unless_truncated(entry.status());
    previous = *entry;
  }
  if (!previous && sheet->base_root) {
    previous = EntryRecord{};
    previous->seq = sheet->first_seq - 1;  // entries from first_seq on
    previous->snapshot_root = sheet->base_root;
  }
  const int64_t from = previous ? previous->seq + 1 : 0;
  std::vector<EntryRecord> entries;
  for (int64_t next = from; next < job_seq;) {
    Result<ReadRange> page = log_->Read(job.sheet_id, next, job_seq, 1000, meter);
    if (!page.ok()) return fail_unless_truncated(page.status());
    if (page->entries.empty()) break;
    for (EntryRecord& e : page->entries) entries.push_back(std::move(e));
    next = entries.back().seq + 1;
  }
  for (const EntryRecord& e : entries) {
    if (e.type == kSnapshotType && !e.snapshot_root) {
      // An earlier snapshot has not been made yet: let it go first.
      Status cleared = pending.Update(key, increment, SetActive(false, now), meter);
      if (!cleared.ok() && !cleared.IsConditionFailed()) return fail(cleared);
      return defer(Outcome::kDeferredEarlierUnprocessed, options_.defer_seconds);
    }
  }

  // 6. Build, checkpointing after every chunk with a forward-only conditional write.
  std::optional<std::string> previous_root;
  if (previous) previous_root = previous->snapshot_root;
  Result<std::unique_ptr<SnapshotBuild>> build =
      build_factory_(job, job_seq, previous_root, entries, checkpoint);
  if (!build.ok()) return fail_unless_truncated(build.status());
  while (true) {
    Result<bool> done = (*build)->WriteNextChunk();
    if (!done.ok()) {
      if (truncated_away()) return finish_truncated();
      // Let a retry claim it at once instead of waiting out the stale timeout.
      (void)pending.Update(key, increment, SetActive(false, std::nullopt), meter);
      return fail(done.status());
    }
    Status fault = faults_->Hit(FaultPoint::kSnapshotAfterChunk);
    if (!fault.ok()) return fail(fault);
    if (Status stop = may_write("checkpoint"); !stop.ok()) return fail(stop);
    PendingSnapshotChanges checkpointed;
    checkpointed.state = (*build)->Checkpoint().dump();
    checkpointed.modified = clock_->NowSeconds();
    Status saved = pending.Update(key, increment, checkpointed, meter);
    if (saved.IsConditionFailed()) return wait_for_winner(Outcome::kLostCheckpoint);
    if (!saved.ok()) return fail_unless_truncated(saved);
    ++increment;
    if (*done) break;
    if (deadline_micros - clock_->NowMicros() < options_.handoff_margin_micros) {
      // Hand off to a fresh invocation: it resumes from the checkpoint just written.
      Status cleared =
          pending.Update(key, increment, SetActive(false, std::nullopt), meter);
      if (cleared.IsConditionFailed()) return wait_for_winner(Outcome::kLostCheckpoint);
      if (!cleared.ok()) return fail(cleared);
      return defer(Outcome::kHandedOff, 0);
    }
  }

  // 7. Complete: root onto the entry and the segment, pending entry removed, message
  // deleted — in that order, so a crash between any two is repaired by a redelivery.
  Result<std::string> root = (*build)->Finish();
  if (!root.ok()) return fail_unless_truncated(root.status());
  Status fault = faults_->Hit(FaultPoint::kSnapshotBeforeComplete);
  if (!fault.ok()) return fail(fault);
  if (Status stop = may_write("complete"); !stop.ok()) return fail(stop);
  Status completed =
      log_->CompleteSnapshot(job.sheet_id, job.segment, job.entry, *root, meter);
  // The entry it completes was truncated away meanwhile: no root is written.
  if (!completed.ok()) return fail_unless_truncated(completed);
  fault = faults_->Hit(FaultPoint::kSnapshotAfterComplete);
  if (!fault.ok()) return fail(fault);
  Status removed = pending.Delete(key, increment, meter);
  if (removed.IsConditionFailed()) return wait_for_winner(Outcome::kLostCheckpoint);
  if (!removed.ok()) return fail(removed);
  SendNextJob(job, job_seq, meter);
  return done_with_message(Outcome::kCompleted);
}

Result<bool> SnapshotWorker::EarlierLivePending(const SnapshotJob& job,
                                                UnitMeter* meter) {
  PendingSnapshots& pending = *log_->pending_snapshots();
  // The sheet before the items: first_seq only grows, so an item created after this
  // read is judged against an older cut, never wrongly obsolete.
  ASSIGN_OR_RETURN(SheetInfo sheet, log_->GetSheet(job.sheet_id, meter));
  ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                   log_->ListSegments(job.sheet_id, meter));
  ASSIGN_OR_RETURN(std::vector<PendingSnapshot> items, pending.List(job.sheet_id, meter));
  for (const PendingSnapshot& item : items) {
    if (std::make_pair(item.segment, item.entry) >=
        std::make_pair(job.segment, job.entry)) {
      return false;
    }
    auto segment =
        std::find_if(segments.begin(), segments.end(),
                     [&](const SegmentInfo& s) { return s.num == item.segment; });
    const bool obsolete =
        segment != segments.end() && segment->first_seq + item.entry < sheet.first_seq;
    if (!obsolete) return true;
    // The truncation removes the items of the entries it drops in its own transaction;
    // this one was created after it by an invocation that had passed its check before
    // the cut. Whoever still holds it loses its next conditional write and finishes
    // as kTruncated.
    RETURN_IF_ERROR(pending.Delete(item.key(), std::nullopt, meter));
  }
  return false;
}

std::string SnapshotWorker::OwnOwner() const {
  return options_.owner ? options_.owner() : std::string();
}

bool SnapshotWorker::ClaimantGone(const PendingSnapshot& item,
                                  const std::string& own) const {
  if (!options_.owner_live || !item.owner || item.owner->empty()) return false;
  // Our own claim may be held by a live thread of this process: the age rule judges it.
  if (*item.owner == own) return false;
  // An error of the check is no evidence: the age rule alone, as without an owner.
  Result<bool> live = options_.owner_live(*item.owner);
  return live.ok() && !*live;
}

void SnapshotWorker::SendNextJob(const SnapshotJob& job, int64_t job_seq,
                                 UnitMeter* meter) {
  if (!options_.send_job) return;
  // Best effort: the next Snapshot entry's own message is on its way anyway.
  constexpr int kLookAhead = 1000;
  Result<ReadRange> after =
      log_->Read(job.sheet_id, job_seq + 1, job_seq + 1 + kLookAhead, kLookAhead, meter);
  if (!after.ok()) return;
  for (const EntryRecord& e : after->entries) {
    if (e.type != kSnapshotType) continue;
    if (!e.snapshot_root) {
      (void)options_.send_job(SnapshotJob{job.sheet_id, e.segment, e.num});
    }
    return;
  }
}

}  // namespace sheetlog
