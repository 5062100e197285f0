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

  // What the plan reads: the sheet's item and its head (steps 1-2).
  struct PlanState {
    Item sheet;
    Head head;
  };
  static Result<PlanState> ReadPlanState(EventLog* log, Connection& conn,
                                         const std::string& sheet_id,
                                         Consistency consistency, UnitMeter* meter) {
    ASSIGN_OR_RETURN(std::optional<Item> sheet,
                     SheetTable().Get(conn, Key{{sheet_id}, {}}, consistency, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    ASSIGN_OR_RETURN(Head head, log->ReadHead(conn, sheet_id, consistency, meter));
    return PlanState{std::move(*sheet), std::move(head)};
  }

  // ReadPlanState for many sheets, in three statements whatever their number (the
  // sheet rows, their newest segments, those segments' newest entries), each sheet's
  // reads charged to its meter as ReadPlanState's own would be. A sheet whose head
  // needs more (an EndSegment head: a newer segment appeared; an empty segment) is
  // read again by ReadPlanState. An error returned fails them all.
  static Result<std::vector<Result<PlanState>>> ReadPlanStates(
      EventLog* log, Connection& conn, const std::vector<std::string>& sheet_ids,
      const std::vector<UnitMeter*>& meters) {
    std::vector<Result<PlanState>> states;
    std::vector<KeyValues> partitions;
    for (const std::string& id : sheet_ids) partitions.push_back({id});
    ASSIGN_OR_RETURN(
        std::vector<std::optional<Item>> sheets,
        SheetTable().QueryNewest(conn, partitions, Consistency::kStrong, meters));
    // Steps 1 and 2 for the sheets that exist: `found` indexes sheet_ids.
    std::vector<size_t> found;
    std::vector<KeyValues> segment_partitions;
    std::vector<UnitMeter*> found_meters;
    for (size_t i = 0; i < sheet_ids.size(); ++i) {
      if (!sheets[i]) continue;
      found.push_back(i);
      segment_partitions.push_back({sheet_ids[i]});
      found_meters.push_back(meters[i]);
    }
    ASSIGN_OR_RETURN(std::vector<std::optional<Item>> segments,
                     SegmentTable().QueryNewest(conn, segment_partitions,
                                                Consistency::kStrong, found_meters));
    std::vector<KeyValues> entry_partitions;
    std::vector<UnitMeter*> entry_meters;
    std::vector<size_t> with_segment;  // indexes `found`
    for (size_t f = 0; f < found.size(); ++f) {
      if (!segments[f]) continue;
      with_segment.push_back(f);
      entry_partitions.push_back({sheet_ids[found[f]], segments[f]->at("num")});
      entry_meters.push_back(found_meters[f]);
    }
    ASSIGN_OR_RETURN(std::vector<std::optional<Item>> entries,
                     EntryTable().QueryNewest(conn, entry_partitions,
                                              Consistency::kStrong, entry_meters));
    for (size_t i = 0; i < sheet_ids.size(); ++i) {
      states.push_back(NotFound("no sheet " + sheet_ids[i]));
    }
    for (size_t w = 0; w < with_segment.size(); ++w) {
      const size_t f = with_segment[w];
      const size_t i = found[f];
      Head head;
      head.segment = SegmentFromItem(*segments[f]);
      if (entries[w]) head.entry = EntryFromItem(*entries[w]);
      if (!entries[w] || head.entry.type == kEndSegmentType) {
        states[i] =
            ReadPlanState(log, conn, sheet_ids[i], Consistency::kStrong, meters[i]);
        if (!states[i].ok() && !states[i].status().IsNotFound())
          return states[i].status();
        continue;
      }
      states[i] = PlanState{std::move(*sheets[i]), std::move(head)};
    }
    return states;
  }

  // Steps 1-2 (and the checks that depend on the head): decide what to write. A
  // refusal is returned as an error only to roll the transaction back; `attempt`
  // carries what happened. Decides afresh on every run: a transaction aborted by
  // concurrency runs it again (Transactions::Write).
  Status Plan(Connection& conn, Consistency consistency) {
    Reset();
    ASSIGN_OR_RETURN(PlanState state,
                     ReadPlanState(log, conn, request->sheet_id, consistency, meter));
    return Decide(state);
  }

  // A fresh attempt.
  void Reset() {
    attempt = AppendAttempt();
    attempt.outcome = Outcome::kWritten;
    sheet_read.reset();
    head_segment.reset();
  }

  // The plan's decision on what it read: the entry at head + 1, or a refusal.
  Status Decide(const PlanState& state) {
    const Item& sheet = state.sheet;
    const Head& head = state.head;
    const bool is_snapshot = request->type == kSnapshotType;
    const int64_t snapshot_entry_seq = IntOr(sheet, "snapshot_entry_seq", 0);
    const int64_t snapshot_every = IntOr(sheet, "snapshot_every", 0);
    sheet_read = sheet;
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
                           entry.num + 1 >= IntOr(sheet, "segment_entries", 0);
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

// An append queued for AddEntryAsync, and the group its work takes.
struct EventLog::QueuedAppend {
  AppendRequest request;
  AppendTxn txn;
  SheetConfig config;
  AppendDone done;
  Status own;  // the append's own failure in the group's last run (OK: none)
};

struct EventLog::AppendGroup {
  bool taken = false;
  std::vector<std::shared_ptr<QueuedAppend>> appends;
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
  auto queued = std::make_shared<QueuedAppend>(QueuedAppend{
      std::move(request), AppendTxn(this, nullptr, meter), *config, std::move(done), {}});
  queued->txn.request = &queued->request;
  auto group = std::make_shared<AppendGroup>();
  if (options_.batch_appends && Batchable(queued->request)) {
    MutexLock lock(&append_queue_mu_);
    append_queue_.push_back(queued);  // taken by this work or an earlier one
  } else {
    group->taken = true;  // a group of its own
    group->appends.push_back(queued);
  }
  db_->WriteAsync(
      [this, group](Connection& conn) { return RunAppendGroup(conn, *group); },
      [this, group](Status status) { FinishAppendGroup(*group, std::move(status)); });
}

bool EventLog::Batchable(const AppendRequest& request) {
  // Those that write more than the entry (the sheet's snapshot seqs, an upload's row)
  // run on their own.
  return request.type != kSnapshotType && !request.allow_reserved &&
         !HasClientSnapshot(request.metadata) && !request.also_write;
}

void EventLog::TakeQueuedAppends(AppendGroup& group) {
  if (group.taken) return;
  group.taken = true;
  MutexLock lock(&append_queue_mu_);
  while (!append_queue_.empty() && group.appends.size() < kAppendBatchLimit) {
    group.appends.push_back(std::move(append_queue_.front()));
    append_queue_.pop_front();
  }
}

Status EventLog::RunAppendGroup(Connection& conn, AppendGroup& group) {
  TakeQueuedAppends(group);
  for (auto& queued : group.appends) queued->own = Status::OK();
  if (group.appends.size() == 1) {
    // Add Entry's steps as they stand; the work's answer is the append's.
    QueuedAppend& only = *group.appends.front();
    only.own = only.txn.PlanAndPut(conn);
    return only.own;
  }
  if (group.appends.empty()) return Status::OK();

  // Steps 1-2 for every append, all its sheets read at once: the plans of one sheet's
  // appends follow one another from the head it read, in the order they queued.
  struct SheetPlan {
    size_t index = 0;  // in sheet_ids
    UnitMeter reads;   // what reading it cost, charged to each of its appends
    std::optional<Result<std::optional<SnapshotRef>>> last_snapshot;
    UnitMeter last_snapshot_reads;
  };
  std::map<std::string, SheetPlan> sheets;
  std::vector<std::string> sheet_ids;
  for (auto& queued : group.appends) {
    queued->txn.Reset();
    // Step 3's fault point comes before the plan here: an append the fault refuses
    // takes no seq the next one would have to follow.
    queued->own = faults_->Hit(FaultPoint::kLogAddEntryBeforePut);
    if (!queued->own.ok()) continue;
    auto [it, first] = sheets.try_emplace(queued->request.sheet_id);
    if (first) {
      it->second.index = sheet_ids.size();
      sheet_ids.push_back(queued->request.sheet_id);
    }
  }
  std::vector<UnitMeter*> read_meters(sheet_ids.size());
  for (auto& [id, sheet] : sheets) read_meters[sheet.index] = &sheet.reads;
  ASSIGN_OR_RETURN(std::vector<Result<AppendTxn::PlanState>> states,
                   AppendTxn::ReadPlanStates(this, conn, sheet_ids, read_meters));
  std::vector<Item> items;
  std::vector<UnitMeter*> meters;
  for (auto& queued : group.appends) {
    if (!queued->own.ok()) continue;
    AppendTxn& txn = queued->txn;
    SheetPlan& sheet = sheets.at(queued->request.sheet_id);
    Result<AppendTxn::PlanState>& state = states[sheet.index];
    if (txn.meter != nullptr) txn.meter->Merge(sheet.reads);
    if (!state.ok()) {  // no such sheet: the append's own answer
      queued->own = state.status();
      continue;
    }
    queued->own = txn.Decide(*state);
    if (!queued->own.ok()) continue;
    state->head.entry = txn.attempt.result.entry;  // the next one follows it
    items.push_back(EntryItem(queued->request.sheet_id, txn.attempt.result.entry));
    meters.push_back(txn.meter);
    if (queued->request.read_last_snapshot) {
      // The batch writes no snapshot: one read per sheet answers all its appends.
      if (!sheet.last_snapshot) {
        sheet.last_snapshot =
            ReadLastSnapshot(conn, queued->request.sheet_id, state->sheet,
                             state->head.segment, &sheet.last_snapshot_reads);
        if (!sheet.last_snapshot->ok()) return sheet.last_snapshot->status();
      }
      if (txn.meter != nullptr) txn.meter->Merge(sheet.last_snapshot_reads);
      txn.attempt.result.last_snapshot = **sheet.last_snapshot;
      txn.attempt.result.last_snapshot_read = true;
    }
  }
  if (items.empty()) return Status::OK();
  // In key order (sheet, then seq): two nodes' batches meeting on sheets take the rows'
  // index locks in one order. (Deadlocks between nodes' batches were still seen with
  // it, rarely: bench/README "The cluster at speed, second round".)
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const std::string& sheet_a = items[a].at("sheet_id").AsString();
    const std::string& sheet_b = items[b].at("sheet_id").AsString();
    if (sheet_a != sheet_b) return sheet_a < sheet_b;
    return items[a].at("seq").AsInt() < items[b].at("seq").AsInt();
  });
  std::vector<Item> sorted_items;
  std::vector<UnitMeter*> sorted_meters;
  for (size_t i : order) {
    sorted_items.push_back(std::move(items[i]));
    sorted_meters.push_back(meters[i]);
  }
  items = std::move(sorted_items);
  meters = std::move(sorted_meters);

  // Step 3 for all of them: one conditional insert. Should another process have
  // taken one of these seqs meanwhile, the later appends of its sheet followed the
  // wrong head: the transaction is aborted, nothing of it stays, and its runner runs
  // the group again from fresh reads (Transactions::Write).
  Result<std::vector<bool>> written = EntryTable().PutAllIfAbsent(conn, items, meters);
  if (!written.ok() && !written.status().IsConditionFailed()) return written.status();
  if (!written.ok() ||
      !std::all_of(written->begin(), written->end(), [](bool w) { return w; })) {
    // A conflict on the seq index (ConditionFailed) means the same.
    return Aborted("another process appended to a sheet of this batch");
  }
  return Status::OK();
}

void EventLog::FinishAppendGroup(AppendGroup& group, Status status) {
  // A work that never ran (its transaction could not begin) still answers the
  // appends it would have taken.
  if (!group.taken) {
    TakeQueuedAppends(group);
    if (status.ok()) status = Internal("an append's write never ran");
  }
  if (status.ok() && group.appends.size() > 1) {
    const auto written =
        std::count_if(group.appends.begin(), group.appends.end(),
                      [](const auto& queued) { return queued->own.ok(); });
    if (written > 0) {
      append_batches_.fetch_add(1, std::memory_order_relaxed);
      batched_appends_.fetch_add(written, std::memory_order_relaxed);
    }
  }
  for (auto& queued : group.appends) {
    AppendAttempt tried = queued->txn.Finish(queued->own.ok() ? status : queued->own);
    // Another process took head + 1 between the plan and the put (a group's batch
    // aborted by that more often than its runner runs it again): the waiting form
    // backs off and tries again.
    const bool lost_batch = status.IsAborted() && queued->own.ok();
    if (tried.outcome == AppendAttempt::Outcome::kLostRace || lost_batch) {
      int64_t next_seq = -1;
      Result<AppendResult> appended =
          AddEntry(queued->request, queued->txn.meter, &next_seq);
      queued->done(std::move(appended), next_seq);
      continue;
    }
    int64_t next_seq = -1;
    Result<AppendResult> concluded =
        Conclude(queued->request, queued->config, std::move(tried), &next_seq);
    queued->done(std::move(concluded), next_seq);
  }
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
