// Add Entry (seed 001) with the snapshot and segment policies that follow it
// (seed 000), and Create New Segment. See event_log.h.
#include <algorithm>
#include <random>

#include "emulator/env/faults.h"
#include "src/log/event_log.h"
#include "src/log/event_log_internal.h"
#include "src/log/tables.h"

namespace sheetlog {

namespace {

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

using event_log_internal::EntryItem;
using event_log_internal::HasClientSnapshot;
using event_log_internal::IntOr;
using event_log_internal::ReadLastSnapshot;

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
  // carries what happened. Decides afresh on every run: a transaction aborted by
  // concurrency runs it again (Transactions::Write).
  Status Plan(Connection& conn, Consistency consistency) {
    attempt = AppendAttempt();
    attempt.outcome = Outcome::kWritten;
    sheet_read.reset();
    head_segment.reset();
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
      // Not Aborted: nothing to run again until more entries are appended.
      attempt.outcome = Outcome::kNotDue;
      return FailedPrecondition("snapshot not due");
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

Mutex& EventLog::AppendStripe(const std::string& sheet_id) {
  return append_stripes_[std::hash<std::string>()(sheet_id) % kAppendStripes];
}

EventLog::AppendAttempt EventLog::AppendOnce(const AppendRequest& request,
                                             UnitMeter* meter) {
  if (options_.serialize_appends_per_sheet) {
    MutexLock queued(&AppendStripe(request.sheet_id));
    return AppendOnceNow(request, meter);
  }
  return AppendOnceNow(request, meter);
}

EventLog::AppendAttempt EventLog::AppendOnceNow(const AppendRequest& request,
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
  if (!options_.reads_in_write_transaction || options_.serialize_appends_per_sheet) {
    // The literal form reads before it writes and may lose the race, and appends
    // serialized per sheet queue for their sheet's lock: the waiting form.
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
      lost_race = false;  // decided afresh on every run of the transaction
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

}  // namespace sheetlog
