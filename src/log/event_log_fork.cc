// Fork (EventLog::Fork) and the blobs forks hold (EventLog::HeldBlobs).
//
// A fork's log is its source's up to `at`, but only the part after the newest
// completed snapshot at or before `at` is copied: the fork starts (first_seq) at that
// Snapshot entry, whose root becomes the fork's base_root, exactly as an exact
// truncation at that seq would leave it. So a fork costs the entries since one
// snapshot and the segment rows they lie in, whatever the source's history length.
// Cells reads before first_seq go on to the source (sheet_view.cc), whose history it
// is.
//
// The snapshot's objects and the copied entries' external bodies stay the source's
// (under its prefixes); the fork lists them in its shared_blobs, and every path that
// deletes a sheet's objects (truncation, retention, the purge of a deleted sheet)
// leaves a key that any sheet's shared_blobs holds (HeldBlobs, sheet_blobs.h's
// DeletableBlobs).
//
// Write order: the whole fork (sheet row, segment rows, entries) is one transaction,
// which also rewrites the source's first_seq conditionally on the value the fork read.
// So a crash leaves no fork or a whole one, and a truncation of the source either
// committed before the fork (the condition fails; the fork is retried from what is
// retained) or after it (and then its deletions, which read HeldBlobs after their
// commit, see the fork's holds).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "emulator/env/uuid.h"
#include "src/log/event_log.h"
#include "src/log/event_log_internal.h"
#include "src/log/tables.h"

namespace sheetlog {

using event_log_internal::EntryItem;
using event_log_internal::HasClientSnapshot;
using event_log_internal::QuerySegmentEntries;
using event_log_internal::QuerySegments;
using event_log_internal::SheetFromItem;

namespace {

constexpr int kForkAttempts = 3;

}  // namespace

Result<EventLog::ForkPlan> EventLog::PlanFork(const ForkRequest& request,
                                              UnitMeter* meter) {
  ForkPlan plan;
  Status status = db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(std::optional<Item> item,
                     SheetTable().Get(conn, Key{{request.source_id}, {}},
                                      Consistency::kStrong, meter));
    if (!item) return NotFound("no sheet " + request.source_id);
    plan.source = SheetFromItem(*item);
    ASSIGN_OR_RETURN(Head head,
                     ReadHead(conn, request.source_id, Consistency::kStrong, meter));
    const int64_t head_seq = head.entry.seq;
    int64_t at = request.at.value_or(head_seq);
    if (at < 0 || at > head_seq) {
      return OutOfRange("at " + std::to_string(at) + " is outside the sheet's log [" +
                        std::to_string(plan.source.first_seq) + ", " +
                        std::to_string(head_seq) + "]");
    }
    // An exact truncation at the next seq keeps the head entry, hidden, just before
    // first_seq (EventLog::TruncateExact): a fork at that head takes it along the same
    // way, with the truncation's base.
    const bool hidden_head =
        plan.source.base_root && at == head_seq && at == plan.source.first_seq - 1;
    if (at < plan.source.first_seq && !hidden_head) {
      return Gone("at " + std::to_string(at) +
                  " lies in the truncated range: the log of " + request.source_id +
                  " starts at seq " + std::to_string(plan.source.first_seq) +
                  " (valid: " + std::to_string(plan.source.first_seq) + ".." +
                  std::to_string(head_seq) + ")");
    }
    ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                     QuerySegments(conn, request.source_id, meter));

    // The newest completed snapshot that segments point at, at or before `at` and
    // retained; a newer completed one among the entries after it moves it forward.
    int64_t from = hidden_head ? at : plan.source.first_seq;
    for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
      if (!it->last_snapshot) continue;
      const int64_t seq = it->first_seq + *it->last_snapshot;
      if (seq > at || seq < plan.source.first_seq) continue;
      from = seq;
      break;
    }
    // Read [from, at], and one more entry when `at` is an EndSegment: the next
    // segment's Snapshot entry, so that the fork's newest segment does not end in
    // EndSegment (Add Entry would look for a segment after it). Cells are the same.
    std::vector<EntryRecord> entries;
    auto read = [&](int64_t lo, int64_t hi) -> Status {
      for (size_t i = 0; i < segments.size(); ++i) {
        const SegmentInfo& seg = segments[i];
        const int64_t seg_end =
            i + 1 < segments.size() ? segments[i + 1].first_seq : head_seq + 1;
        const int64_t a = std::max(lo, seg.first_seq);
        const int64_t b = std::min(hi, seg_end - 1);
        if (a > b) continue;
        RETURN_IF_ERROR(QuerySegmentEntries(
            conn, request.source_id, seg.num, a - seg.first_seq, b - seg.first_seq,
            static_cast<size_t>(-1), options_.page_size, meter, &entries));
      }
      return Status::OK();
    };
    RETURN_IF_ERROR(read(from, at));
    if (!entries.empty() && entries.back().type == kEndSegmentType &&
        entries.back().seq == at && at < head_seq) {
      RETURN_IF_ERROR(read(at + 1, at + 1));
    }
    if (entries.empty() || entries.front().seq != from) {
      return Gone("the entries of " + request.source_id + " from seq " +
                  std::to_string(from) + " are no longer retained");
    }
    // The base: the newest completed Snapshot entry among them (a Snapshot entry at
    // seq s holds every entry before s).
    std::optional<size_t> base;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].type == kSnapshotType && entries[i].snapshot_root &&
          entries[i].seq <= at) {
        base = i;
      }
    }
    if (base) {
      entries.erase(entries.begin(), entries.begin() + static_cast<ptrdiff_t>(*base));
      plan.base_root = entries.front().snapshot_root;
    } else if (plan.source.base_root) {
      plan.base_root = plan.source.base_root;  // an exact truncation's state
    } else if (plan.source.first_seq > 0) {
      return Gone("the entries before seq " + std::to_string(plan.source.first_seq) +
                  " were truncated and no retained snapshot at or before seq " +
                  std::to_string(at) + " covers them");
    }
    plan.at = at;
    plan.first_seq = base ? entries.front().seq : plan.source.first_seq;
    for (const SegmentInfo& seg : segments) {
      const bool overlaps =
          std::any_of(entries.begin(), entries.end(),
                      [&](const EntryRecord& e) { return e.segment == seg.num; });
      if (!overlaps) continue;
      SegmentInfo copy = seg;
      copy.archive.reset();
      copy.last_snapshot.reset();
      for (const EntryRecord& e : entries) {
        if (e.segment == seg.num && e.type == kSnapshotType && e.snapshot_root) {
          copy.last_snapshot = e.num;
        }
      }
      plan.segments.push_back(copy);
    }
    plan.entries = std::move(entries);
    return Status::OK();
  });
  RETURN_IF_ERROR(status);
  return plan;
}

Result<SheetInfo> EventLog::Fork(const ForkRequest& request, UnitMeter* meter) {
  for (int attempt = 1;; ++attempt) {
    ASSIGN_OR_RETURN(ForkPlan plan, PlanFork(request, meter));

    // What the fork holds of other sheets' objects: the base snapshot (root and the
    // objects it names) and the copied entries' external bodies and snapshot roots.
    std::set<std::string> shared;
    auto hold_snapshot = [&](const std::string& root) -> Status {
      if (!shared.insert(root).second) return Status::OK();
      if (!request.snapshot_objects) return Status::OK();
      ASSIGN_OR_RETURN(std::vector<std::string> objects, request.snapshot_objects(root));
      shared.insert(objects.begin(), objects.end());
      return Status::OK();
    };
    if (plan.base_root) RETURN_IF_ERROR(hold_snapshot(*plan.base_root));
    for (const EntryRecord& e : plan.entries) {
      if (e.external) shared.insert(*e.external);
      if (e.snapshot_root) RETURN_IF_ERROR(hold_snapshot(*e.snapshot_root));
    }
    // A fork of a fork holds what its source held, too: those objects are the
    // original's, and the source may be deleted while this fork lives.
    for (const std::string& key : plan.source.shared_blobs) shared.insert(key);

    SheetInfo fork;
    fork.id = NewRandomUuid();
    fork.name = request.name;
    fork.created = clock_->NowSeconds();
    fork.snapshot_every = plan.source.snapshot_every;
    fork.segment_entries = plan.source.segment_entries;
    fork.first_seq = plan.first_seq;
    // The base is recorded as an exact truncation's is, when there is anything before
    // first_seq for it to hold.
    if (plan.first_seq > 0) fork.base_root = plan.base_root;
    fork.fork_of = request.source_id;
    fork.fork_seq = fork.first_seq;
    fork.shared_blobs.assign(shared.begin(), shared.end());

    int64_t snapshot_entry_seq = plan.first_seq;
    std::optional<int64_t> client_snapshot_seq;
    for (const EntryRecord& e : plan.entries) {
      if (e.type == kSnapshotType) snapshot_entry_seq = e.seq;
      if (HasClientSnapshot(e.metadata)) client_snapshot_seq = e.seq;
    }

    Item sheet_item{{"id", fork.id},
                    {"name", fork.name},
                    {"created", fork.created},
                    {"snapshot_every", fork.snapshot_every},
                    {"segment_entries", fork.segment_entries},
                    {"first_seq", fork.first_seq},
                    {"snapshot_entry_seq", snapshot_entry_seq},
                    {"fork_of", request.source_id},
                    {"fork_seq", fork.first_seq}};
    if (fork.base_root) sheet_item["base_root"] = *fork.base_root;
    if (client_snapshot_seq) sheet_item["client_snapshot_seq"] = *client_snapshot_seq;
    if (!fork.shared_blobs.empty()) {
      sheet_item["shared_blobs"] = nlohmann::json(fork.shared_blobs).dump();
    }

    Status status = db_->Write([&](Connection& conn) -> Status {
      // The source is still there and nobody truncated it since the plan was read.
      UpdateRequest touch;
      touch.key = Key{{request.source_id}, {}};
      touch.set = {{"first_seq", plan.source.first_seq}};
      touch.conditions = {Condition::Equals("first_seq", plan.source.first_seq)};
      touch.create_if_missing = false;
      RETURN_IF_ERROR(SheetTable().Update(conn, touch, meter).status());
      for (const SegmentInfo& seg : plan.segments) {
        Item item{{"sheet_id", fork.id},
                  {"num", seg.num},
                  {"created", seg.created},
                  {"first_seq", seg.first_seq}};
        if (seg.last_snapshot) item["last_snapshot"] = *seg.last_snapshot;
        RETURN_IF_ERROR(SegmentTable().PutIfAbsent(conn, item, meter));
      }
      for (const EntryRecord& e : plan.entries) {
        RETURN_IF_ERROR(EntryTable().PutIfAbsent(conn, EntryItem(fork.id, e), meter));
      }
      RETURN_IF_ERROR(faults_->Hit(FaultPoint::kLogForkBeforeSheet));
      // Last: the sheet row, which is what makes the fork a sheet (GetSheet, the
      // listing). In one transaction with the rest, so never without them.
      return SheetTable().PutIfAbsent(conn, sheet_item, meter);
    });
    if (status.ok()) return fork;
    if (status.IsConditionFailed() && attempt < kForkAttempts) {
      continue;  // truncated (or deleted) meanwhile: plan again from what is retained
    }
    if (status.IsConditionFailed()) {
      return Unavailable("sheet " + request.source_id +
                         " kept being truncated while it was forked; retry");
    }
    return status;
  }
}

Result<std::set<std::string>> EventLog::HeldBlobs(UnitMeter* meter) {
  return ReadHeldBlobs(db_, meter);
}

Result<std::set<std::string>> ReadHeldBlobs(Transactions* db, UnitMeter* meter) {
  std::set<std::string> held;
  RETURN_IF_ERROR(db->Read([&](Connection& conn) -> Status {
    held.clear();
    std::optional<KeyValues> start;
    while (true) {
      ASSIGN_OR_RETURN(QueryResult page,
                       SheetTable().Scan(conn, start, 1000, Consistency::kStrong, meter));
      for (const Item& item : page.items) {
        SheetInfo sheet = SheetFromItem(item);
        held.insert(sheet.shared_blobs.begin(), sheet.shared_blobs.end());
      }
      if (!page.last_evaluated) break;
      start = page.last_evaluated;
    }
    return Status::OK();
  }));
  return held;
}

}  // namespace sheetlog
