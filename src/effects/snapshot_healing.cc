#include "src/effects/snapshot_healing.h"

#include <algorithm>
#include <utility>

#include "src/log/pending_snapshots.h"
#include "src/log/tables.h"
#include "src/snapshot/worker.h"

namespace sheetlog {

namespace {

constexpr int kPageSize = 1000;  // QueueService::ListDeadLetters' largest page
// A listing restarts when the message it would page after is gone (deleted between two
// pages); after this many restarts it gives up and reports itself incomplete.
constexpr int kListingAttempts = 3;

bool SkippedSheet(const Status& status) {
  // Deleted, or truncated past what was read, while the run looked at it.
  return status.IsNotFound() || status.code() == StatusCode::kGone;
}

// One pass over the messages of `queue` into `index`. False when a page's anchor
// vanished (the caller starts over).
Result<bool> ListInto(QueueService* queues, const std::string& queue, bool dead_letters,
                      int64_t max_messages, SnapshotJobIndex* index) {
  std::string after;
  while (true) {
    Result<std::vector<DeadLetterMessage>> page =
        queues->ListDeadLetters(queue, kPageSize, after);
    if (!page.ok() && !after.empty() &&
        page.status().code() == StatusCode::kInvalidArgument) {
      return false;  // the message `after` names was deleted meanwhile
    }
    if (!page.ok()) return page.status();
    for (const DeadLetterMessage& m : *page) {
      if (++index->messages > max_messages) {
        index->complete = false;
        return true;
      }
      Result<SnapshotJob> job = SnapshotJob::FromJson(m.body);
      if (!job.ok()) continue;
      SnapshotJobMessages& found = index->jobs[{job->sheet_id, job->segment, job->entry}];
      if (dead_letters) {
        ++found.dead_letters;
      } else {
        ++found.queued;
        if (!m.last_error.empty()) {
          ++found.failing;
          found.last_error = m.last_error;
        }
      }
    }
    if (page->size() < static_cast<size_t>(kPageSize)) return true;
    after = page->back().id;
  }
}

}  // namespace

Result<SnapshotJobIndex> ListSnapshotJobs(QueueService* queues, const std::string& queue,
                                          const std::string& dead_letter_queue,
                                          int64_t max_messages) {
  for (int attempt = 0; attempt < kListingAttempts; ++attempt) {
    SnapshotJobIndex index;
    ASSIGN_OR_RETURN(bool whole, ListInto(queues, queue, false, max_messages, &index));
    if (whole && index.complete) {
      ASSIGN_OR_RETURN(whole,
                       ListInto(queues, dead_letter_queue, true, max_messages, &index));
    }
    if (whole) return index;
  }
  SnapshotJobIndex partial;
  partial.complete = false;
  return partial;
}

SnapshotHealer::SnapshotHealer(EventLog* log, QueueService* queues, Clock* clock,
                               SnapshotHealingOptions options)
    : log_(log), queues_(queues), clock_(clock), options_(std::move(options)) {}

Result<std::optional<SnapshotHealer::Candidate>> SnapshotHealer::CandidateOf(
    const SheetInfo& sheet, int64_t now_s) {
  using Found = std::optional<Candidate>;
  ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                   log_->ListSegments(sheet.id, nullptr));
  // Snapshots complete in order (the worker defers one behind an earlier unfinished
  // one), so the first incomplete Snapshot entry comes after the newest completed one
  // (or the base an exact truncation left at first_seq).
  int64_t from = sheet.first_seq;
  for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
    if (!it->last_snapshot) continue;
    from = std::max(from, it->first_seq + *it->last_snapshot + 1);
    break;
  }
  int64_t read = 0;
  for (int64_t next = from; read < options_.max_entries_per_sheet;) {
    ASSIGN_OR_RETURN(ReadRange page,
                     log_->Read(sheet.id, next, std::nullopt, kPageSize, nullptr));
    if (page.entries.empty()) return Found();
    for (const EntryRecord& e : page.entries) {
      if (e.type != kSnapshotType || e.snapshot_root) continue;
      // Young: its job may still be on its way through the change feed.
      if (now_s - e.created < options_.min_age_seconds) return Found();
      // An invocation is working on it (checkpointing within the stale timeout).
      ASSIGN_OR_RETURN(
          std::optional<PendingSnapshot> item,
          log_->pending_snapshots()->Get({sheet.id, e.segment, e.num}, nullptr));
      if (item && item->active && now_s - item->modified < options_.stale_seconds) {
        return Found();
      }
      return Found(Candidate{{sheet.id, e.segment, e.num}, e.seq, now_s - e.created});
    }
    read += static_cast<int64_t>(page.entries.size());
    next = page.entries.back().seq + 1;
  }
  return Found();
}

Result<SnapshotHealingReport> SnapshotHealer::RunOnce(const std::atomic<bool>* stopping) {
  auto stop_requested = [&] { return stopping != nullptr && stopping->load(); };
  SnapshotHealingReport report;
  // What retention would drop is gone before the queues are looked at: an expired
  // message is no live job (a dead letter held past its retention least of all).
  ASSIGN_OR_RETURN(report.expired, queues_->PurgeExpired());
  const int64_t now_s = clock_->NowSeconds();
  std::vector<Candidate> candidates;
  bool cut_short = false;
  Status visited =
      ForEachSheet(log_, std::nullopt, [&](const SheetInfo& sheet) -> Status {
        if (stop_requested()) {
          cut_short = true;
          return Aborted("stopping");
        }
        ++report.sheets;
        Result<std::optional<Candidate>> candidate = CandidateOf(sheet, now_s);
        if (!candidate.ok()) {
          return SkippedSheet(candidate.status()) ? Status::OK() : candidate.status();
        }
        if (*candidate) candidates.push_back(**candidate);
        return Status::OK();
      });
  if (!visited.ok() && !cut_short) return visited;
  report.candidates = static_cast<int64_t>(candidates.size());
  if (candidates.empty() || stop_requested()) return report;

  // Their messages, read after the entries: a job that completed meanwhile has deleted
  // its message, and is seen complete when its entry is read again below.
  ASSIGN_OR_RETURN(SnapshotJobIndex index,
                   ListSnapshotJobs(queues_, options_.queue, options_.dead_letter_queue,
                                    options_.max_messages));
  if (!index.complete) {
    report.queues_too_large = true;
    return report;
  }
  for (const Candidate& c : candidates) {
    if (stop_requested() || report.enqueued >= options_.max_jobs_per_run) break;
    if (index.jobs.count(c.job) > 0) continue;  // queued, in flight or dead-lettered
    const std::string& sheet = std::get<0>(c.job);
    Result<EntryRecord> entry = log_->GetEntry(sheet, c.seq, nullptr);
    if (!entry.ok()) {
      if (SkippedSheet(entry.status())) continue;
      return entry.status();
    }
    if (entry->snapshot_root) continue;
    const SnapshotJob job{sheet, std::get<1>(c.job), std::get<2>(c.job)};
    RETURN_IF_ERROR(queues_->Send(options_.queue, job.ToJson()).status());
    ++report.enqueued;
    report.actions.push_back(
        "sheet " + sheet + ": snapshot at seq " + std::to_string(c.seq) + " (segment " +
        std::to_string(job.segment) + " num " + std::to_string(job.entry) + ", written " +
        std::to_string(c.age_s) + " s ago) had no job in the queues: re-enqueued");
  }
  return report;
}

PipelineBacklog::PipelineBacklog(ChangeFeed* feed, std::string consumer,
                                 QueueService* queues, std::string queue,
                                 std::string dead_letter_queue, int64_t max_records,
                                 int64_t max_messages)
    : feed_(feed),
      consumer_(std::move(consumer)),
      queues_(queues),
      queue_(std::move(queue)),
      dead_letter_queue_(std::move(dead_letter_queue)),
      max_records_(max_records),
      max_messages_(max_messages) {}

Status PipelineBacklog::LoadFeed() {
  if (feed_loaded_) return Status::OK();
  // The checkpoints first: a record the consumer processes after this read is
  // counted as unprocessed (pending), never the other way round.
  using Sequences = std::map<int, int64_t>;
  ASSIGN_OR_RETURN(Sequences checkpoints, feed_->Checkpoints(consumer_));
  ASSIGN_OR_RETURN(Sequences latest, feed_->LatestSequences());
  int64_t read = 0;
  for (const auto& [shard, last] : latest) {
    auto checkpoint = checkpoints.find(shard);
    int64_t after = checkpoint == checkpoints.end() ? 0 : checkpoint->second;
    while (after < last && !feed_unbounded_) {
      if (read >= max_records_) {
        feed_unbounded_ = true;
        break;
      }
      const int limit = static_cast<int>(
          std::min<int64_t>(ChangeFeed::kMaxReadLimit, max_records_ - read));
      ASSIGN_OR_RETURN(std::vector<StreamRecord> records,
                       feed_->Read(shard, after, limit));
      if (records.empty()) break;
      for (const StreamRecord& r : records) {
        ++read;
        after = r.sequence;
        if (r.event_name != StreamEventName::kInsert || !r.new_image.is_object()) {
          continue;
        }
        const nlohmann::json& entry = r.new_image;
        auto external = entry.find("external");
        if (external != entry.end() && external->is_string()) {
          untag_keys_.insert(external->get<std::string>());
        }
        auto type = entry.find("type");
        auto sheet = entry.find("sheet_id");
        auto segment = entry.find("segment");
        auto num = entry.find("num");
        if (type != entry.end() && *type == kSnapshotType && sheet != entry.end() &&
            sheet->is_string() && segment != entry.end() &&
            segment->is_number_integer() && num != entry.end() &&
            num->is_number_integer()) {
          feed_jobs_.insert(
              {sheet->get<std::string>(), segment->get<int64_t>(), num->get<int64_t>()});
        }
      }
    }
  }
  feed_loaded_ = true;
  return Status::OK();
}

Status PipelineBacklog::LoadJobs() {
  if (jobs_loaded_) return Status::OK();
  ASSIGN_OR_RETURN(jobs_,
                   ListSnapshotJobs(queues_, queue_, dead_letter_queue_, max_messages_));
  jobs_loaded_ = true;
  return Status::OK();
}

Result<std::optional<std::string>> PipelineBacklog::UntagPending(const std::string& key) {
  using Why = std::optional<std::string>;
  RETURN_IF_ERROR(LoadFeed());
  if (untag_keys_.count(key) > 0) {
    return Why("the change feed has not yet delivered its entry to " + consumer_ +
               ", which removes the tag");
  }
  if (feed_unbounded_) {
    return Why("the change feed has more than " + std::to_string(max_records_) +
               " records for " + consumer_ + " to process; its untag may be among them");
  }
  return Why();
}

Result<std::optional<std::string>> PipelineBacklog::SnapshotPending(
    const SnapshotJobKey& job) {
  using Why = std::optional<std::string>;
  RETURN_IF_ERROR(LoadFeed());
  if (feed_jobs_.count(job) > 0) {
    return Why("the change feed has not yet delivered the entry to " + consumer_ +
               ", which enqueues its job");
  }
  RETURN_IF_ERROR(LoadJobs());
  auto found = jobs_.jobs.find(job);
  if (found != jobs_.jobs.end()) {
    const SnapshotJobMessages& m = found->second;
    // Dead-lettered: an operator's matter (the dead-letter violation says so).
    if (m.dead_letters > 0) return Why();
    if (m.queued > m.failing) {
      return Why("its job is in the " + queue_ + " queue (" + std::to_string(m.queued) +
                 " message" + (m.queued == 1 ? "" : "s") + ", no failure recorded)");
    }
    return Why();  // every message of it failing: not progressing
  }
  if (feed_unbounded_ || !jobs_.complete) {
    return Why("the pipeline holds more work than verify reads (change feed or " +
               queue_ + " queue); its job may be among it");
  }
  return Why();
}

}  // namespace sheetlog
