// SqliteConnection as a Connection (emulator/table/connection.h): RunSql's statements,
// bound and read with SQLite's types, and savepoints. SQLite takes `?N` placeholders
// itself: TranslateSqlParams only checks a text, the first time it is prepared.
#include <cassert>

#include "emulator/sqlite/database.h"
#include "emulator/table/sql_params.h"

namespace sheetlog {

namespace {

// Binds `v` at `index` with the SQLite type of its kind (table.h: Values <-> SQL).
void BindSqliteValue(Statement& stmt, int index, const Value& v) {
  switch (v.type()) {
    case Value::Type::kNull:
      stmt.BindNull(index);
      break;
    case Value::Type::kInt:
    case Value::Type::kBool:
      stmt.Bind(index, v.AsInt());
      break;
    case Value::Type::kDouble:
      stmt.Bind(index, v.AsDouble());
      break;
    case Value::Type::kString:
      stmt.Bind(index, v.AsString());
      break;
    case Value::Type::kBytes:
      stmt.BindBlob(index, v.AsString());
      break;
  }
}

// SqliteStatus maps every SQLITE_CONSTRAINT to ConditionFailed. A conflict (a unique
// index, a trigger's RAISE) is a lost race; a NOT NULL, CHECK or type violation is a
// malformed item that no retry will fix: InvalidArgument, so callers that retry on
// ConditionFailed do not loop.
Status SqliteWriteStatus(SqliteConnection& conn, Status status) {
  if (status.code() != StatusCode::kConditionFailed) return status;
  switch (sqlite3_extended_errcode(conn.raw())) {
    case SQLITE_CONSTRAINT_NOTNULL:
    case SQLITE_CONSTRAINT_CHECK:
    case SQLITE_CONSTRAINT_DATATYPE:
    case SQLITE_CONSTRAINT_FOREIGNKEY:
      return InvalidArgument(status.message());
    default:
      return status;
  }
}

// A row of RunSql: the current row of a statement, typed by the values stored (so a
// REAL column holding an integer reads as kInt, and an INTEGER column holding 2.5 as
// kDouble: table.h, column affinity). Type() is read before any accessor converts the
// value.
class SqliteResultRow final : public SqlRow {
 public:
  explicit SqliteResultRow(const Statement& stmt) : stmt_(stmt) {}
  int columns() const override { return stmt_.ColumnCount(); }
  SqlType Type(int col) const override {
    switch (stmt_.ColumnType(col)) {
      case SQLITE_NULL:
        return SqlType::kNull;
      case SQLITE_INTEGER:
        return SqlType::kInt;
      case SQLITE_FLOAT:
        return SqlType::kDouble;
      case SQLITE_TEXT:
        return SqlType::kText;
      default:
        return SqlType::kBytes;
    }
  }
  int64_t Int(int col) const override { return stmt_.ColumnInt(col); }
  double Double(int col) const override { return stmt_.ColumnDouble(col); }
  std::string Text(int col) const override { return std::string(stmt_.ColumnView(col)); }

 private:
  const Statement& stmt_;
};

}  // namespace

Result<Statement> SqliteConnection::PrepareShared(std::string_view sql) {
  auto cached = cache_.find(sql);
  if (cached != cache_.end()) return Statement(db_, cached->second);
  // SQLite's form is the text itself: checked once, then prepared and cached as it is.
  ASSIGN_OR_RETURN(std::string sqlite_sql, TranslateSqlParams(sql, SqlDialect::kSqlite));
  assert(sqlite_sql == sql);
  return Prepare(sqlite_sql);
}

Result<int64_t> SqliteConnection::RunSql(std::string_view sql, const SqlParams& params,
                                         const std::function<bool(const SqlRow&)>& row) {
  ASSIGN_OR_RETURN(Statement stmt, PrepareShared(sql));
  // ?N is SQLite's parameter number N: the Nth value binds at index N.
  for (size_t i = 0; i < params.size(); ++i) {
    BindSqliteValue(stmt, static_cast<int>(i + 1), params[i]);
  }
  if (stmt.ColumnCount() == 0) {
    RETURN_IF_ERROR(SqliteWriteStatus(*this, stmt.Run()));
    return Changes();
  }
  // A RETURNING statement makes all its changes at the first step (SQLite's
  // documentation of RETURNING), so stopping early loses none of them.
  int64_t rows = 0;
  while (true) {
    Result<bool> more = stmt.Step();
    if (!more.ok()) return SqliteWriteStatus(*this, more.status());
    if (!*more) return rows;
    ++rows;
    if (row && !row(SqliteResultRow(stmt))) return rows;
  }
}

Status SqliteConnection::Savepoint(std::string_view name) {
  return Exec("SAVEPOINT " + std::string(name));
}

Status SqliteConnection::ReleaseSavepoint(std::string_view name) {
  return Exec("RELEASE " + std::string(name));
}

Status SqliteConnection::RollbackToSavepoint(std::string_view name) {
  return Exec("ROLLBACK TO " + std::string(name));
}

}  // namespace sheetlog
