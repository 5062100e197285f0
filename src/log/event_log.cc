#include "src/log/event_log.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "emulator/env/faults.h"
#include "emulator/env/uuid.h"
#include "emulator/json_text.h"
#include "src/log/pending_snapshots.h"
#include "src/log/sheet_deletion.h"
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
  if (e.metadata) item["metadata"] = *e.metadata;
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
  s.base_root = OptionalString(item, "base_root");
  return s;
}

// Whether a metadata object text carries a client-set "snapshot".
bool HasClientSnapshot(const std::optional<std::string>& metadata) {
  if (!metadata) return false;
  nlohmann::json object = ParseJsonOrDiscarded(*metadata);
  return object.is_object() && object.contains("snapshot") &&
         object["snapshot"].is_string();
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
// Page size of the whole-partition reads (verify, the cost report).
constexpr int kStorageScanPage = 1000;

// LastSnapshot's reads on one connection (defined with the reading helpers below).
Result<std::optional<SnapshotRef>> ReadLastSnapshot(
    Connection& conn, const std::string& sheet_id, const Item& sheet,
    const std::optional<SegmentInfo>& newest, UnitMeter* meter);

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
  e.metadata = OptionalString(item, "metadata");
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

EventLog::EventLog(Transactions* db, Clock* clock, FaultInjector* faults, Options options)
    : db_(db),
      pending_snapshots_(db),
      clock_(clock),
      faults_(faults),
      options_(options) {}

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
    MutexLock lock(&cache_mu_);
    auto it = configs_.find(sheet_id);
    if (it != configs_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(SheetInfo sheet, GetSheet(sheet_id, meter));
  SheetConfig config{sheet.snapshot_every, sheet.segment_entries};
  MutexLock lock(&cache_mu_);
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

// One attempt at Add Entry's steps 1-3: what the plan read and decided, and the
// outcome. Lives as long as the attempt's transaction (on the heap when asynchronous).
struct EventLog::AppendTxn {
  using Outcome = AppendAttempt::Outcome;

  AppendTxn(EventLog* log, const AppendRequest* request, UnitMeter* meter)
      : log(log), request(request), meter(meter) {
    attempt.outcome = Outcome::kWritten;
  }

  // Steps 1-2 (and the checks that depend on the head): decide what to write. A
  // refusal is returned as an error only to roll the transaction back; `attempt`
  // carries what happened.
  Status Plan(Connection& conn, Consistency consistency) {
    const bool is_snapshot = request->type == kSnapshotType;
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{request->sheet_id}, {}}, consistency, meter));
    if (!sheet) return NotFound("no sheet " + request->sheet_id);
    const int64_t snapshot_entry_seq = IntOr(*sheet, "snapshot_entry_seq", 0);
    const int64_t snapshot_every = IntOr(*sheet, "snapshot_every", 0);

    ASSIGN_OR_RETURN(Head head,
                     log->ReadHead(conn, request->sheet_id, consistency, meter));
    sheet_read = *sheet;
    head_segment = head.segment;
    const int64_t next = head.entry.seq + 1;
    if (request->expect_seq && *request->expect_seq != next) {
      attempt.outcome = Outcome::kExpectMismatch;
      attempt.next_seq = next;
      return ConditionFailed("expect_seq " + std::to_string(*request->expect_seq) +
                             " is not the next seq " + std::to_string(next));
    }
    if (is_snapshot && request->allow_reserved && request->only_if_due &&
        (snapshot_every <= 0 || next - snapshot_entry_seq <= snapshot_every)) {
      // Policy append: another writer already added the Snapshot entry that was due.
      attempt.outcome = Outcome::kNotDue;
      return Aborted("snapshot not due");
    }
    EntryRecord& entry = attempt.result.entry;
    entry.seq = next;
    entry.segment = head.segment.num;
    entry.num = head.entry.num + 1;
    entry.created = log->clock_->NowSeconds();
    entry.type = request->type;
    entry.version = request->version;
    entry.body = request->body;
    entry.external = request->external;
    entry.metadata = request->metadata;
    attempt.since_snapshot = next - (is_snapshot ? next : snapshot_entry_seq);
    attempt.segment_full = head.segment.last_snapshot.has_value() &&
                           entry.num + 1 >= IntOr(*sheet, "segment_entries", 0);
    return Status::OK();
  }

  // Step 3: the conditional put at head + 1.
  Status Put(Connection& conn) {
    RETURN_IF_ERROR(log->faults_->Hit(FaultPoint::kLogAddEntryBeforePut));
    Status status = EntryTable().PutIfAbsent(
        conn, EntryItem(request->sheet_id, attempt.result.entry), meter);
    if (status.IsConditionFailed()) attempt.outcome = Outcome::kLostRace;
    RETURN_IF_ERROR(status);
    if (request->type == kSnapshotType) {
      UpdateRequest update;
      update.key = Key{{request->sheet_id}, {}};
      update.set = {{"snapshot_entry_seq", attempt.result.entry.seq}};
      update.create_if_missing = false;
      RETURN_IF_ERROR(SheetTable().Update(conn, update, meter).status());
    }
    if (HasClientSnapshot(request->metadata)) {
      // Appends only grow seq, so this entry is the newest with a client snapshot.
      UpdateRequest update;
      update.key = Key{{request->sheet_id}, {}};
      update.set = {{"client_snapshot_seq", attempt.result.entry.seq}};
      update.create_if_missing = false;
      RETURN_IF_ERROR(SheetTable().Update(conn, update, meter).status());
    }
    if (request->also_write)
      RETURN_IF_ERROR(request->also_write(conn, attempt.result.entry, meter));
    return Status::OK();
  }

  // Steps 1-3 in one write transaction (Options::reads_in_write_transaction), and the
  // last-snapshot read the caller asked for.
  Status PlanAndPut(Connection& conn) {
    RETURN_IF_ERROR(Plan(conn, Consistency::kStrong));
    RETURN_IF_ERROR(Put(conn));
    // With a client snapshot in this entry's metadata the sheet item changed in the
    // put: the caller reads LastSnapshot() afterwards instead.
    if (request->read_last_snapshot && request->type != kSnapshotType &&
        !HasClientSnapshot(request->metadata)) {
      ASSIGN_OR_RETURN(
          attempt.result.last_snapshot,
          ReadLastSnapshot(conn, request->sheet_id, *sheet_read, head_segment, meter));
      attempt.result.last_snapshot_read = true;
    }
    return Status::OK();
  }

  // Records how the attempt's transaction ended.
  AppendAttempt Finish(Status status) {
    attempt.status = std::move(status);
    // A write that failed for another reason after the plan (a fault, a full disk) is
    // a failure, whatever the plan decided.
    if (!attempt.status.ok() && attempt.outcome == Outcome::kWritten) {
      attempt.outcome = Outcome::kFailed;
    }
    return std::move(attempt);
  }

  EventLog* log;
  const AppendRequest* request;
  UnitMeter* meter;
  AppendAttempt attempt;
  std::optional<Item> sheet_read;
  std::optional<SegmentInfo> head_segment;
};

EventLog::AppendAttempt EventLog::AppendOnce(const AppendRequest& request,
                                             UnitMeter* meter) {
  AppendTxn txn(this, &request, meter);
  if (options_.reads_in_write_transaction) {
    return txn.Finish(db_->Write([&](Connection& conn) { return txn.PlanAndPut(conn); }));
  }
  // The seed's literal form: eventually consistent reads, then a conditional write.
  Status status =
      db_->Read([&](Connection& conn) { return txn.Plan(conn, Consistency::kEventual); });
  if (status.ok() && options_.test_between_read_and_put)
    options_.test_between_read_and_put();
  if (status.ok()) {
    status = db_->Write([&](Connection& conn) { return txn.Put(conn); });
  }
  return txn.Finish(std::move(status));
}

Result<AppendResult> EventLog::AddEntry(const AppendRequest& request, UnitMeter* meter,
                                        int64_t* next_seq_out) {
  if (Status refused = RefuseReserved(request); !refused.ok()) return refused;
  ASSIGN_OR_RETURN(SheetConfig config, Config(request.sheet_id, meter));
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    AppendAttempt tried = AppendOnce(request, meter);
    if (tried.outcome != AppendAttempt::Outcome::kLostRace) {
      return Conclude(request, config, std::move(tried), next_seq_out);
    }
    // Step 4: a lost condition means another writer got there first: back off, retry.
    retries_.fetch_add(1, std::memory_order_relaxed);
    clock_->SleepForMicros(BackoffMicros(attempt, options_.backoff_base_micros,
                                         options_.backoff_cap_micros));
  }
  return Unavailable("could not append to sheet " + request.sheet_id + " after " +
                     std::to_string(options_.max_attempts) +
                     " attempts (contention); retry");
}

void EventLog::AddEntryAsync(AppendRequest request, UnitMeter* meter, AppendDone done) {
  if (Status refused = RefuseReserved(request); !refused.ok()) {
    done(refused, -1);
    return;
  }
  Result<SheetConfig> config = Config(request.sheet_id, meter);
  if (!config.ok()) {
    done(config.status(), -1);
    return;
  }
  if (!options_.reads_in_write_transaction) {
    // The literal form reads before it writes and may lose the race: the waiting form.
    int64_t next_seq = -1;
    Result<AppendResult> appended = AddEntry(request, meter, &next_seq);
    done(std::move(appended), next_seq);
    return;
  }
  struct Pending {
    AppendRequest request;
    AppendTxn txn;
    SheetConfig config;
    AppendDone done;
  };
  auto pending = std::make_shared<Pending>(Pending{
      std::move(request), AppendTxn(this, nullptr, meter), *config, std::move(done)});
  pending->txn.request = &pending->request;
  db_->WriteAsync([pending](Connection& conn) { return pending->txn.PlanAndPut(conn); },
                  [this, pending](Status status) {
                    AppendAttempt tried = pending->txn.Finish(std::move(status));
                    if (tried.outcome == AppendAttempt::Outcome::kLostRace) {
                      // Not expected: the plan and the put are one transaction, so no
                      // other writer can take head + 1 between them. Should it happen,
                      // the waiting form retries.
                      int64_t next_seq = -1;
                      Result<AppendResult> appended =
                          AddEntry(pending->request, pending->txn.meter, &next_seq);
                      pending->done(std::move(appended), next_seq);
                      return;
                    }
                    int64_t next_seq = -1;
                    Result<AppendResult> concluded = Conclude(
                        pending->request, pending->config, std::move(tried), &next_seq);
                    pending->done(std::move(concluded), next_seq);
                  });
}

Status EventLog::RefuseReserved(const AppendRequest& request) {
  if (!request.allow_reserved &&
      (request.type == kSnapshotType || request.type == kEndSegmentType)) {
    return InvalidArgument("entry type '" + request.type +
                           "' is reserved for the system");
  }
  return Status::OK();
}

Result<AppendResult> EventLog::Conclude(const AppendRequest& request,
                                        const SheetConfig& config, AppendAttempt tried,
                                        int64_t* next_seq_out) {
  using Outcome = AppendAttempt::Outcome;
  switch (tried.outcome) {
    case Outcome::kWritten:
      appends_.fetch_add(1, std::memory_order_relaxed);
      if (!request.allow_reserved) {
        RunPolicies(request.sheet_id, config, tried.since_snapshot, tried.segment_full,
                    &tried.result);
      }
      return std::move(tried.result);
    case Outcome::kExpectMismatch:  // the client decides what to do
      if (next_seq_out != nullptr) *next_seq_out = tried.next_seq;
      return tried.status;
    case Outcome::kLostRace:
    case Outcome::kNotDue:
    case Outcome::kFailed:
      break;
  }
  return tried.status;
}

void EventLog::RunPolicies(const std::string& sheet_id, const SheetConfig& config,
                           int64_t since_snapshot, bool segment_full,
                           AppendResult* result) {
  // Best effort (seed 000): a failure or a crash here only delays the policy to the next
  // append, which re-evaluates it from the log.
  if (!faults_->Hit(FaultPoint::kLogPolicyBefore).ok()) return;
  // snapshot_every 0: the client manages snapshots, and the server inserts no entry
  // after entry 0 on its own (no Snapshot entries, no segment rollover, which would
  // add EndSegment + Snapshot): seq ids are the client's alone.
  if (config.snapshot_every <= 0) return;
  if (config.segment_entries > 0 && segment_full) {
    Result<SegmentInfo> segment = CreateNewSegment(sheet_id, nullptr);
    if (segment.ok()) {
      result->segment_created = true;
      return;  // the new segment starts with its own Snapshot entry
    }
  }
  if (since_snapshot >= config.snapshot_every) {
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

namespace {

// The newest entry before `below_seq` (and at or after `first_seq`) whose metadata
// has a client-set "snapshot", scanning back page by page; nullopt if none.
Result<std::optional<int64_t>> FindClientSnapshot(
    Connection& conn, const std::string& sheet_id,
    const std::vector<SegmentInfo>& segments, int64_t first_seq, int64_t below_seq,
    UnitMeter* meter) {
  for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
    if (it->first_seq >= below_seq) continue;
    QueryRequest query;
    query.partition = {sheet_id, it->num};
    query.sort_to = KeyValues{Value(below_seq - 1 - it->first_seq)};
    query.forward = false;
    query.limit = 100;
    while (true) {
      ASSIGN_OR_RETURN(QueryResult page, EntryTable().Query(conn, query, meter));
      for (const Item& item : page.items) {
        EntryRecord e = EntryFromItem(item);
        if (e.seq < first_seq) return std::optional<int64_t>();
        if (HasClientSnapshot(e.metadata)) return std::optional<int64_t>(e.seq);
      }
      if (!page.last_evaluated) break;
      query.exclusive_start = page.last_evaluated;
    }
    if (it->first_seq <= first_seq) break;
  }
  return std::optional<int64_t>();
}

}  // namespace

Result<EntryRecord> EventLog::SetMetadata(const std::string& sheet_id, int64_t seq,
                                          const std::string& patch_text,
                                          UnitMeter* meter) {
  nlohmann::json patch = ParseJsonOrDiscarded(patch_text);
  if (!patch.is_object()) return InvalidArgument("metadata must be a JSON object");
  for (const auto& [field, value] : patch.items()) {
    if (std::find(std::begin(kEntryMetadataFields), std::end(kEntryMetadataFields),
                  field) == std::end(kEntryMetadataFields)) {
      return InvalidArgument("unknown metadata field '" + field + "'");
    }
    if (!value.is_string() && !value.is_null()) {
      return InvalidArgument("metadata field '" + field + "' must be a string or null");
    }
  }
  if (seq < 0) return OutOfRange("seq must be >= 0, got " + std::to_string(seq));
  EntryRecord entry;
  Status status = db_->Write([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kStrong, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    const int64_t first_seq = IntOr(*sheet, "first_seq", 0);
    const std::optional<int64_t> client_snapshot_seq =
        OptionalInt(*sheet, "client_snapshot_seq");
    ASSIGN_OR_RETURN(Head head, ReadHead(conn, sheet_id, Consistency::kStrong, meter));
    if (seq > head.entry.seq) {
      return OutOfRange("seq " + std::to_string(seq) + " is at or beyond the next seq " +
                        std::to_string(head.entry.seq + 1));
    }
    if (seq < first_seq) {
      return Gone("entries before seq " + std::to_string(first_seq) + " were truncated");
    }
    ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                     QuerySegments(conn, sheet_id, meter));
    const SegmentInfo* segment = nullptr;
    for (const SegmentInfo& s : segments) {
      if (s.first_seq <= seq) segment = &s;
    }
    if (segment == nullptr)
      return Internal("no segment holds seq " + std::to_string(seq));
    const Key key{{sheet_id, segment->num}, {seq - segment->first_seq}};
    ASSIGN_OR_RETURN(std::optional<Item> item,
                     EntryTable().Get(conn, key, Consistency::kStrong, meter));
    if (!item)
      return Internal("sheet " + sheet_id + " has no entry " + std::to_string(seq));
    entry = EntryFromItem(*item);
    if (patch.empty()) return Status::OK();
    nlohmann::json merged = nlohmann::json::object();
    if (entry.metadata) {
      merged = ParseJsonOrDiscarded(*entry.metadata);
      if (!merged.is_object()) merged = nlohmann::json::object();
    }
    for (const auto& [field, value] : patch.items()) merged[field] = value;
    entry.metadata = merged.dump();
    UpdateRequest update;
    update.key = key;
    update.set = {{"metadata", *entry.metadata}};
    update.create_if_missing = false;
    RETURN_IF_ERROR(EntryTable().Update(conn, update, meter).status());

    // Keep the sheet's pointer to the newest client snapshot right.
    std::optional<int64_t> newest = client_snapshot_seq;
    if (HasClientSnapshot(entry.metadata)) {
      if (!newest || *newest < seq) newest = seq;
    } else if (newest && *newest == seq) {
      ASSIGN_OR_RETURN(
          newest, FindClientSnapshot(conn, sheet_id, segments, first_seq, seq, meter));
    }
    if (newest == client_snapshot_seq) return Status::OK();
    UpdateRequest pointer;
    pointer.key = Key{{sheet_id}, {}};
    if (newest) {
      pointer.set = {{"client_snapshot_seq", *newest}};
    } else {
      pointer.remove = {"client_snapshot_seq"};
    }
    pointer.create_if_missing = false;
    return SheetTable().Update(conn, pointer, meter).status();
  });
  RETURN_IF_ERROR(status);
  return entry;
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
    // An exact truncation's base snapshot (issue 14).
    if (std::optional<std::string> base = OptionalString(*sheet, "base_root")) {
      blobs.push_back(*base);
    }
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
    RETURN_IF_ERROR(DeleteAllPendingSnapshots(conn, sheet_id, meter));
    // Upload rows and the tombstone that makes the blob purge crash-safe (issue 13
    // item 13): committed with the rest, or not at all.
    RETURN_IF_ERROR(RecordSheetDeletion(conn, sheet_id, clock_->NowSeconds()));
    return SheetTable().Delete(conn, Key{{sheet_id}, {}}, {}, meter);
  });
  RETURN_IF_ERROR(status);
  MutexLock lock(&cache_mu_);
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
