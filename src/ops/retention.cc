#include "src/ops/retention.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <set>

#include "src/log/sheet_blobs.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog {

namespace {

constexpr int64_t kKeepAll = std::numeric_limits<int64_t>::max();
constexpr int64_t kSecondsPerDay = 24 * 3600;

}  // namespace

int64_t RetentionCutoffSeq(const std::vector<SegmentInfo>& segments, int64_t now_seconds,
                           const RetentionOptions& options) {
  if (!options.enabled() || segments.empty()) return 0;
  const size_t count = segments.size();
  int64_t by_count = kKeepAll;
  if (options.retain_segments > 0) {
    by_count = static_cast<int64_t>(count) <= options.retain_segments
                   ? segments.front().first_seq
                   : segments[count - options.retain_segments].first_seq;
  }
  int64_t by_age = kKeepAll;
  if (options.retain_days > 0) {
    const int64_t horizon = now_seconds - options.retain_days * kSecondsPerDay;
    // The first segment that may hold an entry from the horizon or later: the last
    // one, or one whose successor was created at or after the horizon.
    size_t first_kept = count - 1;
    for (size_t i = 0; i + 1 < count; ++i) {
      if (segments[i + 1].created >= horizon) {
        first_kept = i;
        break;
      }
    }
    by_age = segments[first_kept].first_seq;
  }
  return std::min(by_count, by_age);
}

RetentionWorker::RetentionWorker(EventLog* log, BlobStore* blobs, Clock* clock,
                                 RetentionOptions options)
    : log_(log), blobs_(blobs), clock_(clock), options_(options) {}

RetentionWorker::~RetentionWorker() { Stop(); }

Status RetentionWorker::Start() {
  if (options_.period_micros <= 0)
    return InvalidArgument("retention period must be positive");
  if (options_.retain_segments < 0 || options_.retain_days < 0) {
    return InvalidArgument("retention limits must not be negative");
  }
  if (!options_.enabled()) return Status::OK();
  worker_.Start(options_.period_micros, /*run_at_start=*/false,
                [this](const std::atomic<bool>&) {
                  if (options_.may_run && !options_.may_run()) return;
                  Status ran = RunNow();
                  if (!ran.ok()) {
                    spdlog::warn("retention: the run failed: {}", ran.ToString());
                    MutexLock lock(&mu_);
                    ++counters_.errors;
                    counters_.last_error = ran.ToString();
                  }
                });
  return Status::OK();
}

void RetentionWorker::Stop() { worker_.Stop(); }

Status RetentionWorker::RunNow() {
  MutexLock running(&run_mu_);
  Status status = RunOnce();
  MutexLock lock(&mu_);
  ++counters_.runs;
  return status;
}

Status RetentionWorker::RunOnce() {
  return ForEachSheet(log_, std::nullopt, [&](const SheetInfo& sheet) -> Status {
    if (worker_.stopping()) return Status::OK();  // the rest waits for the next start
    Status retained = RetainSheet(sheet);
    if (!retained.ok() && !retained.IsNotFound()) {  // NotFound: deleted meanwhile
      spdlog::warn("retention: sheet {} not truncated: {}", sheet.id,
                   retained.ToString());
      MutexLock lock(&mu_);
      ++counters_.errors;
      counters_.last_error = "sheet " + sheet.id + ": " + retained.ToString();
    }
    return Status::OK();
  });
}

Status RetentionWorker::RetainSheet(const SheetInfo& sheet) {
  ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                   log_->ListSegments(sheet.id, nullptr));
  const int64_t cutoff = RetentionCutoffSeq(segments, clock_->NowSeconds(), options_);
  if (cutoff <= sheet.first_seq) return Status::OK();
  ASSIGN_OR_RETURN(
      TruncateResult truncated,
      log_->Truncate(sheet.id, cutoff, options_.archive ? blobs_ : nullptr, nullptr));
  // What a fork shares stays (its snapshot, the bodies it copied), and so does what a
  // fork's truncation released of its source's: read after the truncation committed.
  ASSIGN_OR_RETURN(std::set<std::string> held, log_->HeldBlobs(nullptr));
  for (const std::string& key :
       DeletableBlobs(truncated.released_blobs, sheet.id, held)) {
    // A snapshot root takes its chunks with it. A failure leaves an orphan the next
    // run does not see again; it is counted so an operator can look.
    Status deleted = key.rfind("snapshots/", 0) == 0 ? DeleteSnapshotObjects(blobs_, key)
                                                     : blobs_->Delete(key);
    if (!deleted.ok()) {
      spdlog::warn("retention: deleting {} failed (left behind): {}", key,
                   deleted.ToString());
      MutexLock lock(&mu_);
      ++counters_.errors;
      counters_.last_error = "deleting " + key + ": " + deleted.ToString();
    }
  }
  MutexLock lock(&mu_);
  counters_.segments_dropped += static_cast<int64_t>(truncated.dropped_segments.size());
  counters_.entries_dropped += truncated.dropped_entries;
  counters_.archives_written += static_cast<int64_t>(truncated.archives.size());
  return Status::OK();
}

RetentionCounters RetentionWorker::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

}  // namespace sheetlog
