// SqliteConnection's table rows (emulator/table/connection.h) in SQLite's SQL: the
// statements Table::SqlFor builds for SQLite, bound and read with SQLite's types.
#include <cassert>

#include "emulator/sqlite/database.h"
#include "emulator/table/table_sql.h"

namespace sheetlog {

namespace {

using Sql = Table::Sql;

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

// The current row of `stmt` (every column of `table`, in schema order) as an Item.
Item RowItem(const Table& table, const Statement& stmt) {
  Item item;
  const std::vector<Attribute>& attributes = table.schema().attributes;
  for (size_t i = 0; i < attributes.size(); ++i) {
    int col = static_cast<int>(i);
    Value v;
    switch (stmt.ColumnType(col)) {
      case SQLITE_NULL:
        continue;
      case SQLITE_INTEGER:
        v = Value(stmt.ColumnInt(col));
        break;
      case SQLITE_FLOAT:
        v = Value(stmt.ColumnDouble(col));
        break;
      case SQLITE_TEXT:
        v = Value(stmt.ColumnText(col));
        break;
      default:
        v = Value::Bytes(std::string(stmt.ColumnView(col)));
        break;
    }
    item.emplace(attributes[i].column, std::move(v));
  }
  return item;
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

// A row of RunSql: the current row of a statement, by the stored values' types.
class SqliteRow final : public SqlRow {
 public:
  explicit SqliteRow(const Statement& stmt) : stmt_(stmt) {}
  int columns() const override { return stmt_.ColumnCount(); }
  bool IsNull(int col) const override { return stmt_.IsNull(col); }
  int64_t Int(int col) const override { return stmt_.ColumnInt(col); }
  double Double(int col) const override { return stmt_.ColumnDouble(col); }
  std::string Text(int col) const override { return std::string(stmt_.ColumnView(col)); }

 private:
  const Statement& stmt_;
};

}  // namespace

Result<int64_t> SqliteConnection::RunSql(std::string_view sql,
                                         const std::vector<Value>& params,
                                         const std::function<bool(const SqlRow&)>& row) {
  ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  int index = 1;
  for (const Value& v : params) BindSqliteValue(stmt, index++, v);
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
    if (row && !row(SqliteRow(stmt))) return rows;
  }
}

Result<Statement> SqliteConnection::Bound(const std::string& sql,
                                          const std::vector<const Value*>& binds) {
  ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  int index = 1;
  for (const Value* v : binds) BindSqliteValue(stmt, index++, *v);
  return stmt;
}

Result<std::optional<Item>> SqliteConnection::LoadRow(const Table& table, const Key& key,
                                                      bool /*for_write*/) {
  // One writer: nothing changes the row between this read and the write.
  ASSIGN_OR_RETURN(Statement stmt, Bound(table.SqlFor(SqlDialect::kSqlite, Sql::kGet, 0),
                                         table_sql::KeyBinds(key)));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<Item>();
  return std::optional<Item>(RowItem(table, stmt));
}

Result<bool> SqliteConnection::InsertIfAbsent(const Table& table, uint64_t mask,
                                              const Item& item) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      Bound(table.SqlFor(SqlDialect::kSqlite, Sql::kInsertIfAbsent, mask),
            table_sql::MaskedBinds(mask, table.schema().attributes, item, nullptr)));
  RETURN_IF_ERROR(SqliteWriteStatus(*this, stmt.Run()));
  return Changes() > 0;
}

Status SqliteConnection::Replace(const Table& table, uint64_t mask, const Item& item) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      Bound(table.SqlFor(SqlDialect::kSqlite, Sql::kReplace, mask),
            table_sql::MaskedBinds(mask, table.schema().attributes, item, nullptr)));
  return SqliteWriteStatus(*this, stmt.Run());
}

Result<std::optional<Item>> SqliteConnection::InsertReturning(const Table& table,
                                                              uint64_t mask,
                                                              const Item& item) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      Bound(table.SqlFor(SqlDialect::kSqlite, Sql::kInsertReturning, mask),
            table_sql::MaskedBinds(mask, table.schema().attributes, item, nullptr)));
  Result<bool> row = stmt.Step();
  if (!row.ok()) return SqliteWriteStatus(*this, row.status());
  if (!*row) return std::optional<Item>();
  Item stored = RowItem(table, stmt);
  RETURN_IF_ERROR(stmt.Run());  // finish the statement
  return std::optional<Item>(std::move(stored));
}

Result<Item> SqliteConnection::UpdateReturning(const Table& table, uint64_t mask,
                                               const Item& values, const Key& key) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      Bound(table.SqlFor(SqlDialect::kSqlite, Sql::kUpdate, mask),
            table_sql::MaskedBinds(mask, table.schema().attributes, values, &key)));
  Result<bool> row = stmt.Step();
  if (!row.ok()) return SqliteWriteStatus(*this, row.status());
  if (!*row) return NotFound("table " + table.name() + ": no row to update");
  Item stored = RowItem(table, stmt);
  RETURN_IF_ERROR(stmt.Run());
  return stored;
}

Result<std::optional<Item>> SqliteConnection::DeleteReturning(const Table& table,
                                                              const Key& key) {
  ASSIGN_OR_RETURN(Statement stmt,
                   Bound(table.SqlFor(SqlDialect::kSqlite, Sql::kDelete, 0),
                         table_sql::KeyBinds(key)));
  Result<bool> row = stmt.Step();
  if (!row.ok()) return SqliteWriteStatus(*this, row.status());
  std::optional<Item> deleted;
  if (*row) deleted = RowItem(table, stmt);
  RETURN_IF_ERROR(stmt.Run());
  return deleted;
}

Status SqliteConnection::SelectRows(const Table& table, bool scan, uint64_t shape,
                                    const std::vector<const Value*>& binds, int limit,
                                    const std::function<bool(Item)>& row) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      Bound(table.SqlFor(SqlDialect::kSqlite, scan ? Sql::kScan : Sql::kQuery, shape),
            binds));
  if (shape & table_sql::kHasLimit) stmt.Bind(static_cast<int>(binds.size()) + 1, limit);
  while (true) {
    ASSIGN_OR_RETURN(bool more, stmt.Step());
    if (!more || !row(RowItem(table, stmt))) return Status::OK();
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
