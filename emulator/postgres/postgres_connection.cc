// PostgresConnection: libpq, statements, results and errors.
#include "emulator/postgres/postgres_connection.h"

#include <libpq-fe.h>
#include <poll.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "emulator/table/sql_params.h"

namespace sheetlog {

namespace {

// Type OIDs (PostgreSQL's catalog/pg_type.dat; stable across releases).
constexpr Oid kBoolOid = 16;
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kOidOid = 26;
constexpr Oid kFloat4Oid = 700;
constexpr Oid kFloat8Oid = 701;
constexpr Oid kNumericOid = 1700;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// libpq's messages end in a newline; ours do not.
std::string Trimmed(const char* message) {
  std::string out = message == nullptr ? "" : message;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The parameters of one statement in libpq's arrays. Text values point into the
// Values themselves (std::string keeps a terminating NUL) or into `text_`.
class Params {
 public:
  Status Encode(const SqlParams& in) {
    const size_t n = in.size();
    text_.resize(n);
    values_.assign(n, nullptr);
    lengths_.assign(n, 0);
    formats_.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const Value& v = in[i];
      switch (v.type()) {
        case Value::Type::kNull:
          break;
        case Value::Type::kInt:
        case Value::Type::kBool:
          text_[i] = std::to_string(v.AsInt());
          values_[i] = text_[i].c_str();
          break;
        case Value::Type::kDouble: {
          char buffer[64];
          auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), v.AsDouble());
          if (ec != std::errc()) return Internal("formatting a double for PostgreSQL");
          text_[i].assign(buffer, end);
          values_[i] = text_[i].c_str();
          break;
        }
        case Value::Type::kString:
          if (v.AsString().find('\0') != std::string::npos) {
            return InvalidArgument(
                "PostgreSQL text cannot hold a NUL byte (store bytes as a binary value)");
          }
          values_[i] = v.AsString().c_str();
          break;
        case Value::Type::kBytes:
          values_[i] = v.AsString().data();
          lengths_[i] = static_cast<int>(v.AsString().size());
          formats_[i] = 1;  // binary: bytea's bytes as they are
          break;
      }
    }
    return Status::OK();
  }
  int count() const { return static_cast<int>(values_.size()); }
  const char* const* values() const { return values_.data(); }
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return formats_.data(); }

 private:
  std::vector<std::string> text_;
  std::vector<const char*> values_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
};

// A row of RunSql's result (in single-row mode: row 0 of its own result), typed by the
// column's type.
class PostgresResultRow final : public SqlRow {
 public:
  explicit PostgresResultRow(const pg_result* result) : result_(result) {}

  int columns() const override { return PQnfields(result_); }

  SqlType Type(int col) const override {
    if (PQgetisnull(result_, 0, col) != 0) return SqlType::kNull;
    switch (PQftype(result_, col)) {
      case kInt2Oid:
      case kInt4Oid:
      case kInt8Oid:
      case kOidOid:
      case kBoolOid:  // read back as an integer on every backend (table.h)
        return SqlType::kInt;
      case kFloat4Oid:
      case kFloat8Oid:
      case kNumericOid:
        return SqlType::kDouble;
      case kByteaOid:
        return SqlType::kBytes;
      default:
        return SqlType::kText;
    }
  }

  int64_t Int(int col) const override {
    switch (Type(col)) {
      case SqlType::kNull:
        return 0;
      case SqlType::kDouble:  // e.g. sum() of bigint, which is numeric: truncated
        return static_cast<int64_t>(Double(col));
      default:
        break;
    }
    std::string_view text = Raw(col);
    if (PQftype(result_, col) == kBoolOid) return text == "t" ? 1 : 0;
    int64_t v = 0;
    std::from_chars(text.data(), text.data() + text.size(), v);
    return v;
  }

  double Double(int col) const override {
    switch (Type(col)) {
      case SqlType::kNull:
        return 0;
      case SqlType::kInt:
        return static_cast<double>(Int(col));
      default:
        // strtod takes NaN and Infinity as PostgreSQL spells them.
        return std::strtod(std::string(Raw(col)).c_str(), nullptr);
    }
  }

  std::string Text(int col) const override {
    std::string_view text = Raw(col);
    if (PQftype(result_, col) != kByteaOid || PQgetisnull(result_, 0, col) != 0) {
      return std::string(text);
    }
    // Text output of bytea: "\x" then two hex digits per byte (bytea_output = hex,
    // set for every connection).
    std::string bytes;
    if (text.size() >= 2 && text[0] == '\\' && text[1] == 'x') {
      bytes.reserve((text.size() - 2) / 2);
      for (size_t i = 2; i + 1 < text.size(); i += 2) {
        bytes.push_back(
            static_cast<char>(HexDigit(text[i]) * 16 + HexDigit(text[i + 1])));
      }
    }
    return bytes;
  }

 private:
  // The column's text as the server sent it ("" if NULL).
  std::string_view Raw(int col) const {
    return std::string_view(PQgetvalue(result_, 0, col),
                            static_cast<size_t>(PQgetlength(result_, 0, col)));
  }

  const pg_result* result_;
};

// Unavailable: "the PostgreSQL table store <what>" for the client; where the database
// is (`where`: DescribePostgresConninfo's host, port, database and user) and what
// libpq or the server said (`why`), which may name a socket path, only in the detail,
// for the operator (Status::detail).
Status StoreUnavailable(const std::string& what, const std::string& where,
                        const std::string& why) {
  return Unavailable("the PostgreSQL table store " + what)
      .WithDetail("the PostgreSQL database at " + where + ": " + why);
}

}  // namespace

// ---------------------------------------------------------------------------
// Connection strings

Result<std::string> DescribePostgresConninfo(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (options == nullptr) {
    std::string why = Trimmed(error);
    PQfreemem(error);
    return InvalidArgument("the PostgreSQL connection string does not parse: " + why);
  }
  std::string where;
  bool has_password = false;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val == nullptr || *o->val == '\0') continue;
    std::string_view keyword = o->keyword;
    if (keyword == "password") has_password = true;
    if (keyword == "host" || keyword == "hostaddr" || keyword == "port" ||
        keyword == "dbname" || keyword == "user") {
      if (!where.empty()) where += " ";
      where += std::string(keyword) + "=" + o->val;
    }
  }
  PQconninfoFree(options);
  if (has_password) {
    return InvalidArgument(
        "the PostgreSQL connection string holds a password, which would show in `ps` "
        "and logs: give it in PGPASSWORD or a password file (PGPASSFILE, ~/.pgpass)");
  }
  return where.empty() ? std::string("(libpq defaults)") : where;
}

// ---------------------------------------------------------------------------
// PostgresConnection

Result<std::unique_ptr<PostgresConnection>> PostgresConnection::Open(
    const std::string& conninfo, int connect_timeout_seconds) {
  ASSIGN_OR_RETURN(std::string where, DescribePostgresConninfo(conninfo));
  // expand_dbname: `dbname` carries the whole connection string (or URI). Keywords
  // apply in order, the last one winning, so the caller's string (last) overrides
  // these defaults.
  const std::string timeout = std::to_string(connect_timeout_seconds);
  const char* keywords[] = {"connect_timeout", "fallback_application_name", "dbname",
                            nullptr};
  const char* values[] = {timeout.c_str(), "sheetlog", conninfo.c_str(), nullptr};
  pg_conn* raw = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (raw == nullptr) return ResourceExhausted("libpq could not allocate a connection");
  if (PQstatus(raw) != CONNECTION_OK) {
    std::string why = Trimmed(PQerrorMessage(raw));
    PQfinish(raw);
    return StoreUnavailable("is unreachable", where, why);
  }
  std::unique_ptr<PostgresConnection> conn(new PostgresConnection(raw, where));
  // Every session the same: UTF-8 text, bytea as hex (PostgresResultRow::Text), and no
  // NOTICEs (libpq would print them on stderr: "relation ... already exists, skipping").
  RETURN_IF_ERROR(
      conn->Exec("SET client_encoding = 'UTF8'; SET bytea_output = 'hex';"
                 " SET client_min_messages = 'warning'"));
  return conn;
}

PostgresConnection::~PostgresConnection() { PQfinish(conn_); }

bool PostgresConnection::usable() const { return PQstatus(conn_) == CONNECTION_OK; }

int PostgresConnection::backend_pid() const { return PQbackendPID(conn_); }

const char* RemoteChangePayload(RemoteChange kind) {
  switch (kind) {
    case RemoteChange::kChangeFeed:
      return "feed";
    case RemoteChange::kQueue:
      return "queue";
  }
  return "";
}

void PostgresConnection::WakeOtherProcessesAtCommit(RemoteChange kind) {
  for (RemoteChange asked : wake_at_commit_) {
    if (asked == kind) return;
  }
  wake_at_commit_.push_back(kind);
}

std::vector<RemoteChange> PostgresConnection::TakeWakesAtCommit() {
  std::vector<RemoteChange> wakes;
  wakes.swap(wake_at_commit_);
  return wakes;
}

Result<std::vector<PostgresNotification>> PostgresConnection::AwaitNotifications(
    int wake_fd) {
  std::vector<PostgresNotification> received;
  auto take = [&] {
    while (pgNotify* n = PQnotifies(conn_)) {
      received.push_back({n->be_pid, n->extra != nullptr ? n->extra : ""});
      PQfreemem(n);
    }
  };
  if (PQconsumeInput(conn_) == 0) return ErrorStatus(nullptr);
  take();
  if (!received.empty()) return received;
  pollfd fds[2] = {{PQsocket(conn_), POLLIN, 0}, {wake_fd, POLLIN, 0}};
  if (poll(fds, 2, -1) < 0 || fds[1].revents != 0) return received;
  if (PQconsumeInput(conn_) == 0 || !usable()) return ErrorStatus(nullptr);
  take();
  return received;
}

Status PostgresConnection::EndedByEarlierError() const {
  // The first error's code: a refused statement (InvalidArgument...) stays refused,
  // and only a transaction aborted by concurrency is Aborted (worth running again).
  return failed_.Annotate("the transaction was ended by an earlier error");
}

Status PostgresConnection::ErrorStatus(const pg_result* result) const {
  const char* state =
      result == nullptr ? nullptr : PQresultErrorField(result, PG_DIAG_SQLSTATE);
  std::string message =
      Trimmed(result == nullptr ? PQerrorMessage(conn_) : PQresultErrorMessage(result));
  if (state == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    return StoreUnavailable("is unreachable", where_, message);
  }
  const std::string_view code = state;
  const std::string_view group = code.substr(0, 2);
  if (code == "23505") return ConditionFailed(message);  // unique_violation
  if (group == "23" || group == "22") return InvalidArgument(message);
  if (code == "40001" || code == "40P01") return Aborted(message);
  if (group == "08" || code == "57P01" || code == "57P02" || code == "57P03" ||
      code == "53300") {
    return StoreUnavailable("is unavailable", where_, message);
  }
  if (code == "57014") return StoreUnavailable("did not answer in time", where_, message);
  if (code == "53100") return InsufficientStorage(message);  // disk_full
  return Internal(message + " (SQLSTATE " + std::string(code) + ")");
}

Status PostgresConnection::Exec(const std::string& sql) {
  pg_result* result = PQexec(conn_, sql.c_str());
  ExecStatusType status = result == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(result);
  Status out;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) out = ErrorStatus(result);
  PQclear(result);
  return out;
}

Result<int64_t> PostgresConnection::RunSql(
    std::string_view sql, const SqlParams& params,
    const std::function<bool(const SqlRow&)>& row) {
  if (!failed_.ok()) {
    return EndedByEarlierError();
  }
  Params encoded;
  RETURN_IF_ERROR(encoded.Encode(params));  // refused before reaching the server
  auto prepared = prepared_.find(sql);
  if (prepared == prepared_.end()) {
    // First use of this text on this connection: PostgreSQL's placeholders, prepared
    // once and kept under the shared text.
    ASSIGN_OR_RETURN(std::string postgres_sql,
                     TranslateSqlParams(sql, SqlDialect::kPostgres));
    // Not "s" + to_string: GCC 12 at -O3 reports a false -Warray-bounds there.
    std::string name = std::to_string(prepared_.size() + 1);
    name.insert(name.begin(), 's');
    pg_result* result = PQprepare(conn_, name.c_str(), postgres_sql.c_str(),
                                  encoded.count(), /*paramTypes=*/nullptr);
    Status status;
    if (result == nullptr || PQresultStatus(result) != PGRES_COMMAND_OK) {
      status = ErrorStatus(result);
    }
    PQclear(result);
    if (!status.ok()) {
      if (PQtransactionStatus(conn_) == PQTRANS_INERROR) failed_ = status;
      return status;
    }
    prepared = prepared_.emplace(std::string(sql), std::move(name)).first;
  }
  if (PQsendQueryPrepared(conn_, prepared->second.c_str(), encoded.count(),
                          encoded.values(), encoded.lengths(), encoded.formats(),
                          /*resultFormat=*/0) == 0) {
    return ErrorStatus(nullptr);
  }
  // Rows one at a time: a page cut short (1 MB, a limit) holds no more than a row in
  // memory; the rest is read and dropped.
  if (row) PQsetSingleRowMode(conn_);
  bool wanted = static_cast<bool>(row);
  int64_t affected = 0;
  std::string command;  // the command tag: "INSERT 0 1", "SELECT 3", ...
  Status status;
  while (pg_result* result = PQgetResult(conn_)) {
    switch (PQresultStatus(result)) {
      case PGRES_SINGLE_TUPLE:
        ++affected;
        if (wanted && status.ok()) wanted = row(PostgresResultRow(result));
        break;
      case PGRES_TUPLES_OK:
      case PGRES_COMMAND_OK: {
        const char* tuples = PQcmdTuples(result);
        if (tuples != nullptr && *tuples != '\0') affected = std::atoll(tuples);
        command = PQcmdStatus(result);
        break;
      }
      default:
        if (status.ok()) status = ErrorStatus(result);
        break;
    }
    PQclear(result);
  }
  if (!status.ok()) {
    if (PQtransactionStatus(conn_) == PQTRANS_INERROR) failed_ = status;
    return status;
  }
  if (MayHaveWritten(sql, command, affected)) ++possible_writes_;
  return affected;
}

bool PostgresConnection::MayHaveWritten(std::string_view sql, std::string_view command,
                                        int64_t affected) {
  // A data-modifying WITH answers with its last statement's tag (often SELECT).
  const size_t start = sql.find_first_not_of(" \t\r\n(");
  if (start != std::string_view::npos && sql.size() - start >= 4 &&
      (sql.substr(start, 4) == "WITH" || sql.substr(start, 4) == "with")) {
    return true;
  }
  for (std::string_view writing : {"INSERT", "UPDATE", "DELETE", "MERGE"}) {
    if (command.substr(0, writing.size()) == writing) return affected > 0;
  }
  return command.substr(0, 6) != "SELECT";
}

Status PostgresConnection::Begin(const std::string& mode, const std::string& then) {
  failed_ = Status::OK();
  possible_writes_ = 0;
  wake_at_commit_.clear();
  std::string sql = mode.empty() ? "BEGIN" : "BEGIN " + mode;
  if (!then.empty()) sql += "; " + then;
  return Exec(sql);
}

void PostgresConnection::BeginStatements() {
  failed_ = Status::OK();
  possible_writes_ = 0;
  wake_at_commit_.clear();
}

Status PostgresConnection::Commit() { return CommitProbing("", nullptr); }

Status PostgresConnection::CommitProbing(const std::string& probe, bool* set) {
  if (set != nullptr) *set = false;
  if (!failed_.ok()) {
    Status failed = failed_;
    Rollback();
    return failed;
  }
  // One round trip: the probe's SELECT (if any), then COMMIT. If the SELECT fails (the
  // transaction had failed already), the server skips the COMMIT and the transaction
  // is rolled back below.
  std::string sql;
  if (!probe.empty()) {
    sql += "SELECT COALESCE(current_setting('" + probe + "', true), '') <> ''; ";
  }
  sql += "COMMIT";
  Status status;
  bool probed = false;
  bool committed = false;
  if (PQsendQuery(conn_, sql.c_str()) == 0) {
    status = ErrorStatus(nullptr);
  } else {
    while (pg_result* result = PQgetResult(conn_)) {
      switch (PQresultStatus(result)) {
        case PGRES_TUPLES_OK:
          probed =
              PQntuples(result) == 1 && std::strcmp(PQgetvalue(result, 0, 0), "t") == 0;
          break;
        case PGRES_COMMAND_OK:
          // "ROLLBACK" when the server rolled back (a statement of it had failed).
          committed = std::strcmp(PQcmdStatus(result), "COMMIT") == 0;
          if (!committed && status.ok()) {
            // A statement of it failed and the work went on without saying so (a
            // refused statement this connection saw sets failed_, handled above).
            status = Internal(
                "the transaction was rolled back by PostgreSQL: a statement of it "
                "failed and its work went on");
          }
          break;
        default:
          if (status.ok()) status = ErrorStatus(result);
          break;
      }
      PQclear(result);
    }
  }
  if (status.code() == StatusCode::kUnavailable) {
    return Unavailable(status.message() +
                       " (while committing: whether the transaction committed is "
                       "unknown)")
        .WithDetail(status.detail());
  }
  if (status.ok() && !committed) {
    if (usable()) {
      status = Internal("the transaction was not committed: the COMMIT got no answer");
    } else {
      status = StoreUnavailable(
          "was lost while committing: whether the transaction committed is unknown",
          where_, "the connection closed before the COMMIT's answer");
    }
  }
  if (!status.ok()) {
    if (usable() && PQtransactionStatus(conn_) != PQTRANS_IDLE) (void)Exec("ROLLBACK");
    return status;
  }
  if (set != nullptr) *set = probed;
  return status;
}

void PostgresConnection::Rollback() {
  failed_ = Status::OK();
  wake_at_commit_.clear();
  if (usable()) (void)Exec("ROLLBACK");
}

Status PostgresConnection::Savepoint(std::string_view name) {
  if (!failed_.ok()) {
    return EndedByEarlierError();
  }
  return Exec("SAVEPOINT " + std::string(name));
}

Status PostgresConnection::ReleaseSavepoint(std::string_view name) {
  if (!failed_.ok()) {
    return EndedByEarlierError();
  }
  return Exec("RELEASE SAVEPOINT " + std::string(name));
}

Status PostgresConnection::RollbackToSavepoint(std::string_view name) {
  RETURN_IF_ERROR(Exec("ROLLBACK TO SAVEPOINT " + std::string(name)));
  failed_ = Status::OK();  // the error came after the savepoint: undone with it
  return Status::OK();
}

}  // namespace sheetlog
