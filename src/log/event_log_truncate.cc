// Truncation: Truncate (seed 003, whole segments) and TruncateExact (infinisheet's
// truncate), with the archive they write first. The archive's format:
// archive_format.md beside this file.
#include <nlohmann/json.hpp>

#include "emulator/blob/blob_store.h"
#include "emulator/env/faults.h"
#include "emulator/json_text.h"
#include "src/log/event_log.h"
#include "src/log/event_log_internal.h"
#include "src/log/pending_snapshots.h"
#include "src/log/tables.h"

namespace sheetlog {

using event_log_internal::IntOr;
using event_log_internal::OptionalString;
using event_log_internal::QuerySegmentEntries;
using event_log_internal::QuerySegments;

// ---------------------------------------------------------------------------
// Truncate (seed 003)

std::string EventLog::ArchiveKey(const std::string& sheet_id, int64_t segment) {
  return "archives/" + sheet_id + "/segment-" + std::to_string(segment) + ".jsonl";
}

namespace {

// One archived entry: the fields of api.md's entry, the body inline as JSON.
std::string ArchiveLine(const EntryRecord& e) {
  nlohmann::json line{{"seq", e.seq},   {"segment", e.segment},
                      {"num", e.num},   {"created", e.created},
                      {"type", e.type}, {"version", e.version}};
  line["body"] = e.body ? ParseJsonOrDiscarded(*e.body) : nlohmann::json(nullptr);
  line["external"] = e.external ? nlohmann::json(*e.external) : nlohmann::json(nullptr);
  line["snapshot_root"] =
      e.snapshot_root ? nlohmann::json(*e.snapshot_root) : nlohmann::json(nullptr);
  return line.dump() + "\n";
}

// Writes the archive of `segment` at `key`: the lines of entries the object already
// holds from before `entries` (an earlier exact truncation of the same segment), then
// one line per entry. Lines at or after the first new entry are left out, so a retry
// after a crash between archiving and dropping writes the same object again.
Status WriteArchive(BlobStore* store, const std::string& key,
                    const std::vector<EntryRecord>& entries) {
  const int64_t first_new = entries.empty() ? INT64_MAX : entries.front().seq;
  std::string kept;
  Result<std::unique_ptr<BlobReader>> existing = store->OpenReader(key);
  if (existing.ok()) {
    std::string partial;
    RETURN_IF_ERROR((*existing)->Stream(0, -1, [&](std::string_view chunk) -> Status {
      partial.append(chunk);
      size_t start = 0;
      for (size_t end; (end = partial.find('\n', start)) != std::string::npos;
           start = end + 1) {
        std::string_view line(partial.data() + start, end - start);
        nlohmann::json parsed = ParseJsonOrDiscarded(line);
        if (parsed.is_object() && parsed.value("seq", INT64_MAX) < first_new) {
          kept.append(line);
          kept.push_back('\n');
        }
      }
      partial.erase(0, start);
      return Status::OK();
    }));
  } else if (!existing.status().IsNotFound()) {
    return existing.status();
  }
  BlobPutOptions put;
  put.content_type = "application/x-ndjson";
  ASSIGN_OR_RETURN(std::unique_ptr<BlobWriter> writer, store->BeginPut(key, put));
  RETURN_IF_ERROR(writer->Append(kept));
  for (const EntryRecord& e : entries) RETURN_IF_ERROR(writer->Append(ArchiveLine(e)));
  return writer->Commit().status();
}

}  // namespace

Result<TruncateResult> EventLog::Truncate(const std::string& sheet_id, int64_t before_seq,
                                          BlobStore* archive_to, UnitMeter* meter) {
  if (before_seq < 0) {
    return OutOfRange("before_seq must be >= 0, got " + std::to_string(before_seq));
  }
  // Whole segments: those that end at or before before_seq and lie behind a completed
  // snapshot (a later segment has one) may go, oldest first; a prefix, since both
  // conditions only get easier going back. The newest segment is never dropped.
  auto decide = [&](int64_t first_seq, const std::vector<SegmentInfo>& segments,
                    int64_t) -> Result<int64_t> {
    int64_t new_first_seq = first_seq;
    for (size_t i = 0; i + 1 < segments.size(); ++i) {
      const int64_t end = segments[i + 1].first_seq;  // exclusive
      bool behind_snapshot = false;
      for (size_t j = i + 1; j < segments.size(); ++j) {
        if (segments[j].last_snapshot) behind_snapshot = true;
      }
      if (end > before_seq || !behind_snapshot) break;
      new_first_seq = std::max(new_first_seq, end);
    }
    return new_first_seq;
  };
  return DropBefore(sheet_id, archive_to, meter, decide, std::nullopt);
}

Result<TruncateResult> EventLog::TruncateExact(
    const std::string& sheet_id, int64_t before_seq,
    const std::optional<std::string>& base_root, BlobStore* archive_to,
    UnitMeter* meter) {
  auto decide = [&](int64_t first_seq, const std::vector<SegmentInfo>&,
                    int64_t next_seq) -> Result<int64_t> {
    if (before_seq < first_seq) {
      return OutOfRange("before_seq " + std::to_string(before_seq) +
                        " is before the first retained seq " + std::to_string(first_seq));
    }
    if (before_seq > next_seq) {
      return OutOfRange("before_seq " + std::to_string(before_seq) +
                        " is beyond the next seq " + std::to_string(next_seq));
    }
    return before_seq;
  };
  return DropBefore(sheet_id, archive_to, meter, decide, base_root);
}

Result<TruncateResult> EventLog::DropBefore(
    const std::string& sheet_id, BlobStore* archive_to, UnitMeter* meter,
    const std::function<Result<int64_t>(int64_t, const std::vector<SegmentInfo>&,
                                        int64_t)>& decide,
    const std::optional<std::string>& base_root) {
  TruncateResult result;
  std::vector<SegmentInfo> segments;
  std::optional<std::string> old_base_root;
  int64_t next_seq = 0;
  bool hidden_head = false;  // an earlier cut at the next seq kept the head entry
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kStrong, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    result.first_seq = IntOr(*sheet, "first_seq", 0);
    old_base_root = OptionalString(*sheet, "base_root");
    ASSIGN_OR_RETURN(segments, QuerySegments(conn, sheet_id, meter));
    ASSIGN_OR_RETURN(Head head, ReadHead(conn, sheet_id, Consistency::kStrong, meter));
    next_seq = head.entry.seq + 1;
    // The entry just before first_seq still exists only when a cut at the next seq
    // kept it (every other truncation deletes what lies before first_seq).
    for (auto it = segments.rbegin(); it != segments.rend() && result.first_seq > 0;
         ++it) {
      if (it->first_seq > result.first_seq - 1) continue;
      ASSIGN_OR_RETURN(
          std::optional<Item> kept,
          EntryTable().Get(
              conn, Key{{sheet_id, it->num}, {result.first_seq - 1 - it->first_seq}},
              Consistency::kStrong, meter));
      hidden_head = kept.has_value();
      break;
    }
    return Status::OK();
  }));
  ASSIGN_OR_RETURN(int64_t new_first_seq, decide(result.first_seq, segments, next_seq));
  if (new_first_seq <= result.first_seq) return result;

  // The segments holding entries in [first_seq, new_first_seq), and for each the
  // entry nums to drop: [from_num, to_num). The head entry stays when the cut is at
  // the next seq: Add Entry reads the next seq from it, so it is kept, hidden (before
  // first_seq, no read returns it), until a later truncation drops it with the rest.
  struct Cut {
    const SegmentInfo* segment;
    int64_t from_num;
    int64_t to_num;
    bool whole;  // no entry of the segment is left
  };
  const int64_t drop_from = hidden_head ? result.first_seq - 1 : result.first_seq;
  const int64_t drop_to = std::min(new_first_seq, next_seq - 1);
  std::vector<Cut> cuts;
  for (size_t i = 0; i < segments.size(); ++i) {
    const bool last = i + 1 == segments.size();
    const int64_t seg_end = last ? next_seq : segments[i + 1].first_seq;
    const int64_t lo = std::max(drop_from, segments[i].first_seq);
    const int64_t hi = std::min(drop_to, seg_end);
    if (lo >= hi) continue;
    cuts.push_back(Cut{&segments[i], lo - segments[i].first_seq,
                       hi - segments[i].first_seq, !last && hi == seg_end});
  }
  if (cuts.empty()) {
    // Only the head (kept) lies before the cut: move first_seq, drop nothing.
    cuts.push_back(Cut{&segments.back(), 0, 0, false});
  }

  // Archive first: a crash after it leaves an archive and nothing dropped, and the
  // retry rewrites the same key with the same lines.
  std::map<int64_t, std::string> archive_keys;
  if (archive_to != nullptr) {
    for (const Cut& cut : cuts) {
      if (cut.from_num >= cut.to_num) continue;
      std::vector<EntryRecord> entries;
      RETURN_IF_ERROR(db_->Read([&](Connection& conn) {
        return QuerySegmentEntries(conn, sheet_id, cut.segment->num, cut.from_num,
                                   cut.to_num - 1, static_cast<size_t>(-1),
                                   options_.page_size, meter, &entries);
      }));
      const std::string key = ArchiveKey(sheet_id, cut.segment->num);
      RETURN_IF_ERROR(WriteArchive(archive_to, key, entries));
      archive_keys[cut.segment->num] = key;
      result.archives.push_back(key);
    }
  }
  RETURN_IF_ERROR(faults_->Hit(FaultPoint::kLogTruncateBeforeDrop));

  // One transaction: first_seq forward (only if nobody moved it meanwhile), base_root
  // set or cleared, entries gone, archive keys on the segments, obsolete pending
  // snapshots removed.
  TruncateResult dropped = result;
  Status status = db_->Write([&](Connection& conn) -> Status {
    dropped = result;
    UpdateRequest move;
    move.key = Key{{sheet_id}, {}};
    move.set = {{"first_seq", new_first_seq}};
    if (base_root) {
      move.set["base_root"] = *base_root;
    } else {
      move.remove = {"base_root"};
    }
    move.conditions = {Condition::Equals("first_seq", result.first_seq)};
    move.create_if_missing = false;
    RETURN_IF_ERROR(SheetTable().Update(conn, move, meter).status());
    if (old_base_root && old_base_root != base_root) {
      dropped.released_blobs.push_back(*old_base_root);
    }
    // Pending snapshots of dropped Snapshot entries are obsolete: nothing will read
    // them (a later snapshot, or the new base, covers their state).
    RETURN_IF_ERROR(DeletePendingSnapshotsBefore(conn, sheet_id, cuts.back().segment->num,
                                                 cuts.back().to_num, meter));
    for (const Cut& cut : cuts) {
      if (cut.from_num >= cut.to_num) continue;
      std::vector<EntryRecord> entries;
      RETURN_IF_ERROR(QuerySegmentEntries(conn, sheet_id, cut.segment->num, cut.from_num,
                                          cut.to_num - 1, static_cast<size_t>(-1),
                                          options_.page_size, meter, &entries));
      for (const EntryRecord& e : entries) {
        if (e.external && !archive_keys.count(cut.segment->num)) {
          dropped.released_blobs.push_back(*e.external);
        }
        // A base recorded now may share its keys with a Snapshot entry at the cut
        // (same id, same state); only dropped entries' roots other than it go.
        if (e.snapshot_root && e.snapshot_root != base_root) {
          dropped.released_blobs.push_back(*e.snapshot_root);
        }
        RETURN_IF_ERROR(EntryTable().Delete(
            conn, Key{{sheet_id, cut.segment->num}, {e.num}}, {}, meter));
      }
      dropped.dropped_entries += static_cast<int64_t>(entries.size());
      // A segment counts as dropped once none of its entries is left.
      if (cut.whole) dropped.dropped_segments.push_back(cut.segment->num);
      auto archive = archive_keys.find(cut.segment->num);
      if (archive != archive_keys.end()) {
        UpdateRequest mark;
        mark.key = Key{{sheet_id}, {cut.segment->num}};
        mark.set = {{"archive", archive->second}};
        mark.create_if_missing = false;
        RETURN_IF_ERROR(SegmentTable().Update(conn, mark, meter).status());
      }
    }
    return Status::OK();
  });
  if (status.IsConditionFailed()) {
    return Unavailable("sheet " + sheet_id + " was truncated concurrently; retry");
  }
  RETURN_IF_ERROR(status);
  dropped.first_seq = new_first_seq;
  return dropped;
}

}  // namespace sheetlog
