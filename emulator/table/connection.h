// Connection: a transaction in progress on one backend, as table operations
// (emulator/table/table.h) see it. src/ only passes it along (transactions.h); each
// backend implements these row primitives with its own SQL: SqliteConnection
// (emulator/sqlite/database.h) and PostgresConnection (emulator/postgres/). Everything
// DynamoDB-shaped (validation, conditions, sizes, units, pages, TransactWrite) stays in
// Table, shared by every backend.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/status.h"
#include "emulator/table/table.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

// One row of a RunSql result, valid while the row callback runs. Each backend reads
// its own types: a column of SQLite by the type of the value stored, of PostgreSQL by
// the column's type (bigint and integer -> Int, double precision and numeric -> Double,
// text -> Text, bytea -> Text of the raw bytes).
class SqlRow {
 public:
  virtual int columns() const = 0;
  virtual bool IsNull(int col) const = 0;
  // An integer column; a double is truncated (PostgreSQL's sum() of bigint is numeric).
  // 0 if NULL.
  virtual int64_t Int(int col) const = 0;
  virtual double Double(int col) const = 0;  // 0 if NULL
  // A text or bytes column, its bytes; "" if NULL.
  virtual std::string Text(int col) const = 0;

 protected:
  ~SqlRow() = default;
};

// Every primitive runs inside the connection's current transaction and addresses one
// table by its schema; `mask` selects columns by attribute index (bit i = attribute i
// of the schema). Rows come back as Items with every non-NULL column, in the backend's
// types (table.h: Values <-> SQL). A primitive that fails changes nothing. Not
// thread-safe: a connection is used by one thread at a time.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual SqlDialect dialect() const = 0;

  // Once this transaction commits, other processes sharing the database hear of a
  // change of `kind` (their Transactions::AddRemoteCommitListener listeners run). For
  // writes whose waiters may be elsewhere (a queue's Send). No-op where a database has
  // one process (SQLite); nothing is told if the transaction rolls back.
  virtual void WakeOtherProcessesAtCommit(RemoteChange kind) { (void)kind; }

  // The row with `key`, or nullopt. `for_write`: the caller will judge conditions on it
  // and write: the row must stay as read until the transaction ends (PostgreSQL locks
  // it, FOR UPDATE; SQLite's single writer needs nothing).
  virtual Result<std::optional<Item>> LoadRow(const Table& table, const Key& key,
                                              bool for_write) = 0;
  // Inserts the masked columns of `item` unless a row with its key exists: false then,
  // and nothing is written (the conditional append).
  virtual Result<bool> InsertIfAbsent(const Table& table, uint64_t mask,
                                      const Item& item) = 0;
  // Inserts `item`, or replaces the whole row with its key (columns outside `mask` take
  // their SQL DEFAULT).
  virtual Status Replace(const Table& table, uint64_t mask, const Item& item) = 0;
  // InsertIfAbsent returning the row as stored; nullopt if a row with the key exists.
  virtual Result<std::optional<Item>> InsertReturning(const Table& table, uint64_t mask,
                                                      const Item& item) = 0;
  // Sets the masked columns to `values`' (absent = NULL) on the row with `key`,
  // returning the row as stored. NotFound if there is no such row.
  virtual Result<Item> UpdateReturning(const Table& table, uint64_t mask,
                                       const Item& values, const Key& key) = 0;
  // Deletes the row with `key`, returning it (nullopt if there was none).
  virtual Result<std::optional<Item>> DeleteReturning(const Table& table,
                                                      const Key& key) = 0;
  // The rows of a Query or Scan page (Table::SqlFor's kQuery / kScan `shape`, with
  // `binds` in order and `limit` if the shape has one), in order, handed to `row` until
  // it returns false.
  virtual Status SelectRows(const Table& table, bool scan, uint64_t shape,
                            const std::vector<const Value*>& binds, int limit,
                            const std::function<bool(Item)>& row) = 0;

  // The emulator's services beyond tables (queue, change feed, execution history, the
  // blob mirror) keep their own tables and run their own SQL through this: one
  // statement, written once for both backends where the dialects agree, with
  // `c.dialect()` choosing where they differ. Placeholders are `?1`, `?2`, ... (a number
  // may repeat or come out of order), bound to `params` by position; each Value goes with
  // its backend's type (table.h: Values <-> SQL; on PostgreSQL a parameter's type is
  // inferred from where it stands: write `CAST(?1 AS bigint)` where nothing says).
  // Rows, if the statement returns any (SELECT, RETURNING), go to `row` until it
  // returns false. Returns the number of rows returned, or for a statement returning
  // none the number it changed. Errors as for the row primitives (a unique or
  // constraint conflict is ConditionFailed; NOT NULL and CHECK InvalidArgument).
  virtual Result<int64_t> RunSql(
      std::string_view sql, const std::vector<Value>& params,
      const std::function<bool(const SqlRow&)>& row = nullptr) = 0;

  // Nested transactions (TransactWrite): `name` is a plain identifier.
  virtual Status Savepoint(std::string_view name) = 0;
  virtual Status ReleaseSavepoint(std::string_view name) = 0;
  virtual Status RollbackToSavepoint(std::string_view name) = 0;
};

}  // namespace sheetlog
