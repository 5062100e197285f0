#include "src/log/event_log.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "emulator/env/uuid.h"
#include "src/log/tables.h"

namespace sheetlog {

namespace {

std::optional<std::string> OptionalString(const Item& item, const std::string& column) {
  auto it = item.find(column);
  if (it == item.end() || it->second.is_null()) return std::nullopt;
  return it->second.AsString();
}

std::optional<int64_t> OptionalInt(const Item& item, const std::string& column) {
  auto it = item.find(column);
  if (it == item.end() || it->second.is_null()) return std::nullopt;
  return it->second.AsInt();
}

int64_t IntOr(const Item& item, const std::string& column, int64_t fallback) {
  return OptionalInt(item, column).value_or(fallback);
}

Item EntryItem(const std::string& sheet_id, const EntryRecord& e) {
  Item item{{"sheet_id", sheet_id}, {"segment", e.segment}, {"num", e.num},
            {"seq", e.seq},         {"created", e.created}, {"type", e.type},
            {"version", e.version}};
  if (e.body) item["body"] = *e.body;
  if (e.external) item["external"] = *e.external;
  if (e.snapshot_root) item["snapshot_root"] = *e.snapshot_root;
  return item;
}

SheetInfo SheetFromItem(const Item& item) {
  SheetInfo s;
  s.id = item.at("id").AsString();
  s.name = OptionalString(item, "name").value_or("");
  s.created = IntOr(item, "created", 0);
  s.snapshot_every = IntOr(item, "snapshot_every", 0);
  s.segment_entries = IntOr(item, "segment_entries", 0);
  s.first_seq = IntOr(item, "first_seq", 0);
  return s;
}

// Full-jitter exponential backoff (AWS architecture blog): uniform in [0, min(cap,
// base * 2^attempt)].
int64_t BackoffMicros(int attempt, int64_t base, int64_t cap) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  int64_t ceiling = base << std::min(attempt, 20);
  ceiling = std::min(ceiling, cap);
  std::uniform_int_distribution<int64_t> dist(0, std::max<int64_t>(ceiling, 0));
  return dist(rng);
}

constexpr int kSegmentReadAttempts = 4;

}  // namespace

EntryRecord EntryFromItem(const Item& item) {
  EntryRecord e;
  e.seq = IntOr(item, "seq", 0);
  e.segment = IntOr(item, "segment", 0);
  e.num = IntOr(item, "num", 0);
  e.created = IntOr(item, "created", 0);
  e.type = OptionalString(item, "type").value_or("");
  e.version = IntOr(item, "version", 1);
  e.body = OptionalString(item, "body");
  e.external = OptionalString(item, "external");
  e.snapshot_root = OptionalString(item, "snapshot_root");
  return e;
}

Status ForEachSheet(EventLog* log, const std::optional<std::string>& only,
                    const std::function<Status(const SheetInfo&)>& visit) {
  if (only) {
    ASSIGN_OR_RETURN(SheetInfo sheet, log->GetSheet(*only, nullptr));
    return visit(sheet);
  }
  for (std::string after;;) {
    ASSIGN_OR_RETURN(std::vector<SheetInfo> sheets, log->ListSheets(after, 100, nullptr));
    if (sheets.empty()) return Status::OK();
    for (const SheetInfo& sheet : sheets) RETURN_IF_ERROR(visit(sheet));
    after = sheets.back().id;
  }
}

SegmentInfo SegmentFromItem(const Item& item) {
  SegmentInfo s;
  s.num = IntOr(item, "num", 0);
  s.first_seq = IntOr(item, "first_seq", 0);
  s.created = IntOr(item, "created", 0);
  s.last_snapshot = OptionalInt(item, "last_snapshot");
  s.archive = OptionalString(item, "archive");
  return s;
}

EventLog::EventLog(Database* db, Clock* clock, FaultInjector* faults, Options options)
    : db_(db), clock_(clock), faults_(faults), options_(options) {}

// ---------------------------------------------------------------------------
// Create Log

Result<SheetInfo> EventLog::CreateLog(const std::string& name, int64_t snapshot_every,
                                      int64_t segment_entries, UnitMeter* meter) {
  SheetInfo sheet;
  sheet.id = NewRandomUuid();  // step 1
  sheet.name = name;
  sheet.created = clock_->NowSeconds();
  sheet.snapshot_every = snapshot_every;
  sheet.segment_entries = segment_entries;

  EntryRecord snapshot;
  snapshot.created = sheet.created;
  snapshot.type = kSnapshotType;

  // Step 2: one transaction for Segment 0 and entry 0, so a log is never half-created.
  Status status = db_->Write([&](Connection& conn) {
    return TransactWrite(
        conn,
        {TransactItem::PutIfAbsent(SheetTable(),
                                   Item{{"id", sheet.id},
                                        {"name", name},
                                        {"created", sheet.created},
                                        {"snapshot_every", snapshot_every},
                                        {"segment_entries", segment_entries},
                                        {"first_seq", 0},
                                        {"snapshot_entry_seq", 0}}),
         TransactItem::PutIfAbsent(SegmentTable(), Item{{"sheet_id", sheet.id},
                                                        {"num", 0},
                                                        {"created", sheet.created},
                                                        {"first_seq", 0}}),
         TransactItem::PutIfAbsent(EntryTable(), EntryItem(sheet.id, snapshot))},
        meter);
  });
  RETURN_IF_ERROR(status);
  return sheet;
}

Result<SheetInfo> EventLog::GetSheet(const std::string& sheet_id, UnitMeter* meter) {
  std::optional<Item> item;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) {
    ASSIGN_OR_RETURN(
        item, SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kEventual, meter));
    return Status::OK();
  }));
  if (!item) return NotFound("no sheet " + sheet_id);
  return SheetFromItem(*item);
}

Result<std::vector<SheetInfo>> EventLog::ListSheets(const std::string& after, int limit,
                                                    UnitMeter* meter) {
  std::vector<SheetInfo> sheets;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) {
    std::optional<KeyValues> start;
    if (!after.empty()) start = KeyValues{Value(after)};
    ASSIGN_OR_RETURN(QueryResult page, SheetTable().Scan(conn, start, limit,
                                                         Consistency::kEventual, meter));
    for (const Item& item : page.items) sheets.push_back(SheetFromItem(item));
    return Status::OK();
  }));
  return sheets;
}

Result<EventLog::SheetConfig> EventLog::Config(const std::string& sheet_id,
                                               UnitMeter* meter) {
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = configs_.find(sheet_id);
    if (it != configs_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(SheetInfo sheet, GetSheet(sheet_id, meter));
  SheetConfig config{sheet.snapshot_every, sheet.segment_entries};
  std::lock_guard<std::mutex> lock(cache_mu_);
  configs_[sheet_id] = config;
  return config;
}

// ---------------------------------------------------------------------------
// Add Entry

Result<EventLog::Head> EventLog::ReadHead(Connection& conn, const std::string& sheet_id,
                                          Consistency consistency, UnitMeter* meter) {
  for (int attempt = 0; attempt < kSegmentReadAttempts; ++attempt) {
    // Step 1: the segment with the highest Num.
    QueryRequest segment_query;
    segment_query.partition = {sheet_id};
    segment_query.forward = false;
    segment_query.limit = 1;
    segment_query.consistency = consistency;
    ASSIGN_OR_RETURN(QueryResult segments,
                     SegmentTable().Query(conn, segment_query, meter));
    if (segments.items.empty()) return NotFound("no sheet " + sheet_id);
    Head head;
    head.segment = SegmentFromItem(segments.items.front());

    // Step 2: that segment's entry with the highest Num.
    QueryRequest entry_query;
    entry_query.partition = {sheet_id, head.segment.num};
    entry_query.forward = false;
    entry_query.limit = 1;
    entry_query.consistency = consistency;
    ASSIGN_OR_RETURN(QueryResult entries, EntryTable().Query(conn, entry_query, meter));
    if (entries.items.empty()) {
      return Internal("corrupt sheet " + sheet_id + ": segment " +
                      std::to_string(head.segment.num) + " has no entries");
    }
    head.entry = EntryFromItem(entries.items.front());
    // An EndSegment head means a newer segment exists that the segment read missed.
    if (head.entry.type != kEndSegmentType) return head;
  }
  return Unavailable("the newest segment of sheet " + sheet_id + " kept moving");
}

namespace {
// Why one append attempt did not write.
enum class AppendOutcome { kWritten, kExpectMismatch, kLostRace, kNotDue };
}  // namespace

Result<AppendResult> EventLog::AppendOnce(const AppendRequest& request, UnitMeter* meter,
                                          int64_t* next_seq_out, int64_t* since_snapshot,
                                          bool* segment_full) {
  AppendResult result;
  AppendOutcome outcome = AppendOutcome::kWritten;
  const bool is_snapshot = request.type == kSnapshotType;

  // Steps 1-2 (and the checks that depend on the head): decide what to write.
  auto plan = [&](Connection& conn, Consistency consistency) -> Status {
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{request.sheet_id}, {}}, consistency, meter));
    if (!sheet) return NotFound("no sheet " + request.sheet_id);
    const int64_t snapshot_entry_seq = IntOr(*sheet, "snapshot_entry_seq", 0);
    const int64_t snapshot_every = IntOr(*sheet, "snapshot_every", 0);

    ASSIGN_OR_RETURN(Head head, ReadHead(conn, request.sheet_id, consistency, meter));
    const int64_t next = head.entry.seq + 1;
    if (request.expect_seq && *request.expect_seq != next) {
      outcome = AppendOutcome::kExpectMismatch;
      if (next_seq_out != nullptr) *next_seq_out = next;
      return ConditionFailed("expect_seq " + std::to_string(*request.expect_seq) +
                             " is not the next seq " + std::to_string(next));
    }
    if (is_snapshot && request.allow_reserved && request.only_if_due &&
        (snapshot_every <= 0 || next - snapshot_entry_seq <= snapshot_every)) {
      // Policy append: another writer already added the Snapshot entry that was due.
      outcome = AppendOutcome::kNotDue;
      return Aborted("snapshot not due");
    }
    EntryRecord& entry = result.entry;
    entry.seq = next;
    entry.segment = head.segment.num;
    entry.num = head.entry.num + 1;
    entry.created = clock_->NowSeconds();
    entry.type = request.type;
    entry.version = request.version;
    entry.body = request.body;
    entry.external = request.external;
    *since_snapshot = next - (is_snapshot ? next : snapshot_entry_seq);
    *segment_full = head.segment.last_snapshot.has_value() &&
                    entry.num + 1 >= IntOr(*sheet, "segment_entries", 0);
    return Status::OK();
  };

  // Step 3: the conditional put at head + 1.
  auto put = [&](Connection& conn) -> Status {
    RETURN_IF_ERROR(faults_->Hit("log.add_entry.before_put"));
    Status status =
        EntryTable().PutIfAbsent(conn, EntryItem(request.sheet_id, result.entry), meter);
    if (status.IsConditionFailed()) outcome = AppendOutcome::kLostRace;
    RETURN_IF_ERROR(status);
    if (is_snapshot) {
      UpdateRequest update;
      update.key = Key{{request.sheet_id}, {}};
      update.set = {{"snapshot_entry_seq", result.entry.seq}};
      update.create_if_missing = false;
      RETURN_IF_ERROR(SheetTable().Update(conn, update, meter).status());
    }
    if (request.also_write)
      RETURN_IF_ERROR(request.also_write(conn, result.entry, meter));
    return Status::OK();
  };

  Status status;
  if (options_.reads_in_write_transaction) {
    status = db_->Write([&](Connection& conn) -> Status {
      RETURN_IF_ERROR(plan(conn, Consistency::kStrong));
      return put(conn);
    });
  } else {
    // The seed's literal form: eventually consistent reads, then a conditional write.
    status =
        db_->Read([&](Connection& conn) { return plan(conn, Consistency::kEventual); });
    if (status.ok() && options_.test_between_read_and_put)
      options_.test_between_read_and_put();
    if (status.ok()) status = db_->Write(put);
  }
  if (status.ok()) return result;
  switch (outcome) {
    case AppendOutcome::kLostRace:
      return ConditionFailed("lost race");
    case AppendOutcome::kNotDue:
      return Aborted("snapshot not due");
    default:
      return status;
  }
}

Result<AppendResult> EventLog::AddEntry(const AppendRequest& request, UnitMeter* meter,
                                        int64_t* next_seq_out) {
  if (!request.allow_reserved &&
      (request.type == kSnapshotType || request.type == kEndSegmentType)) {
    return InvalidArgument("entry type '" + request.type +
                           "' is reserved for the system");
  }
  ASSIGN_OR_RETURN(SheetConfig config, Config(request.sheet_id, meter));
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    int64_t since_snapshot = 0;
    bool segment_full = false;
    int64_t next_seq = -1;
    Result<AppendResult> result =
        AppendOnce(request, meter, &next_seq, &since_snapshot, &segment_full);
    if (result.ok()) {
      appends_.fetch_add(1, std::memory_order_relaxed);
      if (!request.allow_reserved) {
        RunPolicies(request.sheet_id, config, since_snapshot, segment_full,
                    &result.value());
      }
      return result;
    }
    if (next_seq >= 0) {  // expect_seq mismatch: the client decides what to do
      if (next_seq_out != nullptr) *next_seq_out = next_seq;
      return result.status();
    }
    // Step 4: a lost condition means another writer got there first: back off, retry.
    if (!result.status().IsConditionFailed() ||
        result.status().message() != "lost race") {
      return result.status();
    }
    retries_.fetch_add(1, std::memory_order_relaxed);
    clock_->SleepForMicros(BackoffMicros(attempt, options_.backoff_base_micros,
                                         options_.backoff_cap_micros));
  }
  return Unavailable("could not append to sheet " + request.sheet_id + " after " +
                     std::to_string(options_.max_attempts) +
                     " attempts (contention); retry");
}

void EventLog::RunPolicies(const std::string& sheet_id, const SheetConfig& config,
                           int64_t since_snapshot, bool segment_full,
                           AppendResult* result) {
  // Best effort (seed 000): a failure or a crash here only delays the policy to the next
  // append, which re-evaluates it from the log.
  if (!faults_->Hit("log.policy.before").ok()) return;
  if (config.segment_entries > 0 && segment_full) {
    Result<SegmentInfo> segment = CreateNewSegment(sheet_id, nullptr);
    if (segment.ok()) {
      result->segment_created = true;
      return;  // the new segment starts with its own Snapshot entry
    }
  }
  if (config.snapshot_every > 0 && since_snapshot >= config.snapshot_every) {
    AppendRequest snapshot;
    snapshot.sheet_id = sheet_id;
    snapshot.type = kSnapshotType;
    snapshot.allow_reserved = true;
    snapshot.only_if_due = true;
    Result<AppendResult> appended = AddEntry(snapshot, nullptr);
    result->snapshot_appended = appended.ok();
  }
}

// ---------------------------------------------------------------------------
// Create New Segment

Result<SegmentInfo> EventLog::CreateNewSegment(const std::string& sheet_id,
                                               UnitMeter* meter) {
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    SegmentInfo created;
    bool lost_race = false;
    Status status = db_->Write([&](Connection& conn) -> Status {
      // Step 1: the current segment must have a completed snapshot.
      ASSIGN_OR_RETURN(Head head, ReadHead(conn, sheet_id, Consistency::kStrong, meter));
      if (!head.segment.last_snapshot) {
        return FailedPrecondition("segment " + std::to_string(head.segment.num) +
                                  " of sheet " + sheet_id +
                                  " has no completed snapshot yet");
      }
      // Step 2 is the head read above. Step 3: one transaction.
      const int64_t now = clock_->NowSeconds();
      EntryRecord end;
      end.seq = head.entry.seq + 1;
      end.segment = head.segment.num;
      end.num = head.entry.num + 1;
      end.created = now;
      end.type = kEndSegmentType;
      EntryRecord snapshot;
      snapshot.seq = head.entry.seq + 2;
      snapshot.segment = head.segment.num + 1;
      snapshot.num = 0;
      snapshot.created = now;
      snapshot.type = kSnapshotType;
      created.num = snapshot.segment;
      created.first_seq = snapshot.seq;
      created.created = now;
      UpdateRequest sheet_update;
      sheet_update.key = Key{{sheet_id}, {}};
      sheet_update.set = {{"snapshot_entry_seq", snapshot.seq}};
      sheet_update.create_if_missing = false;
      Status tx = TransactWrite(
          conn,
          {TransactItem::PutIfAbsent(EntryTable(), EntryItem(sheet_id, end)),
           TransactItem::PutIfAbsent(SegmentTable(),
                                     Item{{"sheet_id", sheet_id},
                                          {"num", created.num},
                                          {"created", now},
                                          {"first_seq", created.first_seq}}),
           TransactItem::PutIfAbsent(EntryTable(), EntryItem(sheet_id, snapshot)),
           TransactItem::Update(SheetTable(), sheet_update)},
          meter);
      if (tx.IsConditionFailed()) lost_race = true;
      return tx;
    });
    if (status.ok()) return created;
    if (!lost_race) return status;
    // Step 4: the transaction lost to another writer; try again.
    clock_->SleepForMicros(BackoffMicros(attempt, options_.backoff_base_micros,
                                         options_.backoff_cap_micros));
  }
  return Unavailable("could not create a new segment for sheet " + sheet_id + "; retry");
}

// ---------------------------------------------------------------------------
// Reading

namespace {

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

}  // namespace

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

Result<int64_t> EventLog::NextSeq(const std::string& sheet_id, UnitMeter* meter) {
  int64_t next = 0;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) {
    ASSIGN_OR_RETURN(Head head, ReadHead(conn, sheet_id, Consistency::kEventual, meter));
    next = head.entry.seq + 1;
    return Status::OK();
  }));
  return next;
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
    range.complete = reached >= range.to;
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

Status EventLog::CompleteSnapshot(const std::string& sheet_id, int64_t segment,
                                  int64_t num, const std::string& root,
                                  UnitMeter* meter) {
  return db_->Write([&](Connection& conn) -> Status {
    UpdateRequest entry_update;
    entry_update.key = Key{{sheet_id, segment}, {num}};
    entry_update.set = {{"snapshot_root", root}};
    entry_update.conditions = {Condition::Equals("type", kSnapshotType)};
    entry_update.create_if_missing = false;
    RETURN_IF_ERROR(EntryTable().Update(conn, entry_update, meter).status());

    ASSIGN_OR_RETURN(std::optional<Item> seg,
                     SegmentTable().Get(conn, Key{{sheet_id}, {segment}},
                                        Consistency::kStrong, meter));
    if (!seg) return NotFound("no segment " + std::to_string(segment));
    std::optional<int64_t> last = OptionalInt(*seg, "last_snapshot");
    if (last && *last >= num) return Status::OK();  // never move backwards
    UpdateRequest segment_update;
    segment_update.key = Key{{sheet_id}, {segment}};
    segment_update.set = {{"last_snapshot", num}};
    segment_update.conditions = {last ? Condition::Equals("last_snapshot", *last)
                                      : Condition::NotExists("last_snapshot")};
    segment_update.create_if_missing = false;
    return SegmentTable().Update(conn, segment_update, meter).status();
  });
}

Result<std::vector<std::string>> EventLog::DeleteSheet(const std::string& sheet_id,
                                                       UnitMeter* meter) {
  std::vector<std::string> blobs;
  Status status = db_->Write([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kStrong, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                     QuerySegments(conn, sheet_id, meter));
    for (const SegmentInfo& seg : segments) {
      if (seg.archive) blobs.push_back(*seg.archive);
      std::vector<EntryRecord> entries;
      RETURN_IF_ERROR(QuerySegmentEntries(conn, sheet_id, seg.num, 0, -1,
                                          static_cast<size_t>(-1), options_.page_size,
                                          meter, &entries));
      for (const EntryRecord& e : entries) {
        if (e.external) blobs.push_back(*e.external);
        if (e.snapshot_root) blobs.push_back(*e.snapshot_root);
        RETURN_IF_ERROR(
            EntryTable().Delete(conn, Key{{sheet_id, seg.num}, {e.num}}, {}, meter));
      }
      RETURN_IF_ERROR(SegmentTable().Delete(conn, Key{{sheet_id}, {seg.num}}, {}, meter));
    }
    QueryRequest pending;
    pending.partition = {sheet_id};
    ASSIGN_OR_RETURN(QueryResult page,
                     PendingSnapshotTable().Query(conn, pending, meter));
    for (const Item& item : page.items) {
      RETURN_IF_ERROR(PendingSnapshotTable().Delete(
          conn, Key{{sheet_id}, {item.at("segment"), item.at("entry")}}, {}, meter));
    }
    return SheetTable().Delete(conn, Key{{sheet_id}, {}}, {}, meter);
  });
  RETURN_IF_ERROR(status);
  std::lock_guard<std::mutex> lock(cache_mu_);
  configs_.erase(sheet_id);
  return blobs;
}

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
  line["body"] =
      e.body ? nlohmann::json::parse(*e.body, nullptr, false) : nlohmann::json(nullptr);
  line["external"] = e.external ? nlohmann::json(*e.external) : nlohmann::json(nullptr);
  line["snapshot_root"] =
      e.snapshot_root ? nlohmann::json(*e.snapshot_root) : nlohmann::json(nullptr);
  return line.dump() + "\n";
}

}  // namespace

Result<TruncateResult> EventLog::Truncate(const std::string& sheet_id, int64_t before_seq,
                                          BlobStore* archive_to, UnitMeter* meter) {
  if (before_seq < 0) {
    return OutOfRange("before_seq must be >= 0, got " + std::to_string(before_seq));
  }
  // Which segments may go: a prefix, since both conditions only get easier going back.
  TruncateResult result;
  std::vector<SegmentInfo> segments;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kStrong, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    result.first_seq = IntOr(*sheet, "first_seq", 0);
    ASSIGN_OR_RETURN(segments, QuerySegments(conn, sheet_id, meter));
    return Status::OK();
  }));
  size_t keep_from = 0;  // segments[0, keep_from) are dropped or already gone
  for (size_t i = 0; i + 1 < segments.size(); ++i) {
    const int64_t end = segments[i + 1].first_seq;  // exclusive
    bool behind_snapshot = false;
    for (size_t j = i + 1; j < segments.size(); ++j) {
      if (segments[j].last_snapshot) behind_snapshot = true;
    }
    if (end > before_seq || !behind_snapshot) break;
    keep_from = i + 1;
  }
  if (keep_from == 0 || segments[keep_from].first_seq <= result.first_seq) return result;
  const int64_t new_first_seq = segments[keep_from].first_seq;

  // Archive first: a crash after it leaves an archive and nothing dropped, and the
  // retry rewrites the same key.
  std::vector<const SegmentInfo*> dropping;
  for (size_t i = 0; i < keep_from; ++i) {
    if (segments[i + 1].first_seq > result.first_seq) dropping.push_back(&segments[i]);
  }
  std::map<int64_t, std::string> archive_keys;
  if (archive_to != nullptr) {
    for (const SegmentInfo* seg : dropping) {
      std::vector<EntryRecord> entries;
      RETURN_IF_ERROR(db_->Read([&](Connection& conn) {
        return QuerySegmentEntries(conn, sheet_id, seg->num, 0, -1,
                                   static_cast<size_t>(-1), options_.page_size, meter,
                                   &entries);
      }));
      const std::string key = ArchiveKey(sheet_id, seg->num);
      BlobPutOptions put;
      put.content_type = "application/x-ndjson";
      ASSIGN_OR_RETURN(std::unique_ptr<BlobWriter> writer,
                       archive_to->BeginPut(key, put));
      for (const EntryRecord& e : entries)
        RETURN_IF_ERROR(writer->Append(ArchiveLine(e)));
      RETURN_IF_ERROR(writer->Commit().status());
      archive_keys[seg->num] = key;
      result.archives.push_back(key);
    }
  }
  RETURN_IF_ERROR(faults_->Hit("log.truncate.before_drop"));

  // One transaction: first_seq forward (only if nobody moved it meanwhile), entries
  // gone, archive keys on the segments, obsolete pending snapshots removed.
  TruncateResult dropped = result;
  Status status = db_->Write([&](Connection& conn) -> Status {
    dropped = result;
    UpdateRequest move;
    move.key = Key{{sheet_id}, {}};
    move.set = {{"first_seq", new_first_seq}};
    move.conditions = {Condition::Equals("first_seq", result.first_seq)};
    move.create_if_missing = false;
    RETURN_IF_ERROR(SheetTable().Update(conn, move, meter).status());
    // Pending snapshots of dropped Snapshot entries are obsolete (a later snapshot is
    // complete): the worker would only find them late duplicates.
    QueryRequest pending;
    pending.partition = {sheet_id};
    pending.sort_to = KeyValues{Value(dropping.back()->num)};
    ASSIGN_OR_RETURN(QueryResult obsolete,
                     PendingSnapshotTable().Query(conn, pending, meter));
    for (const Item& item : obsolete.items) {
      RETURN_IF_ERROR(PendingSnapshotTable().Delete(
          conn, Key{{sheet_id}, {item.at("segment"), item.at("entry")}}, {}, meter));
    }
    for (const SegmentInfo* seg : dropping) {
      std::vector<EntryRecord> entries;
      RETURN_IF_ERROR(QuerySegmentEntries(conn, sheet_id, seg->num, 0, -1,
                                          static_cast<size_t>(-1), options_.page_size,
                                          meter, &entries));
      for (const EntryRecord& e : entries) {
        if (e.external && !archive_keys.count(seg->num)) {
          dropped.released_blobs.push_back(*e.external);
        }
        if (e.snapshot_root) dropped.released_blobs.push_back(*e.snapshot_root);
        RETURN_IF_ERROR(
            EntryTable().Delete(conn, Key{{sheet_id, seg->num}, {e.num}}, {}, meter));
      }
      dropped.dropped_entries += static_cast<int64_t>(entries.size());
      dropped.dropped_segments.push_back(seg->num);
      auto archive = archive_keys.find(seg->num);
      if (archive != archive_keys.end()) {
        UpdateRequest mark;
        mark.key = Key{{sheet_id}, {seg->num}};
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
