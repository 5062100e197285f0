#include "emulator/runtime/execution_history.h"

#include <algorithm>
#include <functional>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/runtime/cluster_membership.h"
#include "emulator/table/connection.h"

namespace sheetlog {

namespace {

// Every statement below is written once in SQL both SQLite and PostgreSQL accept
// (Connection::RunSql); the tables are emulator/schema/sqlite/004_history.sql and
// emulator/schema/postgres/004_history.sql.
// The columns ReadRow reads, with the expiry of the row's owner's lease (its lease
// row, `execution_owner`, is ClusterMembership's: read here, judged there).
#define SHEETLOG_HISTORY_COLUMNS                                                 \
  "h.partition_key, h.sequence, h.atomic_counter, h.exec_status, h.created_at, " \
  "h.error, h.source, h.invocation_id, h.detail, h.owner, "                      \
  "(SELECT o.expires_at FROM execution_owner o WHERE o.owner = h.owner)"

constexpr const char* kSelectLatest =
    "SELECT " SHEETLOG_HISTORY_COLUMNS
    " FROM execution_history h WHERE h.partition_key = ?1 "
    "ORDER BY h.sequence DESC LIMIT 1";

constexpr const char* kSelectKey =
    "SELECT " SHEETLOG_HISTORY_COLUMNS
    " FROM execution_history h WHERE h.partition_key = ?1 ORDER BY h.sequence";

// ADD atomic_counter 1: creates the `started` row with 1, or only increments the
// counter of an existing row (which is then someone else's). On PostgreSQL a racing
// insert of the same row waits for the other's commit and then increments, so two
// nodes never both get 1. (The target column is qualified: PostgreSQL finds a bare
// name ambiguous beside `excluded`.)
constexpr const char* kAddStarted =
    "INSERT INTO execution_history (partition_key, sequence, atomic_counter, "
    "exec_status, created_at, source, invocation_id, detail, owner) "
    "VALUES (?1, ?2, 1, 'started', ?3, ?4, ?5, ?6, ?7) "
    "ON CONFLICT (partition_key, sequence) DO UPDATE SET "
    "atomic_counter = execution_history.atomic_counter + 1 RETURNING atomic_counter";

// Appends a row at sequence ?8, or (?8 NULL) at the key's newest sequence + 1, unless
// that row exists by then: 0 rows changed. SQLite's single writer never sees that; on
// PostgreSQL it is another node's row committed meanwhile (the conflicting insert waits
// for its commit, then does nothing).
constexpr const char* kAppend =
    "INSERT INTO execution_history (partition_key, sequence, atomic_counter, "
    "exec_status, created_at, error, source, invocation_id, detail, owner) "
    "SELECT ?1, COALESCE(CAST(?8 AS bigint), MAX(sequence) + 1, 1), 1, ?2, "
    "CAST(?3 AS bigint), ?4, ?5, ?6, ?7, ?9 "
    "FROM execution_history WHERE partition_key = ?1 "
    "ON CONFLICT (partition_key, sequence) DO NOTHING";

// Keys whose latest row has status ?1, that row written in [?2, ?3), oldest first.
constexpr const char* kSelectLatestWithStatus =
    "SELECT " SHEETLOG_HISTORY_COLUMNS
    " FROM execution_history h "
    "WHERE h.exec_status = ?1 AND h.created_at >= ?2 AND h.created_at < ?3 AND "
    "h.sequence = (SELECT MAX(m.sequence) FROM execution_history m "
    "WHERE m.partition_key = h.partition_key) "
    "ORDER BY h.created_at, h.partition_key LIMIT ?4";

// Newest first by (created_at, key, sequence) before the cursor (?1, ?2, ?3); a
// `started` row only while it is its key's latest (once the outcome is written, the
// outcome row stands for both), with the start of the invocation an outcome row ends.
constexpr const char* kSelectInvocations =
    "SELECT " SHEETLOG_HISTORY_COLUMNS
    ", (SELECT s.created_at FROM execution_history s WHERE s.partition_key = "
    "h.partition_key AND s.sequence < h.sequence AND s.exec_status = 'started' "
    "ORDER BY s.sequence DESC LIMIT 1) "
    "FROM execution_history h "
    "WHERE (h.created_at < ?1 OR (h.created_at = ?1 AND (h.partition_key < ?2 OR "
    "(h.partition_key = ?2 AND h.sequence < ?3)))) "
    "AND (?4 = '' OR h.source = ?4) AND (?5 = '' OR h.exec_status = ?5) "
    "AND (h.exec_status <> 'started' OR NOT EXISTS (SELECT 1 FROM "
    "execution_history n WHERE n.partition_key = h.partition_key AND n.sequence "
    "> h.sequence)) "
    "ORDER BY h.created_at DESC, h.partition_key DESC, h.sequence DESC LIMIT ?6";

#undef SHEETLOG_HISTORY_COLUMNS

// How often an append retries after another node took the sequence it computed.
constexpr int kAppendRounds = 64;
// The longest error text kept.
constexpr size_t kMaxErrorBytes = 4096;

Result<ExecutionRow> ReadRow(const SqlRow& r) {
  ExecutionRow row;
  row.partition_key = r.Text(0);
  row.sequence = r.Int(1);
  row.atomic_counter = r.Int(2);
  std::optional<ExecStatus> status = ParseExecStatus(r.Text(3));
  if (!status) return Internal("execution history row has an unknown status");
  row.status = *status;
  row.created_at = r.Int(4);
  row.error = r.Text(5);
  row.source = r.Text(6);
  row.invocation_id = r.Text(7);
  row.detail = r.Text(8);
  row.owner = r.Text(9);
  if (!r.IsNull(10)) row.owner_lease_expires_at = r.Int(10);
  return row;
}

// Runs `sql` and appends every row it returns to `rows`; `each` sees the SqlRow too.
Status SelectRows(Connection& c, const char* sql, const std::vector<Value>& params,
                  std::vector<ExecutionRow>& rows,
                  const std::function<void(const SqlRow&)>& each = nullptr) {
  Status status;
  RETURN_IF_ERROR(c.RunSql(sql, params, [&](const SqlRow& r) {
                     Result<ExecutionRow> row = ReadRow(r);
                     if (!row.ok()) {
                       status = row.status();
                       return false;
                     }
                     rows.push_back(std::move(row).value());
                     if (each) each(r);
                     return true;
                   }).status());
  return status;
}

Result<std::optional<ExecutionRow>> LatestIn(Connection& c, const std::string& key) {
  std::vector<ExecutionRow> rows;
  RETURN_IF_ERROR(SelectRows(c, kSelectLatest, {key}, rows));
  if (rows.empty()) return std::optional<ExecutionRow>();
  return std::optional<ExecutionRow>(std::move(rows.front()));
}

Result<int64_t> AddStartedIn(Connection& c, const BeginRequest& request, int64_t sequence,
                             int64_t now, const std::string& owner) {
  std::optional<int64_t> counter;
  RETURN_IF_ERROR(c.RunSql(kAddStarted,
                           {request.partition_key, sequence, now, request.source,
                            request.invocation_id, request.detail, owner},
                           [&](const SqlRow& r) {
                             counter = r.Int(0);
                             return false;
                           })
                      .status());
  if (!counter) return Internal("atomic counter update returned no row");
  return *counter;
}

// `text` cut to at most `max` bytes without splitting a UTF-8 sequence (PostgreSQL
// refuses text that is not UTF-8).
std::string TruncatedUtf8(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut));
}

// Appends a row for `request`: at `sequence` if given (true if written, false if that
// row exists), else at the key's newest sequence + 1 (always true: a sequence taken
// by another node meanwhile is computed again).
Result<bool> AppendIn(Connection& c, const BeginRequest& request, ExecStatus status,
                      std::string_view error, int64_t now, const std::string& owner,
                      std::optional<int64_t> sequence = std::nullopt) {
  const std::vector<Value> params = {
      request.partition_key,
      std::string(ExecStatusText(status)),
      now,
      error.empty() ? Value::Null() : Value(TruncatedUtf8(error, kMaxErrorBytes)),
      request.source,
      request.invocation_id,
      request.detail,
      sequence ? Value(*sequence) : Value::Null(),
      owner};
  for (int round = 0; round < kAppendRounds; ++round) {
    ASSIGN_OR_RETURN(int64_t written, c.RunSql(kAppend, params));
    if (written == 1) return true;
    if (sequence) return false;
  }
  return Aborted("appending to the execution history of " + request.partition_key +
                 ": other writers took the next sequence " +
                 std::to_string(kAppendRounds) + " times in a row");
}

// The indexes of `items` in the order of their keys (`key_of`), equal keys in input
// order.
template <typename T, typename KeyOf>
std::vector<size_t> KeyOrder(const std::vector<T>& items, KeyOf key_of) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return key_of(items[a]) < key_of(items[b]);
  });
  return order;
}

Status CheckTerminal(ExecStatus status) {
  if (status == ExecStatus::kStarted) {
    return InvalidArgument("an outcome row must be succeeded, failed or deferred");
  }
  return Status::OK();
}

}  // namespace

std::string_view ExecStatusText(ExecStatus status) {
  switch (status) {
    case ExecStatus::kStarted:
      return "started";
    case ExecStatus::kSucceeded:
      return "succeeded";
    case ExecStatus::kFailed:
      return "failed";
    case ExecStatus::kDeferred:
      return "deferred";
  }
  return "started";
}

std::optional<ExecStatus> ParseExecStatus(std::string_view text) {
  if (text == "started") return ExecStatus::kStarted;
  if (text == "succeeded") return ExecStatus::kSucceeded;
  if (text == "failed") return ExecStatus::kFailed;
  if (text == "deferred") return ExecStatus::kDeferred;
  return std::nullopt;
}

std::string_view BeginOutcomeText(BeginOutcome outcome) {
  switch (outcome) {
    case BeginOutcome::kProceed:
      return "proceed";
    case BeginOutcome::kAlreadySucceeded:
      return "already succeeded";
    case BeginOutcome::kRunningElsewhere:
      return "running elsewhere";
    case BeginOutcome::kLostRace:
      return "lost race";
  }
  return "proceed";
}

void LiveInvocations::Add(const std::string& invocation_id) {
  MutexLock lock(&mu_);
  ids_.insert(invocation_id);
}

void LiveInvocations::Remove(const std::string& invocation_id) {
  MutexLock lock(&mu_);
  auto it = ids_.find(invocation_id);
  if (it != ids_.end()) ids_.erase(it);
}

bool LiveInvocations::Contains(const std::string& invocation_id) const {
  MutexLock lock(&mu_);
  return ids_.count(invocation_id) > 0;
}

size_t LiveInvocations::size() const {
  MutexLock lock(&mu_);
  return ids_.size();
}

LiveInvocation::LiveInvocation(LiveInvocations* set, std::string invocation_id)
    : set_(set), id_(std::move(invocation_id)) {
  if (set_ != nullptr) set_->Add(id_);
}

LiveInvocation::~LiveInvocation() {
  if (set_ != nullptr) set_->Remove(id_);
}

ExecutionHistory::ExecutionHistory(Transactions* db, Clock* clock, FaultInjector* faults,
                                   const ClusterMembership* membership)
    : db_(db), clock_(clock), faults_(faults), membership_(membership) {}

std::string ExecutionHistory::owner() const {
  return membership_ != nullptr ? membership_->owner() : std::string();
}

bool ExecutionHistory::IsAbandoned(const ExecutionRow& row, int64_t time_budget_micros,
                                   int64_t now_micros) const {
  if (row.status != ExecStatus::kStarted) return false;
  if (now_micros - row.created_at >= time_budget_micros) return true;
  const std::string owner = this->owner();
  if (!owner.empty() && !row.owner.empty() && row.owner != owner) {
    // Another node's: running while its lease lasts (owner() is non-empty only with
    // a membership). The expiry is on the lease clock (the database's on PostgreSQL),
    // `now_micros` on this node's: translated by the skew the membership measured, so a
    // node whose clock runs ahead does not find a live node's work abandoned.
    return !membership_->IsLeaseLive(row.owner_lease_expires_at,
                                     membership_->ToLeaseClock(now_micros));
  }
  // This process's, or written without an owner (before leases, or before this
  // process took its own): running while its invocation is live here.
  return live_ != nullptr && !live_->Contains(row.invocation_id);
}

Result<Claim> ExecutionHistory::Begin(const BeginRequest& request,
                                      int64_t time_budget_micros) {
  ASSIGN_OR_RETURN(std::vector<Claim> claims, BeginBatch({request}, time_budget_micros));
  return std::move(claims.front());
}

Result<std::vector<Claim>> ExecutionHistory::BeginBatch(
    const std::vector<BeginRequest>& requests, int64_t time_budget_micros) {
  std::vector<Claim> claims(requests.size());
  if (requests.empty()) return claims;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].partition_key.empty()) {
      return InvalidArgument("execution history needs a partition key");
    }
    claims[i].request = requests[i];
  }

  // Step 1: the newest row of every key (eventually consistent, as the seed's Query).
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    for (Claim& claim : claims) {
      ASSIGN_OR_RETURN(claim.latest, LatestIn(conn, claim.request.partition_key));
    }
    return Status::OK();
  }));

  // Step 2: duplicates of finished or running work stop here.
  const int64_t now = clock_->NowMicros();
  const std::string owner = this->owner();
  bool any_to_claim = false;
  for (Claim& claim : claims) {
    claim.outcome = BeginOutcome::kProceed;
    claim.sequence = claim.latest ? claim.latest->sequence + 1 : 1;
    if (claim.latest) {
      if (claim.latest->status == ExecStatus::kSucceeded) {
        claim.outcome = BeginOutcome::kAlreadySucceeded;
      } else if (claim.latest->status == ExecStatus::kStarted &&
                 !IsAbandoned(*claim.latest, time_budget_micros, now)) {
        claim.outcome = BeginOutcome::kRunningElsewhere;
      }
    }
    if (claim.outcome == BeginOutcome::kProceed) any_to_claim = true;
  }
  if (!any_to_claim) return claims;
  if (faults_ != nullptr)
    RETURN_IF_ERROR(faults_->Hit(FaultPoint::kHistoryAfterReadBeforeClaim));

  // Step 3: ADD 1; only whoever gets 1 back proceeds.
  // In key order: on PostgreSQL each row stays locked until the commit, and two nodes
  // claiming overlapping keys in one order never wait for each other in a cycle.
  const std::vector<size_t> order = KeyOrder(claims, [](const Claim& claim) {
    return std::string_view(claim.request.partition_key);
  });
  RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
    // A run aborted by concurrency is rolled back and run again: decide afresh.
    for (Claim& claim : claims) {
      if (claim.outcome == BeginOutcome::kLostRace) {
        claim.outcome = BeginOutcome::kProceed;
      }
    }
    for (size_t i : order) {
      Claim& claim = claims[i];
      if (claim.outcome != BeginOutcome::kProceed) continue;
      ASSIGN_OR_RETURN(int64_t counter,
                       AddStartedIn(conn, claim.request, claim.sequence, now, owner));
      if (counter != 1) claim.outcome = BeginOutcome::kLostRace;
    }
    return Status::OK();
  }));
  return claims;
}

Status ExecutionHistory::Finish(const Claim& claim, ExecStatus status,
                                std::string_view error) {
  return FinishBatch({Outcome{&claim, status, std::string(error)}});
}

Status ExecutionHistory::FinishBatch(const std::vector<Outcome>& outcomes) {
  for (const Outcome& o : outcomes) {
    RETURN_IF_ERROR(CheckTerminal(o.status));
    if (o.claim->outcome != BeginOutcome::kProceed) {
      return InvalidArgument("finishing a claim that did not proceed (" +
                             std::string(BeginOutcomeText(o.claim->outcome)) + ")");
    }
  }
  if (outcomes.empty()) return Status::OK();
  if (faults_ != nullptr) RETURN_IF_ERROR(faults_->Hit(FaultPoint::kHistoryFinish));
  const int64_t now = clock_->NowMicros();
  const std::string owner = this->owner();
  const std::vector<size_t> order = KeyOrder(outcomes, [](const Outcome& o) {
    return std::string_view(o.claim->request.partition_key);
  });  // as BeginBatch's, for the same reason
  return db_->Write([&](Connection& conn) -> Status {
    for (size_t i : order) {
      const Outcome& o = outcomes[i];
      RETURN_IF_ERROR(
          AppendIn(conn, o.claim->request, o.status, o.error, now, owner).status());
    }
    return Status::OK();
  });
}

Status ExecutionHistory::Record(const BeginRequest& request, ExecStatus status,
                                std::string_view error) {
  RETURN_IF_ERROR(CheckTerminal(status));
  if (request.partition_key.empty()) {
    return InvalidArgument("execution history needs a partition key");
  }
  const int64_t now = clock_->NowMicros();
  const std::string owner = this->owner();
  return db_->Write([&](Connection& conn) {
    return AppendIn(conn, request, status, error, now, owner).status();
  });
}

Result<bool> ExecutionHistory::RecordIfLatest(const ExecutionRow& row, ExecStatus status,
                                              std::string_view error) {
  RETURN_IF_ERROR(CheckTerminal(status));
  if (row.partition_key.empty()) {
    return InvalidArgument("execution history needs a partition key");
  }
  const BeginRequest request{row.partition_key, row.source, row.invocation_id,
                             row.detail};
  const int64_t now = clock_->NowMicros();
  const std::string owner = this->owner();
  bool written = false;
  RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
    written = false;
    ASSIGN_OR_RETURN(std::optional<ExecutionRow> latest,
                     LatestIn(conn, row.partition_key));
    if (!latest || latest->sequence != row.sequence) return Status::OK();
    // At exactly the next sequence: another node's row written since the read above
    // takes it first, and nothing is written.
    ASSIGN_OR_RETURN(
        written, AppendIn(conn, request, status, error, now, owner, row.sequence + 1));
    return Status::OK();
  }));
  return written;
}

Result<std::optional<ExecutionRow>> ExecutionHistory::Latest(
    const std::string& partition_key) {
  std::optional<ExecutionRow> latest;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(latest, LatestIn(conn, partition_key));
    return Status::OK();
  }));
  return latest;
}

Result<int64_t> ExecutionHistory::AddStarted(const BeginRequest& request,
                                             int64_t sequence) {
  if (request.partition_key.empty()) {
    return InvalidArgument("execution history needs a partition key");
  }
  const int64_t now = clock_->NowMicros();
  const std::string owner = this->owner();
  int64_t counter = 0;
  RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(counter, AddStartedIn(conn, request, sequence, now, owner));
    return Status::OK();
  }));
  return counter;
}

Result<std::vector<ExecutionRow>> ExecutionHistory::List(
    const std::string& partition_key) {
  std::vector<ExecutionRow> rows;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    rows.clear();
    return SelectRows(conn, kSelectKey, {partition_key}, rows);
  }));
  return rows;
}

Result<std::vector<ExecutionRow>> ExecutionHistory::ListFailed(int64_t since_micros,
                                                               int64_t until_micros,
                                                               int limit) {
  return ListLatestWithStatus(ExecStatus::kFailed, since_micros, until_micros, limit);
}

Result<std::vector<ExecutionRow>> ExecutionHistory::ListAbandoned(
    int64_t since_micros, int64_t until_micros, int64_t time_budget_micros, int limit) {
  if (limit < 1 || limit > 10000) return InvalidArgument("limit must be in 1..10000");
  // Rows of invocations still running are skipped, so read past them in pages.
  std::vector<ExecutionRow> abandoned;
  const int64_t now = clock_->NowMicros();
  int64_t since = since_micros;
  while (abandoned.size() < static_cast<size_t>(limit)) {
    ASSIGN_OR_RETURN(
        std::vector<ExecutionRow> started,
        ListLatestWithStatus(ExecStatus::kStarted, since, until_micros, 10000));
    for (ExecutionRow& row : started) {
      if (abandoned.size() == static_cast<size_t>(limit)) break;
      if (IsAbandoned(row, time_budget_micros, now)) abandoned.push_back(std::move(row));
    }
    if (started.size() < 10000) break;
    since = started.back().created_at + 1;
  }
  return abandoned;
}

Result<std::vector<ExecutionRow>> ExecutionHistory::ListLatestWithStatus(
    ExecStatus status, int64_t since_micros, int64_t until_micros, int limit) {
  if (limit < 1 || limit > 10000) return InvalidArgument("limit must be in 1..10000");
  std::vector<ExecutionRow> rows;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    rows.clear();
    return SelectRows(
        conn, kSelectLatestWithStatus,
        {std::string(ExecStatusText(status)), since_micros, until_micros, limit}, rows);
  }));
  return rows;
}

Result<std::vector<Invocation>> ExecutionHistory::ListInvocations(
    const InvocationQuery& query) {
  if (query.limit < 1 || query.limit > 1000) {
    return InvalidArgument("limit must be in 1..1000");
  }
  std::vector<Invocation> out;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    out.clear();
    std::vector<ExecutionRow> rows;
    std::vector<std::optional<int64_t>> starts;
    RETURN_IF_ERROR(SelectRows(
        conn, kSelectInvocations,
        {query.before_micros, query.before_key, query.before_sequence, query.source,
         query.status ? std::string(ExecStatusText(*query.status)) : std::string(),
         query.limit},
        rows, [&](const SqlRow& r) {
          starts.push_back(r.IsNull(11) ? std::nullopt
                                        : std::optional<int64_t>(r.Int(11)));
        }));
    for (size_t i = 0; i < rows.size(); ++i) {
      out.push_back(Invocation{std::move(rows[i]), starts[i]});
    }
    return Status::OK();
  }));
  return out;
}

Result<int64_t> ExecutionHistory::DeleteAll(Connection& conn) {
  return conn.RunSql("DELETE FROM execution_history", {});
}

Result<int64_t> ExecutionHistory::DeleteBefore(int64_t before_micros) {
  int64_t deleted = 0;
  RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(deleted, conn.RunSql("DELETE FROM execution_history "
                                          "WHERE created_at < ?1",
                                          {before_micros}));
    return Status::OK();
  }));
  return deleted;
}

}  // namespace sheetlog
