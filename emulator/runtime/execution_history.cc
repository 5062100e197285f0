#include "emulator/runtime/execution_history.h"

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"

namespace sheetlog {

namespace {

constexpr const char* kColumns =
    "partition_key, sequence, atomic_counter, exec_status, created_at, error, source, "
    "invocation_id, detail";

Result<ExecutionRow> ReadRow(const Statement& stmt) {
  ExecutionRow row;
  row.partition_key = stmt.ColumnText(0);
  row.sequence = stmt.ColumnInt(1);
  row.atomic_counter = stmt.ColumnInt(2);
  std::optional<ExecStatus> status = ParseExecStatus(stmt.ColumnView(3));
  if (!status) return Internal("execution history row has an unknown status");
  row.status = *status;
  row.created_at = stmt.ColumnInt(4);
  row.error = stmt.ColumnText(5);
  row.source = stmt.ColumnText(6);
  row.invocation_id = stmt.ColumnText(7);
  row.detail = stmt.ColumnText(8);
  return row;
}

Result<std::optional<ExecutionRow>> LatestIn(SqliteConnection& conn,
                                             const std::string& key) {
  ASSIGN_OR_RETURN(Statement stmt,
                   conn.Prepare(std::string("SELECT ") + kColumns +
                                " FROM execution_history WHERE partition_key = ? "
                                "ORDER BY sequence DESC LIMIT 1"));
  stmt.Bind(1, key);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<ExecutionRow>();
  ASSIGN_OR_RETURN(ExecutionRow latest, ReadRow(stmt));
  return std::optional<ExecutionRow>(std::move(latest));
}

Result<int64_t> AddStartedIn(SqliteConnection& conn, const BeginRequest& request,
                             int64_t sequence, int64_t now) {
  // ADD atomic_counter 1: creates the `started` row with 1, or only increments the
  // counter of an existing row (which is then someone else's).
  ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare(
          "INSERT INTO execution_history (partition_key, sequence, atomic_counter, "
          "exec_status, created_at, source, invocation_id, detail) "
          "VALUES (?, ?, 1, 'started', ?, ?, ?, ?) "
          "ON CONFLICT (partition_key, sequence) DO UPDATE SET "
          "atomic_counter = atomic_counter + 1 RETURNING atomic_counter"));
  stmt.Bind(1, request.partition_key)
      .Bind(2, sequence)
      .Bind(3, now)
      .Bind(4, request.source)
      .Bind(5, request.invocation_id)
      .Bind(6, request.detail);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Internal("atomic counter update returned no row");
  int64_t counter = stmt.ColumnInt(0);
  RETURN_IF_ERROR(stmt.Run());
  return counter;
}

// Appends a row at the key's newest sequence + 1.
Status AppendIn(SqliteConnection& conn, const BeginRequest& request, ExecStatus status,
                std::string_view error, int64_t now) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare(
          "INSERT INTO execution_history (partition_key, sequence, atomic_counter, "
          "exec_status, created_at, error, source, invocation_id, detail) "
          "SELECT ?1, COALESCE(MAX(sequence), 0) + 1, 1, ?2, ?3, ?4, ?5, ?6, ?7 "
          "FROM execution_history WHERE partition_key = ?1"));
  stmt.Bind(1, request.partition_key)
      .Bind(2, ExecStatusText(status))
      .Bind(3, now)
      .Bind(5, request.source)
      .Bind(6, request.invocation_id)
      .Bind(7, request.detail);
  if (error.empty()) {
    stmt.BindNull(4);
  } else {
    stmt.Bind(4, error.substr(0, 4096));
  }
  return stmt.Run();
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

ExecutionHistory::ExecutionHistory(Database* db, Clock* clock, FaultInjector* faults)
    : db_(db), clock_(clock), faults_(faults) {}

bool ExecutionHistory::IsAbandoned(const ExecutionRow& row, int64_t time_budget_micros,
                                   int64_t now_micros) const {
  if (row.status != ExecStatus::kStarted) return false;
  if (now_micros - row.created_at >= time_budget_micros) return true;
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
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) -> Status {
    for (Claim& claim : claims) {
      ASSIGN_OR_RETURN(claim.latest, LatestIn(conn, claim.request.partition_key));
    }
    return Status::OK();
  }));

  // Step 2: duplicates of finished or running work stop here.
  const int64_t now = clock_->NowMicros();
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
  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& conn) -> Status {
    for (Claim& claim : claims) {
      if (claim.outcome != BeginOutcome::kProceed) continue;
      ASSIGN_OR_RETURN(int64_t counter,
                       AddStartedIn(conn, claim.request, claim.sequence, now));
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
  return db_->Write([&](SqliteConnection& conn) -> Status {
    for (const Outcome& o : outcomes) {
      RETURN_IF_ERROR(AppendIn(conn, o.claim->request, o.status, o.error, now));
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
  return db_->Write([&](SqliteConnection& conn) {
    return AppendIn(conn, request, status, error, now);
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
  bool written = false;
  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& conn) -> Status {
    written = false;
    ASSIGN_OR_RETURN(std::optional<ExecutionRow> latest,
                     LatestIn(conn, row.partition_key));
    if (!latest || latest->sequence != row.sequence) return Status::OK();
    RETURN_IF_ERROR(AppendIn(conn, request, status, error, now));
    written = true;
    return Status::OK();
  }));
  return written;
}

Result<std::optional<ExecutionRow>> ExecutionHistory::Latest(
    const std::string& partition_key) {
  std::optional<ExecutionRow> latest;
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) -> Status {
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
  int64_t counter = 0;
  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(counter, AddStartedIn(conn, request, sequence, now));
    return Status::OK();
  }));
  return counter;
}

Result<std::vector<ExecutionRow>> ExecutionHistory::List(
    const std::string& partition_key) {
  std::vector<ExecutionRow> rows;
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(Statement stmt,
                     conn.Prepare(std::string("SELECT ") + kColumns +
                                  " FROM execution_history WHERE partition_key = ? "
                                  "ORDER BY sequence"));
    stmt.Bind(1, partition_key);
    while (true) {
      ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      ASSIGN_OR_RETURN(ExecutionRow r, ReadRow(stmt));
      rows.push_back(std::move(r));
    }
    return Status::OK();
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
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(
        Statement stmt,
        conn.Prepare(
            "SELECT h.partition_key, h.sequence, h.atomic_counter, h.exec_status, "
            "h.created_at, h.error, h.source, h.invocation_id, h.detail "
            "FROM execution_history h "
            "WHERE h.exec_status = ? AND h.created_at >= ? AND "
            "h.created_at < ? AND h.sequence = (SELECT MAX(m.sequence) FROM "
            "execution_history m WHERE m.partition_key = h.partition_key) "
            "ORDER BY h.created_at, h.partition_key LIMIT ?"));
    stmt.Bind(1, ExecStatusText(status))
        .Bind(2, since_micros)
        .Bind(3, until_micros)
        .Bind(4, limit);
    while (true) {
      ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      ASSIGN_OR_RETURN(ExecutionRow r, ReadRow(stmt));
      rows.push_back(std::move(r));
    }
    return Status::OK();
  }));
  return rows;
}

Result<std::vector<Invocation>> ExecutionHistory::ListInvocations(
    const InvocationQuery& query) {
  if (query.limit < 1 || query.limit > 1000) {
    return InvalidArgument("limit must be in 1..1000");
  }
  std::vector<Invocation> out;
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) -> Status {
    out.clear();
    // Newest first by (created_at, key, sequence); a `started` row only while it is
    // its key's latest (once the outcome is written, the outcome row stands for both).
    ASSIGN_OR_RETURN(
        Statement stmt,
        conn.Prepare(
            "SELECT h.partition_key, h.sequence, h.atomic_counter, h.exec_status, "
            "h.created_at, h.error, h.source, h.invocation_id, h.detail, "
            "(SELECT s.created_at FROM execution_history s WHERE s.partition_key = "
            "h.partition_key AND s.sequence < h.sequence AND s.exec_status = 'started' "
            "ORDER BY s.sequence DESC LIMIT 1) "
            "FROM execution_history h "
            "WHERE (h.created_at < ?1 OR (h.created_at = ?1 AND (h.partition_key < ?2 OR "
            "(h.partition_key = ?2 AND h.sequence < ?3)))) "
            "AND (?4 = '' OR h.source = ?4) AND (?5 = '' OR h.exec_status = ?5) "
            "AND (h.exec_status != 'started' OR NOT EXISTS (SELECT 1 FROM "
            "execution_history n WHERE n.partition_key = h.partition_key AND n.sequence "
            "> h.sequence)) "
            "ORDER BY h.created_at DESC, h.partition_key DESC, h.sequence DESC LIMIT "
            "?6"));
    stmt.Bind(1, query.before_micros)
        .Bind(2, query.before_key)
        .Bind(3, query.before_sequence)
        .Bind(4, query.source)
        .Bind(5,
              query.status ? std::string(ExecStatusText(*query.status)) : std::string())
        .Bind(6, query.limit);
    while (true) {
      ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return Status::OK();
      Invocation invocation;
      ASSIGN_OR_RETURN(invocation.row, ReadRow(stmt));
      if (!stmt.IsNull(9)) invocation.started_micros = stmt.ColumnInt(9);
      out.push_back(std::move(invocation));
    }
  }));
  return out;
}

Result<int64_t> ExecutionHistory::DeleteBefore(int64_t before_micros) {
  int64_t deleted = 0;
  RETURN_IF_ERROR(db_->Write([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(Statement stmt,
                     conn.Prepare("DELETE FROM execution_history WHERE created_at < ?"));
    RETURN_IF_ERROR(stmt.Bind(1, before_micros).Run());
    deleted = conn.Changes();
    return Status::OK();
  }));
  return deleted;
}

}  // namespace sheetlog
