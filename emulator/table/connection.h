// Connection: a transaction in progress on one backend, the narrow interface every
// backend implements (SqliteConnection, emulator/sqlite/database.h; PostgresConnection,
// emulator/postgres/postgres_connection.h) and everything above runs its SQL through.
// src/ only passes it along (transactions.h).
//
// Contract: statements in one placeholder convention (`?1`, `?2`, ...; each backend
// turns them into its own with TranslateSqlParams, emulator/table/sql_params.h, once per
// statement and connection, and caches the prepared statement), rows read through
// SqlRow, savepoints, and the dialect for the few places where the SQL differs. Table
// (emulator/table/table.h) builds its row statements and reads its items on top of it,
// once for both backends; the services (queue, change feed, execution history, the blob
// mirror) write their SQL the same way. Not thread-safe: a connection is used by one
// thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/status.h"
#include "emulator/table/table.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

// What a column of a row holds, by the backend's types (table.h: Values <-> SQL).
enum class SqlType { kNull, kInt, kDouble, kText, kBytes };

// One row of a RunSql result, valid while the row callback runs. Each backend types its
// columns its own way: SQLite by the type of the value stored (INTEGER, REAL, TEXT,
// BLOB), PostgreSQL by the column's type (smallint, integer, bigint, oid and boolean ->
// kInt; real, double precision and numeric -> kDouble; bytea -> kBytes; anything else
// -> kText).
class SqlRow {
 public:
  virtual int columns() const = 0;
  virtual SqlType Type(int col) const = 0;
  bool IsNull(int col) const { return Type(col) == SqlType::kNull; }
  // An integer column (a boolean: 0/1); a double is truncated (PostgreSQL's sum() of
  // bigint is numeric). 0 if NULL.
  virtual int64_t Int(int col) const = 0;
  virtual double Double(int col) const = 0;  // 0 if NULL
  // A text or bytes column, its bytes; "" if NULL.
  virtual std::string Text(int col) const = 0;

  // The column as a Value of its Type() (kNull: Null(); kText: a string; kBytes:
  // Value::Bytes): the one decoding of columns into Values, Table's items included
  // (table_rows.cc).
  Value ValueAt(int col) const;

 protected:
  ~SqlRow() = default;
};

// The parameters of one RunSql call, bound to `?1`, `?2`, ... in order: a braced list
// (copied, as a std::vector<Value> would be), or a view of a std::vector<Value> or of
// pointers to Values the caller keeps for the call (Table passes an item's values so,
// without copying them).
class SqlParams {
 public:
  SqlParams() = default;
  SqlParams(std::initializer_list<Value> values)  // NOLINT: RunSql(sql, {a, b})
      : owned_(values), values_(owned_.data()), size_(owned_.size()) {}
  SqlParams(const std::vector<Value>& values)  // NOLINT
      : values_(values.data()), size_(values.size()) {}
  SqlParams(const std::vector<const Value*>& values)  // NOLINT
      : pointers_(values.data()), size_(values.size()) {}
  SqlParams(const SqlParams&) = delete;  // values_ may point into owned_
  SqlParams& operator=(const SqlParams&) = delete;

  size_t size() const { return size_; }
  const Value& operator[](size_t i) const {
    return pointers_ != nullptr ? *pointers_[i] : values_[i];
  }

 private:
  std::vector<Value> owned_;  // a braced list's values
  const Value* values_ = nullptr;
  const Value* const* pointers_ = nullptr;
  size_t size_ = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;
  // Which SQL this backend speaks, for statements written per dialect where the two
  // differ (`FOR UPDATE` and `SKIP LOCKED`, trigger bodies, catalog queries).
  virtual SqlDialect dialect() const = 0;

  // Once this transaction commits, other processes sharing the database hear of a
  // change of `kind` (their Transactions::AddRemoteCommitListener listeners run). For
  // writes whose waiters may be elsewhere (a queue's Send). No-op where a database has
  // one process (SQLite); nothing is told if the transaction rolls back.
  virtual void WakeOtherProcessesAtCommit(RemoteChange kind) { (void)kind; }

  // Runs one statement, inside the connection's current transaction: SQL written once
  // for both backends where the dialects agree, with `dialect()` choosing where they
  // differ. Placeholders are `?1`, `?2`, ... (a number may repeat or come out of order;
  // sql_params.h has the rules, and a text that breaks them is InvalidArgument), bound
  // to `params` by number; each Value goes with its backend's type (table.h: Values <->
  // SQL; on PostgreSQL a parameter's type is inferred from where it stands: write
  // `CAST(?1 AS bigint)` where nothing says). The statement is prepared once per
  // connection and text. Rows, if the statement returns any (SELECT, RETURNING), go to
  // `row` until it returns false (a RETURNING statement has made all its changes by
  // then). Returns the number of rows returned, or for a statement returning none the
  // number it changed. A unique or constraint conflict is ConditionFailed; NOT NULL and
  // CHECK InvalidArgument (the backends' headers have the rest).
  virtual Result<int64_t> RunSql(
      std::string_view sql, const SqlParams& params,
      const std::function<bool(const SqlRow&)>& row = nullptr) = 0;

  // Runs `sql`, any number of statements in the backend's own SQL without parameters
  // (rows are ignored): a migration's file (emulator/table/migrations.h), DDL.
  virtual Status RunScript(std::string_view sql) = 0;

  // Nested transactions (TransactWrite): `name` is a plain identifier.
  virtual Status Savepoint(std::string_view name) = 0;
  virtual Status ReleaseSavepoint(std::string_view name) = 0;
  virtual Status RollbackToSavepoint(std::string_view name) = 0;
};

}  // namespace sheetlog
