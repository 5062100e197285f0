// Reading the event log: ranges, single entries, LastSnapshot, Load and Update Loaded
// Spreadsheet (seed 001), segment listings and the storage measure. See event_log.h.
#include <nlohmann/json.hpp>

#include "emulator/json_text.h"
#include "src/log/event_log.h"
#include "src/log/event_log_internal.h"
#include "src/log/tables.h"

namespace sheetlog {

namespace {

// Page size of the whole-partition reads (verify, the cost report).
constexpr int kStorageScanPage = 1000;

}  // namespace

namespace event_log_internal {

// All segments of a sheet, oldest first (Segment items are tiny; one query).
Result<std::vector<SegmentInfo>> QuerySegments(Connection& conn,
                                               const std::string& sheet_id,
                                               UnitMeter* meter) {
  std::vector<SegmentInfo> segments;
  QueryRequest query;
  query.partition = {sheet_id};
  while (true) {
    ASSIGN_OR_RETURN(QueryResult page, SegmentTable().Query(conn, query, meter));
    for (const Item& item : page.items) segments.push_back(SegmentFromItem(item));
    if (!page.last_evaluated) break;
    query.exclusive_start = page.last_evaluated;
  }
  return segments;
}

// LastSnapshot() on `conn`: the newer of the newest completed Snapshot entry and the
// newest retained entry with a client-set "snapshot". `sheet` is the sheet's item;
// `newest` the newest segment when the caller has read it (else it is queried).
Result<std::optional<SnapshotRef>> ReadLastSnapshot(
    Connection& conn, const std::string& sheet_id, const Item& sheet,
    const std::optional<SegmentInfo>& newest, UnitMeter* meter) {
  std::vector<SegmentInfo> segments;  // oldest first; read only when needed
  bool have_segments = false;
  auto load_segments = [&]() -> Status {
    if (have_segments) return Status::OK();
    ASSIGN_OR_RETURN(segments, QuerySegments(conn, sheet_id, meter));
    have_segments = true;
    if (segments.empty()) return NotFound("no sheet " + sheet_id);
    return Status::OK();
  };
  // The newest completed Snapshot entry: in the newest segment that has one.
  std::optional<SegmentInfo> holder;
  if (newest && newest->last_snapshot) {
    holder = newest;
  } else {
    RETURN_IF_ERROR(load_segments());
    for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
      if (it->last_snapshot) {
        holder = *it;
        break;
      }
    }
  }
  std::optional<SnapshotRef> out;
  if (holder) {
    ASSIGN_OR_RETURN(
        std::optional<Item> item,
        EntryTable().Get(conn, Key{{sheet_id, holder->num}, {*holder->last_snapshot}},
                         Consistency::kEventual, meter));
    if (item) {
      EntryRecord server = EntryFromItem(*item);
      if (server.snapshot_root) out = SnapshotRef{server.seq, server.snapshot_root, {}};
    }
  }
  std::optional<int64_t> client_seq = OptionalInt(sheet, "client_snapshot_seq");
  if (client_seq && *client_seq < IntOr(sheet, "first_seq", 0)) client_seq.reset();
  if (!client_seq || (out && *client_seq < out->seq)) return out;
  // The entry at client_seq, in the segment that holds it.
  std::optional<SegmentInfo> segment;
  if (newest && newest->first_seq <= *client_seq) {
    segment = newest;
  } else {
    RETURN_IF_ERROR(load_segments());
    for (const SegmentInfo& s : segments) {
      if (s.first_seq <= *client_seq) segment = s;
    }
  }
  if (!segment) return out;
  ASSIGN_OR_RETURN(
      std::optional<Item> item,
      EntryTable().Get(conn,
                       Key{{sheet_id, segment->num}, {*client_seq - segment->first_seq}},
                       Consistency::kEventual, meter));
  if (!item) return out;
  EntryRecord entry = EntryFromItem(*item);
  if (entry.seq != *client_seq || !HasClientSnapshot(entry.metadata)) return out;
  nlohmann::json metadata = ParseJson(*entry.metadata);
  if (!out || out->seq != *client_seq) out = SnapshotRef{*client_seq, {}, {}};
  out->snapshot = metadata["snapshot"].get<std::string>();
  return out;
}

// Repeated paged Query over one segment: entries with num in [from_num, to_num]
// (to_num = -1: to the end), appending at most `limit - out->size()` entries.
Status QuerySegmentEntries(Connection& conn, const std::string& sheet_id, int64_t segment,
                           int64_t from_num, int64_t to_num, size_t limit, int page_size,
                           UnitMeter* meter, std::vector<EntryRecord>* out) {
  QueryRequest query;
  query.partition = {sheet_id, segment};
  query.sort_from = KeyValues{Value(from_num)};
  if (to_num >= 0) query.sort_to = KeyValues{Value(to_num)};
  while (out->size() < limit) {
    query.limit = static_cast<int>(std::min<size_t>(limit - out->size(), page_size));
    ASSIGN_OR_RETURN(QueryResult page, EntryTable().Query(conn, query, meter));
    for (const Item& item : page.items) out->push_back(EntryFromItem(item));
    if (!page.last_evaluated) break;
    query.exclusive_start = page.last_evaluated;
  }
  return Status::OK();
}

}  // namespace event_log_internal

using event_log_internal::IntOr;
using event_log_internal::OptionalString;
using event_log_internal::QuerySegmentEntries;
using event_log_internal::QuerySegments;
using event_log_internal::ReadLastSnapshot;

Result<std::vector<SegmentInfo>> EventLog::ListSegments(const std::string& sheet_id,
                                                        UnitMeter* meter) {
  std::vector<SegmentInfo> segments;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) {
    ASSIGN_OR_RETURN(segments, QuerySegments(conn, sheet_id, meter));
    return Status::OK();
  }));
  if (segments.empty()) return NotFound("no sheet " + sheet_id);
  return segments;
}

Result<std::vector<EntryRecord>> EventLog::SegmentEntries(const std::string& sheet_id,
                                                          int64_t segment,
                                                          UnitMeter* meter) {
  std::vector<EntryRecord> entries;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    QueryRequest query;
    query.partition = {sheet_id, segment};
    query.limit = kStorageScanPage;
    while (true) {
      ASSIGN_OR_RETURN(QueryResult page, EntryTable().Query(conn, query, meter));
      for (const Item& item : page.items) entries.push_back(EntryFromItem(item));
      if (!page.last_evaluated) return Status::OK();
      query.exclusive_start = page.last_evaluated;
    }
  }));
  return entries;
}

namespace {

// Adds the DynamoDB sizes of every item of `table` in `partition` to *bytes; `visit`
// (if set) sees each item.
Status AddPartitionSize(Connection& conn, const Table& table, const KeyValues& partition,
                        UnitMeter* meter, int64_t* bytes,
                        const std::function<void(const Item&)>& visit = nullptr) {
  QueryRequest query;
  query.partition = partition;
  query.limit = kStorageScanPage;
  while (true) {
    ASSIGN_OR_RETURN(QueryResult page, table.Query(conn, query, meter));
    for (const Item& item : page.items) {
      *bytes += table.ItemSize(item);
      if (visit) visit(item);
    }
    if (!page.last_evaluated) return Status::OK();
    query.exclusive_start = page.last_evaluated;
  }
}

}  // namespace

Result<EventLog::StorageSize> EventLog::MeasureStorage(
    const std::string& sheet_id, const std::vector<SegmentInfo>& segments,
    UnitMeter* meter) {
  StorageSize size;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    RETURN_IF_ERROR(
        AddPartitionSize(conn, SheetTable(), {sheet_id}, meter, &size.item_bytes));
    RETURN_IF_ERROR(
        AddPartitionSize(conn, SegmentTable(), {sheet_id}, meter, &size.item_bytes));
    for (const SegmentInfo& segment : segments) {
      RETURN_IF_ERROR(AddPartitionSize(conn, EntryTable(), {sheet_id, segment.num}, meter,
                                       &size.item_bytes, [&](const Item& item) {
                                         auto type = item.find("type");
                                         if (type != item.end() &&
                                             type->second.AsString() == kSnapshotType &&
                                             item.count("snapshot_root") > 0) {
                                           ++size.completed_snapshots;
                                         }
                                       }));
    }
    return Status::OK();
  }));
  return size;
}

Result<int64_t> EventLog::NextSeq(const std::string& sheet_id, UnitMeter* meter) {
  // One query of the entry_by_seq index, newest first: the sheet's entry with the
  // highest seq. It is never an EndSegment (a segment ends in the transaction that
  // writes the next segment's first entry), and a sheet has an entry from its creation
  // until its deletion, which removes them all: none is no sheet.
  QueryRequest query;
  query.index = "entry_by_seq";
  query.partition = {sheet_id};
  query.forward = false;
  query.limit = 1;
  std::optional<int64_t> head;
  RETURN_IF_ERROR(db_->ReadEach([&](Connection& conn) {
    ASSIGN_OR_RETURN(QueryResult newest, EntryTable().Query(conn, query, meter));
    if (!newest.items.empty()) head = EntryFromItem(newest.items.front()).seq;
    return Status::OK();
  }));
  if (!head) return NotFound("no sheet " + sheet_id);
  return *head + 1;
}

Result<ReadRange> EventLog::Read(const std::string& sheet_id, int64_t from,
                                 std::optional<int64_t> to, int limit, UnitMeter* meter) {
  ReadRange range;
  range.from = from;
  Status status = db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kEventual, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    const int64_t first_seq = IntOr(*sheet, "first_seq", 0);
    ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                     QuerySegments(conn, sheet_id, meter));
    if (segments.empty()) return NotFound("no sheet " + sheet_id);
    // The head: the newest segment's last entry (one more query).
    std::vector<EntryRecord> last;
    QueryRequest head_query;
    head_query.partition = {sheet_id, segments.back().num};
    head_query.forward = false;
    head_query.limit = 1;
    ASSIGN_OR_RETURN(QueryResult head, EntryTable().Query(conn, head_query, meter));
    const int64_t next = head.items.empty() ? segments.back().first_seq
                                            : EntryFromItem(head.items[0]).seq + 1;

    if (from < 0) return OutOfRange("from must be >= 0, got " + std::to_string(from));
    if (from > next) {
      return OutOfRange("from " + std::to_string(from) + " is beyond the next seq " +
                        std::to_string(next));
    }
    if (from < first_seq) {
      return Gone("entries before seq " + std::to_string(first_seq) + " were truncated");
    }
    if (to && *to < from) {
      return OutOfRange("to " + std::to_string(*to) + " is before from " +
                        std::to_string(from));
    }
    const int64_t end = to ? std::min(*to, next) : next;
    range.to = to ? *to : next;
    for (size_t i = 0;
         i < segments.size() && static_cast<int>(range.entries.size()) < limit; ++i) {
      const SegmentInfo& seg = segments[i];
      const int64_t seg_end = i + 1 < segments.size() ? segments[i + 1].first_seq : next;
      const int64_t lo = std::max(from, seg.first_seq);
      const int64_t hi = std::min(end, seg_end);  // exclusive
      if (lo >= hi) continue;
      RETURN_IF_ERROR(QuerySegmentEntries(
          conn, sheet_id, seg.num, lo - seg.first_seq, hi - 1 - seg.first_seq,
          static_cast<size_t>(limit), options_.page_size, meter, &range.entries));
    }
    const int64_t reached = range.entries.empty() ? from : range.entries.back().seq + 1;
    range.next = reached;
    range.complete = reached >= end;
    return Status::OK();
  });
  RETURN_IF_ERROR(status);
  return range;
}

Result<EntryRecord> EventLog::GetEntry(const std::string& sheet_id, int64_t seq,
                                       UnitMeter* meter) {
  if (seq < 0) return OutOfRange("seq must be >= 0");
  Result<ReadRange> read = Read(sheet_id, seq, seq + 1, 1, meter);
  if (read.status().code() == StatusCode::kOutOfRange) {
    return NotFound("sheet " + sheet_id + " has no entry " + std::to_string(seq));
  }
  ASSIGN_OR_RETURN(ReadRange range, std::move(read));
  if (range.entries.empty()) {
    return NotFound("sheet " + sheet_id + " has no entry " + std::to_string(seq));
  }
  return range.entries.front();
}

Result<std::optional<EntryRecord>> EventLog::LastCompletedSnapshot(
    const std::string& sheet_id, UnitMeter* meter) {
  std::optional<EntryRecord> snapshot;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                     QuerySegments(conn, sheet_id, meter));
    if (segments.empty()) return NotFound("no sheet " + sheet_id);
    for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
      if (!it->last_snapshot) continue;
      ASSIGN_OR_RETURN(
          std::optional<Item> item,
          EntryTable().Get(conn, Key{{sheet_id, it->num}, {*it->last_snapshot}},
                           Consistency::kEventual, meter));
      if (item) snapshot = EntryFromItem(*item);
      break;
    }
    return Status::OK();
  }));
  return snapshot;
}

Result<std::optional<SnapshotRef>> EventLog::LastSnapshot(const std::string& sheet_id,
                                                          UnitMeter* meter) {
  std::optional<SnapshotRef> out;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kEventual, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    ASSIGN_OR_RETURN(out, ReadLastSnapshot(conn, sheet_id, *sheet, std::nullopt, meter));
    return Status::OK();
  }));
  return out;
}

Result<LoadResult> EventLog::Load(const std::string& sheet_id, UnitMeter* meter) {
  LoadResult load;
  Status status = db_->Read([&](Connection& conn) -> Status {
    // Step 1: the two newest segments.
    QueryRequest query;
    query.partition = {sheet_id};
    query.forward = false;
    query.limit = 2;
    ASSIGN_OR_RETURN(QueryResult page, SegmentTable().Query(conn, query, meter));
    if (page.items.empty()) return NotFound("no sheet " + sheet_id);
    SegmentInfo current = SegmentFromItem(page.items[0]);
    std::optional<SegmentInfo> previous;
    if (page.items.size() > 1) previous = SegmentFromItem(page.items[1]);
    const size_t all = static_cast<size_t>(-1);

    // After an exact truncation with no retained completed snapshot yet, the sheet's
    // base (every entry before first_seq) is the snapshot, and the entries start at
    // first_seq.
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kEventual, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    const int64_t first_seq = IntOr(*sheet, "first_seq", 0);
    std::optional<std::string> base_root = OptionalString(*sheet, "base_root");
    auto retained = [&](const std::optional<SegmentInfo>& seg) {
      return seg && seg->last_snapshot &&
             seg->first_seq + *seg->last_snapshot >= first_seq;
    };
    if (base_root && !retained(current) && !retained(previous)) {
      ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                       QuerySegments(conn, sheet_id, meter));
      EntryRecord base;
      base.seq = first_seq;
      base.type = kSnapshotType;
      base.snapshot_root = base_root;
      load.snapshot = base;
      for (const SegmentInfo& seg : segments) {
        if (&seg != &segments.back() && (&seg)[1].first_seq <= first_seq) continue;
        RETURN_IF_ERROR(QuerySegmentEntries(
            conn, sheet_id, seg.num, std::max<int64_t>(first_seq - seg.first_seq, 0), -1,
            all, options_.page_size, meter, &load.entries));
      }
      load.next_seq = load.entries.empty() ? first_seq : load.entries.back().seq + 1;
      return Status::OK();
    }

    std::vector<EntryRecord> entries;
    if (current.last_snapshot) {
      // Step 2: from the current segment's last snapshot to its end.
      RETURN_IF_ERROR(QuerySegmentEntries(conn, sheet_id, current.num,
                                          *current.last_snapshot, -1, all,
                                          options_.page_size, meter, &entries));
    } else if (current.num == 0) {
      // The first segment's entry 0 is the empty sheet itself: with its snapshot not yet
      // written, replaying from empty gives the same state.
      RETURN_IF_ERROR(QuerySegmentEntries(conn, sheet_id, 0, 1, -1, all,
                                          options_.page_size, meter, &entries));
      load.next_seq = current.first_seq + 1;
    } else if (!previous || !previous->last_snapshot) {
      // Step 3.
      return Internal("corrupt spreadsheet " + sheet_id + ": neither segment " +
                      std::to_string(current.num) + " nor the one before has a snapshot");
    } else {
      // Steps 4 and 5: the previous segment from its snapshot, then the current one from
      // entry 1 (its entry 0 is the Snapshot still being made).
      RETURN_IF_ERROR(QuerySegmentEntries(conn, sheet_id, previous->num,
                                          *previous->last_snapshot, -1, all,
                                          options_.page_size, meter, &entries));
      RETURN_IF_ERROR(QuerySegmentEntries(conn, sheet_id, current.num, 1, -1, all,
                                          options_.page_size, meter, &entries));
    }
    if (!entries.empty() && entries.front().type == kSnapshotType &&
        entries.front().snapshot_root) {
      load.snapshot = entries.front();
      entries.erase(entries.begin());
    }
    load.entries = std::move(entries);
    if (!load.entries.empty()) {
      load.next_seq = load.entries.back().seq + 1;
    } else if (load.snapshot) {
      load.next_seq = load.snapshot->seq + 1;
    } else {
      load.next_seq = std::max<int64_t>(load.next_seq, current.first_seq + 1);
    }
    return Status::OK();
  });
  RETURN_IF_ERROR(status);
  return load;
}

Result<std::vector<EntryRecord>> EventLog::UpdateLoaded(const std::string& sheet_id,
                                                        int64_t last_segment,
                                                        int64_t last_num, bool* reload,
                                                        UnitMeter* meter) {
  std::vector<EntryRecord> entries;
  *reload = false;
  Status status = db_->Read([&](Connection& conn) -> Status {
    // Step 1: the two newest segments.
    QueryRequest query;
    query.partition = {sheet_id};
    query.forward = false;
    query.limit = 2;
    ASSIGN_OR_RETURN(QueryResult page, SegmentTable().Query(conn, query, meter));
    if (page.items.empty()) return NotFound("no sheet " + sheet_id);
    SegmentInfo current = SegmentFromItem(page.items[0]);
    std::optional<SegmentInfo> previous;
    if (page.items.size() > 1) previous = SegmentFromItem(page.items[1]);
    const size_t all = static_cast<size_t>(-1);
    // Step 2: fell behind both segments: reload from scratch.
    const int64_t oldest = previous ? previous->num : current.num;
    if (last_segment < oldest) {
      *reload = true;
      return Status::OK();
    }
    if (last_segment == current.num) {  // step 3
      return QuerySegmentEntries(conn, sheet_id, current.num, last_num + 1, -1, all,
                                 options_.page_size, meter, &entries);
    }
    // Steps 4 and 5.
    RETURN_IF_ERROR(QuerySegmentEntries(conn, sheet_id, previous->num, last_num + 1, -1,
                                        all, options_.page_size, meter, &entries));
    return QuerySegmentEntries(conn, sheet_id, current.num, 1, -1, all,
                               options_.page_size, meter, &entries);
  });
  RETURN_IF_ERROR(status);
  return entries;
}

}  // namespace sheetlog
