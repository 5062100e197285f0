// One libpq connection to PostgreSQL: the PostgreSQL backend's Connection
// (emulator/table/connection.h), and what PostgresDatabase needs besides (transaction
// control, LISTEN). libpq, PostgreSQL's own C client, rather than libpqxx: a dozen
// calls, no exceptions to turn back into Status, and no C++ ABI to follow across
// libpqxx's incompatible majors.
//
// RunSql: the shared SQL's `?N` placeholders become `$N` (TranslateSqlParams,
// emulator/table/sql_params.h) when a text is first prepared on the connection, and the
// prepared statement is kept under that text (nothing is translated again). Values
// travel as text parameters (bytea in binary) whose types PostgreSQL infers from where
// they stand; results come back as text, typed by column type for SqlRow.
//
// Errors: a lost or refused connection is Unavailable naming the server; a unique
// violation ConditionFailed; a NOT NULL, CHECK, foreign key or data error (bad UTF-8,
// a value the column's type does not take) InvalidArgument; a serialization failure or
// deadlock Aborted (and only those: status.h). A statement PostgreSQL refuses ends its
// transaction: every later statement of it returns that first error's code, naming
// it, without reaching the server (until RollbackToSavepoint, or the transaction
// ends).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "emulator/status.h"
#include "emulator/table/connection.h"

struct pg_conn;
struct pg_result;

namespace sheetlog {

// The parts of a connection string worth naming in messages ("host=... port=...
// dbname=... user=..."; never a password), or InvalidArgument if it does not parse or
// holds a password (credentials come from PGPASSWORD or a PGPASSFILE, never from a
// string that shows up in `ps` and logs).
Result<std::string> DescribePostgresConninfo(const std::string& conninfo);

// The channel every node LISTENs on and NOTIFYs (Transactions::AddRemoteCommitListener);
// the payload names the RemoteChange.
inline constexpr const char* kPostgresWakeChannel = "sheetlog_wake";
const char* RemoteChangePayload(RemoteChange kind);

// A notification a LISTENing connection received.
struct PostgresNotification {
  int backend_pid = 0;  // the server process of the connection that sent it
  std::string payload;
};

class PostgresConnection final : public Connection {
 public:
  // Connects, waiting at most `connect_timeout_seconds` (libpq's connect_timeout).
  // Unavailable if the server cannot be reached or refuses the connection.
  static Result<std::unique_ptr<PostgresConnection>> Open(const std::string& conninfo,
                                                          int connect_timeout_seconds);
  ~PostgresConnection() override;
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  // Runs `sql` (any number of statements, no parameters; rows are ignored). For
  // transaction control and DDL: it ignores (and clears nothing of) an earlier error.
  Status Exec(const std::string& sql);

  // BEGIN (with `mode`, e.g. "ISOLATION LEVEL REPEATABLE READ READ ONLY"), then
  // `then` if given (statements without parameters, e.g. the transaction's settings)
  // in the same round trip. COMMIT and ROLLBACK. Commit fails (and rolls back) if a
  // statement of the transaction failed; a commit whose answer never arrives is
  // Unavailable with an unknown outcome.
  Status Begin(const std::string& mode, const std::string& then = "");
  // For statements outside a transaction (autocommit): clears what Begin clears.
  void BeginStatements();
  Status Commit();
  // Commit, reading first (in the same round trip) whether the transaction set the
  // custom setting `probe` (e.g. "sheetlog.feed_written"), transaction-locally, to a
  // non-empty value: `*set` says so once the commit succeeded.
  Status CommitProbing(const std::string& probe, bool* set);
  void Rollback();

  // False once the connection to the server is lost: the pool drops it.
  bool usable() const;
  // The server process serving this connection (what a notification it sent names).
  int backend_pid() const;
  // For a connection that ran LISTEN: waits until notifications arrive (returned),
  // until `wake_fd` becomes readable (returns none), or until the connection is lost
  // (Unavailable).
  Result<std::vector<PostgresNotification>> AwaitNotifications(int wake_fd);
  // "host=... port=... dbname=... user=..." for messages.
  const std::string& where() const { return where_; }

  // Connection.
  SqlDialect dialect() const override { return SqlDialect::kPostgres; }
  // Collected for the pool (TakeWakesAtCommit), which sends them after the commit.
  void WakeOtherProcessesAtCommit(RemoteChange kind) override;
  // The kinds WakeOtherProcessesAtCommit asked for in this transaction; clears them.
  std::vector<RemoteChange> TakeWakesAtCommit();
  // Statements of this transaction (since Begin) run through RunSql that may have
  // changed data: an INSERT, UPDATE, DELETE or MERGE that touched a row, a
  // data-modifying WITH, anything but a SELECT. Conservative: a SELECT ... FOR UPDATE
  // (a lock, no change) does not count; a WITH that only read does. For group commit:
  // a work that failed without raising this left nothing in the transaction.
  int64_t possible_writes() const { return possible_writes_; }
  // Whether a statement PostgreSQL refused ended the transaction (every later one fails).
  bool transaction_failed() const { return !failed_.ok(); }
  // Rows are read one at a time (single-row mode): a page cut short holds no more than
  // a row in memory; the rest is read and dropped.
  Result<int64_t> RunSql(std::string_view sql, const SqlParams& params,
                         const std::function<bool(const SqlRow&)>& row) override;
  // Exec's: a statement that fails ends the transaction (the work returns the error,
  // and the transaction is rolled back).
  Status RunScript(std::string_view sql) override {
    ++possible_writes_;
    return Exec(std::string(sql));
  }
  Status Savepoint(std::string_view name) override;
  Status ReleaseSavepoint(std::string_view name) override;
  Status RollbackToSavepoint(std::string_view name) override;

 private:
  PostgresConnection(pg_conn* conn, std::string where) : conn_(conn), where_(where) {}
  // The Status of a failed result (or of a lost connection when `result` is null).
  Status ErrorStatus(const pg_result* result) const;
  // What a statement after failed_ returns: failed_'s code, saying so.
  Status EndedByEarlierError() const;
  // possible_writes(): whether a statement that completed with `command` (its tag)
  // having touched `affected` rows may have changed data.
  static bool MayHaveWritten(std::string_view sql, std::string_view command,
                             int64_t affected);

  pg_conn* conn_;
  // What to wake other processes for once this transaction commits.
  std::vector<RemoteChange> wake_at_commit_;
  std::string where_;
  // The statements prepared on this connection: the shared SQL, as RunSql is given it
  // (`?N`), -> the prepared statement's name. Looked up by string_view: no key copy
  // per call.
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const {
      return std::hash<std::string_view>()(sql);
    }
  };
  std::unordered_map<std::string, std::string, SqlHash, std::equal_to<>> prepared_;
  Status failed_;  // the error that ended the current transaction
  int64_t possible_writes_ = 0;
};

}  // namespace sheetlog
