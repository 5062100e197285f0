#include "src/ops/verify.h"

#include <set>

#include "src/log/tables.h"
#include "src/log/uploads.h"
#include "src/ops/replay.h"
#include "src/sheet/sheet.h"
#include "src/snapshot/sheet_plan.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog {

namespace {

std::string SeqText(int64_t seq) { return "seq " + std::to_string(seq); }
std::string PlaceText(int64_t segment, int64_t num) {
  return "segment " + std::to_string(segment) + " num " + std::to_string(num);
}

class SheetVerifier {
 public:
  SheetVerifier(const SheetInfo& sheet, EventLog* log, BlobStore* blobs,
                const VerifyOptions& options, VerifyReport* report)
      : sheet_(sheet), log_(log), blobs_(blobs), options_(options), report_(report) {}

  Status Run() {
    ++report_->sheets;
    Result<std::vector<SegmentInfo>> segments = log_->ListSegments(sheet_.id, nullptr);
    if (segments.status().IsNotFound()) {
      Add("segment-gap", "the sheet has no segments at all");
      return Status::OK();
    }
    RETURN_IF_ERROR(segments.status());
    replay_.Reset(sheet_.first_seq == 0);
    if (sheet_.base_root) RETURN_IF_ERROR(AdoptBase(*sheet_.base_root));
    std::optional<SegmentInfo> previous;
    // Entries of the previous segment; -1 if it is not retained. (Not an optional:
    // GCC 12 at -O3 reports it maybe-uninitialized, a false positive under -Werror.)
    int64_t previous_count = -1;
    for (size_t i = 0; i < segments->size(); ++i) {
      const SegmentInfo& segment = (*segments)[i];
      ++report_->segments;
      // A fork's segments start at the segment its base snapshot lies in (the
      // source's numbering; EventLog::Fork copies no segment before it).
      const int64_t expected_num =
          previous ? previous->num + 1 : (sheet_.fork_of ? segment.num : 0);
      if (segment.num != expected_num) {
        AddAt("segment-gap", segment.num, std::nullopt,
              "segment " + std::to_string(segment.num) + " follows " +
                  (previous ? "segment " + std::to_string(previous->num)
                            : std::string("nothing")) +
                  " (expected segment " + std::to_string(expected_num) + ")");
      }
      if (previous && previous_count >= 0 &&
          segment.first_seq != previous->first_seq + previous_count) {
        AddAt("segment-first-seq", segment.num, segment.first_seq,
              "segment " + std::to_string(segment.num) + " has first_seq " +
                  std::to_string(segment.first_seq) + " but segment " +
                  std::to_string(previous->num) + " ends at " +
                  SeqText(previous->first_seq + previous_count - 1));
      }
      ASSIGN_OR_RETURN(std::vector<EntryRecord> entries,
                       log_->SegmentEntries(sheet_.id, segment.num, nullptr));
      const bool last = i + 1 == segments->size();
      if (entries.empty()) {
        previous_count = -1;
        if (segment.first_seq >= sheet_.first_seq || last) {
          AddAt("segment-empty", segment.num, std::nullopt,
                "segment " + std::to_string(segment.num) +
                    " holds no entries but is not truncated (sheet first_seq " +
                    std::to_string(sheet_.first_seq) + ")");
        }
      } else {
        previous_count = entries.back().num + 1;
        RETURN_IF_ERROR(CheckSegment(segment, entries, last));
      }
      previous = segment;
    }
    // An exact truncation at the next seq keeps the head entry, hidden, just before
    // first_seq (EventLog::TruncateExact), until the next truncation drops it.
    const bool hidden_head = sheet_.base_root && first_retained_seq_ &&
                             *first_retained_seq_ == sheet_.first_seq - 1;
    if (first_retained_seq_ && *first_retained_seq_ != sheet_.first_seq && !hidden_head) {
      AddAt("first-seq", std::nullopt, *first_retained_seq_,
            "the sheet's first_seq is " + std::to_string(sheet_.first_seq) +
                " but its first retained entry is " + SeqText(*first_retained_seq_));
    }
    return Status::OK();
  }

 private:
  // A Snapshot entry still without a root long after it was written: the pipeline is
  // not making it (a lost or dead-lettered message, a stuck worker).
  void CheckProgress(const SegmentInfo& segment, const EntryRecord& e) {
    if (options_.stall_after_micros <= 0 || e.type != kSnapshotType || e.snapshot_root) {
      return;
    }
    const int64_t age_s = options_.now_micros / 1000000 - e.created;
    if (age_s * 1000000 <= options_.stall_after_micros) return;
    AddAt("snapshot-stalled", segment.num, e.seq,
          "the Snapshot entry at " + SeqText(e.seq) + " (" +
              PlaceText(segment.num, e.num) + ") was written " + std::to_string(age_s) +
              " s ago and is still not complete (see GET /v1/sheets/" + sheet_.id +
              "/snapshots and /v1/admin/queues)");
    report_->violations.back().num = e.num;
  }

  Status CheckSegment(const SegmentInfo& segment, const std::vector<EntryRecord>& entries,
                      bool last) {
    if (!first_retained_seq_) first_retained_seq_ = entries.front().seq;
    // An exact truncation may cut a segment anywhere (the sheet's base_root then holds
    // what came before).
    const bool cut_here =
        sheet_.base_root && entries.front().seq >= sheet_.first_seq - 1 &&
        entries.front().seq <= sheet_.first_seq && segment.first_seq < sheet_.first_seq;
    if (!cut_here &&
        (entries.front().num != 0 || entries.front().type != kSnapshotType)) {
      AddAt("segment-start", segment.num, entries.front().seq,
            "segment " + std::to_string(segment.num) + " starts with " +
                entries.front().type + " at num " + std::to_string(entries.front().num) +
                ", not a Snapshot entry at num 0");
    }
    if (!last && entries.back().type != kEndSegmentType) {
      AddAt("segment-end", segment.num, entries.back().seq,
            "segment " + std::to_string(segment.num) + " is not the last but ends with " +
                entries.back().type + " at " +
                PlaceText(segment.num, entries.back().num));
    }
    std::optional<int64_t> previous_num;
    for (const EntryRecord& e : entries) {
      ++report_->entries;
      const int64_t expected_num = previous_num ? *previous_num + 1 : 0;
      if (previous_num && e.num != expected_num) {
        const int64_t missing = e.num - expected_num;
        AddAt("seq-gap", segment.num, segment.first_seq + expected_num,
              std::to_string(missing) + " entr" + (missing == 1 ? "y" : "ies") +
                  " missing before " + PlaceText(segment.num, e.num) + ": " +
                  SeqText(segment.first_seq + expected_num) +
                  (missing == 1 ? std::string()
                                : ".." + std::to_string(segment.first_seq + e.num - 1)));
      }
      previous_num = e.num;
      if (!seen_seqs_.insert(e.seq).second) {
        AddAt("seq-duplicate", segment.num, e.seq,
              SeqText(e.seq) + " appears again at " + PlaceText(segment.num, e.num));
      } else if (e.seq != segment.first_seq + e.num) {
        AddAt("seq-mismatch", segment.num, e.seq,
              PlaceText(segment.num, e.num) + " has " + SeqText(e.seq) +
                  ", expected first_seq " + std::to_string(segment.first_seq) +
                  " + num = " + std::to_string(segment.first_seq + e.num));
      }
      if (e.type == kEndSegmentType && (last || &e != &entries.back())) {
        AddAt("end-segment-misplaced", segment.num, e.seq,
              "EndSegment at " + PlaceText(segment.num, e.num) +
                  (last ? " in the last segment" : " is not the segment's last entry"));
      }
      RETURN_IF_ERROR(CheckBlobsAndReplay(segment, e));
      CheckProgress(segment, e);
    }
    if (segment.last_snapshot) {
      const EntryRecord* named = nullptr;
      for (const EntryRecord& e : entries) {
        if (e.num == *segment.last_snapshot) named = &e;
      }
      const bool truncated_away =
          segment.first_seq + *segment.last_snapshot < sheet_.first_seq;
      if (!truncated_away &&
          (named == nullptr || named->type != kSnapshotType || !named->snapshot_root)) {
        AddAt("last-snapshot", segment.num,
              named ? std::optional(named->seq) : std::nullopt,
              "segment " + std::to_string(segment.num) + " last_snapshot is num " +
                  std::to_string(*segment.last_snapshot) + ", which is " +
                  (named == nullptr ? std::string("not an entry of the segment")
                   : named->type != kSnapshotType
                       ? "a " + named->type + " entry"
                       : std::string("a Snapshot entry without a root (not completed)")));
      }
    }
    return Status::OK();
  }

  Status CheckBlobsAndReplay(const SegmentInfo& segment, const EntryRecord& e) {
    if (e.external) RETURN_IF_ERROR(CheckBlob(segment, e, *e.external, "external body"));
    // The head kept hidden by a cut at the next seq: the base already holds it.
    if (e.seq < sheet_.first_seq) return Status::OK();
    if (e.type == kSnapshotType && e.snapshot_root) return CheckSnapshot(segment, e);
    Status applied = replay_.Apply(e, blobs_);
    if (!applied.ok()) {
      AddAt("entry-unreadable", segment.num, e.seq,
            SeqText(e.seq) + " (" + e.type +
                ") cannot be replayed: " + applied.message() +
                "; snapshots after it are compared again from the next completed one");
    }
    return Status::OK();
  }

  // The state before first_seq an exact truncation left: present, readable, and the
  // replay's starting point.
  Status AdoptBase(const std::string& root) {
    SegmentInfo none;
    EntryRecord base;
    base.seq = sheet_.first_seq;
    RETURN_IF_ERROR(CheckBlob(none, base, root, "truncation base"));
    Result<std::unique_ptr<SnapshotReader>> reader = SnapshotReader::Open(blobs_, root);
    if (!reader.ok()) return Status::OK();  // missing: reported above
    for (const ChunkInfo& chunk : (*reader)->manifest().chunks) {
      RETURN_IF_ERROR(CheckBlob(none, base, chunk.key, "truncation base chunk"));
    }
    Result<SnapshotComparison> adopted = replay_.CompareOrAdopt(**reader);
    if (!adopted.ok() && !adopted.status().IsNotFound()) {
      AddBlob(
          "snapshot-unreadable", 0, base.seq, root,
          "truncation base " + root + " cannot be read: " + adopted.status().message());
    }
    return Status::OK();
  }

  Status CheckSnapshot(const SegmentInfo& segment, const EntryRecord& e) {
    const std::string& root = *e.snapshot_root;
    RETURN_IF_ERROR(CheckBlob(segment, e, root, "snapshot root"));
    Result<std::unique_ptr<SnapshotReader>> reader = SnapshotReader::Open(blobs_, root);
    if (!reader.ok()) {
      if (!reader.status().IsNotFound()) {  // missing: reported as blob-missing above
        AddBlob("snapshot-unreadable", segment.num, e.seq, root,
                "snapshot at " + SeqText(e.seq) + ": root " + root +
                    " cannot be read: " + reader.status().message());
      }
      replay_.Reset(false);
      return Status::OK();
    }
    for (const ChunkInfo& chunk : (*reader)->manifest().chunks) {
      RETURN_IF_ERROR(CheckBlob(segment, e, chunk.key, "snapshot chunk"));
    }
    Result<SnapshotComparison> compared = replay_.CompareOrAdopt(**reader);
    if (!compared.ok()) {
      if (!compared.status().IsNotFound()) {  // a missing chunk is blob-missing
        AddBlob("snapshot-unreadable", segment.num, e.seq, root,
                "snapshot at " + SeqText(e.seq) + " (root " + root +
                    ") cannot be read: " + compared.status().message());
      }
      replay_.Reset(false);
      return Status::OK();
    }
    if (compared->compared) ++report_->snapshots_compared;
    if (compared->differing_cells > 0) {
      AddBlob("snapshot-differs", segment.num, e.seq, root,
              "snapshot at " + SeqText(e.seq) + " (root " + root + ") differs from " +
                  "replaying the log: " + compared->Summary());
    }
    return Status::OK();
  }

  Status CheckBlob(const SegmentInfo& segment, const EntryRecord& e,
                   const std::string& key, const std::string& what) {
    ++report_->blobs_checked;
    Result<BlobTags> tags = blobs_->GetTags(key);
    if (tags.status().IsNotFound()) {
      AddBlob("blob-missing", segment.num, e.seq, key,
              what + " " + key + " of " + SeqText(e.seq) + " is not in the blob store");
      return Status::OK();
    }
    RETURN_IF_ERROR(tags.status());
    if (tags->count(kAutoDeleteTag) != 0) {
      AddBlob("blob-auto-delete", segment.num, e.seq, key,
              what + " " + key + " of " + SeqText(e.seq) + " still carries the " +
                  kAutoDeleteTag + " tag (the lifecycle sweep would delete it)");
    }
    return Status::OK();
  }

  void Add(std::string invariant, std::string detail) {
    AddAt(std::move(invariant), std::nullopt, std::nullopt, std::move(detail));
  }
  void AddAt(std::string invariant, std::optional<int64_t> segment,
             std::optional<int64_t> seq, std::string detail) {
    Violation v;
    v.sheet = sheet_.id;
    v.invariant = std::move(invariant);
    v.detail = std::move(detail);
    v.segment = segment;
    v.seq = seq;
    report_->violations.push_back(std::move(v));
  }
  void AddBlob(std::string invariant, int64_t segment, int64_t seq, std::string key,
               std::string detail) {
    AddAt(std::move(invariant), segment, seq, std::move(detail));
    report_->violations.back().blob = std::move(key);
  }

  const SheetInfo& sheet_;
  EventLog* log_;
  BlobStore* blobs_;
  const VerifyOptions& options_;
  VerifyReport* report_;
  LogReplay replay_;
  std::set<int64_t> seen_seqs_;
  std::optional<int64_t> first_retained_seq_;
};

// Whether the finding no longer holds when looked at again: the blob was untagged, or
// the snapshot completed, while the pass ran.
Result<bool> GoneMeanwhile(const Violation& v, EventLog* log, BlobStore* blobs) {
  if (v.invariant == "blob-auto-delete" && v.blob) {
    Result<BlobTags> tags = blobs->GetTags(*v.blob);
    if (tags.status().IsNotFound()) return false;  // blob-missing's matter, not this one
    RETURN_IF_ERROR(tags.status());
    return tags->count(kAutoDeleteTag) == 0;
  }
  if (v.invariant == "snapshot-stalled" && v.seq) {
    Result<EntryRecord> entry = log->GetEntry(v.sheet, *v.seq, nullptr);
    if (!entry.ok()) return false;  // truncated or deleted meanwhile: as it was seen
    return entry->snapshot_root.has_value();
  }
  return false;
}

// Moves the findings that work still queued or in flight explains to `pending` (see
// "Pending vs violated"). Each is explained first and looked at again second: a side
// effect that ran before the pipeline was read is seen done by the second look, one
// still to run is seen in the pipeline.
Status SeparatePending(const VerifyOptions& options, EventLog* log, BlobStore* blobs,
                       VerifyReport* report) {
  std::vector<Violation> violations;
  for (Violation& v : report->violations) {
    if (v.invariant != "blob-auto-delete" && v.invariant != "snapshot-stalled") {
      violations.push_back(std::move(v));
      continue;
    }
    std::optional<std::string> why;
    if (options.explain_pending) {
      ASSIGN_OR_RETURN(why, options.explain_pending(v));
    }
    ASSIGN_OR_RETURN(bool gone, GoneMeanwhile(v, log, blobs));
    if (gone) continue;
    if (why) {
      v.detail += "; pending: " + *why;
      report->pending.push_back(std::move(v));
    } else {
      violations.push_back(std::move(v));
    }
  }
  report->violations = std::move(violations);
  return Status::OK();
}

}  // namespace

Result<VerifyReport> Verify(const VerifyOptions& options, EventLog* log,
                            BlobStore* blobs) {
  VerifyReport report;
  RETURN_IF_ERROR(ForEachSheet(log, options.sheet, [&](const SheetInfo& sheet) -> Status {
    RETURN_IF_ERROR(SheetVerifier(sheet, log, blobs, options, &report).Run());
    if (options.on_sheet_done) options.on_sheet_done(report.sheets);
    return Status::OK();
  }));
  RETURN_IF_ERROR(SeparatePending(options, log, blobs, &report));
  return report;
}

}  // namespace sheetlog
