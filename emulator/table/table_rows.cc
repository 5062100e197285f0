// Table's row primitives (table.h), written once for every backend: each one statement
// of Table::SqlFor (table_sql.cc) run through Connection::RunSql, its rows read into
// Items through SqlRow. Also SqlRow::ValueAt, the one decoding of columns into Values.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "emulator/table/connection.h"
#include "emulator/table/table.h"
#include "emulator/table/table_sql.h"

namespace sheetlog {

Value SqlRow::ValueAt(int col) const {
  switch (Type(col)) {
    case SqlType::kNull:
      return Value::Null();
    case SqlType::kInt:
      return Value(Int(col));
    case SqlType::kDouble:
      return Value(Double(col));
    case SqlType::kText:
      return Value(Text(col));
    case SqlType::kBytes:
      return Value::Bytes(Text(col));
  }
  return Value::Null();
}

Item Table::RowItem(const SqlRow& row) const {
  Item item;
  for (size_t i = 0; i < schema_.attributes.size(); ++i) {
    Value v = row.ValueAt(static_cast<int>(i));
    if (!v.is_null()) item.emplace(schema_.attributes[i].column, std::move(v));
  }
  return item;
}

Result<std::optional<Item>> Table::FirstRow(
    Connection& conn, Sql kind, uint64_t shape,
    const std::vector<const Value*>& params) const {
  std::optional<Item> item;
  RETURN_IF_ERROR(conn.RunSql(SqlFor(conn.dialect(), kind, shape), params,
                              [&](const SqlRow& row) {
                                item = RowItem(row);
                                return false;
                              })
                      .status());
  return item;
}

Result<std::optional<Item>> Table::LoadRow(Connection& conn, const Key& key,
                                           bool for_write) const {
  // PostgreSQL: FOR UPDATE, so the row stays as read (no other transaction writes or
  // locks it) until this one ends, and conditions judged on it still hold when the
  // write lands. SQLite: the same text as kGet (one writer: nothing changes the row
  // between this read and the write).
  return FirstRow(conn, for_write ? Sql::kGetForUpdate : Sql::kGet, 0,
                  table_sql::KeyBinds(key));
}

Result<bool> Table::InsertIfAbsent(Connection& conn, uint64_t mask,
                                   const Item& item) const {
  // ON CONFLICT DO NOTHING: the primary key's unique index decides between racing
  // writers (on PostgreSQL a second insert waits for the first to commit, then does
  // nothing); the count of changed rows says which.
  ASSIGN_OR_RETURN(
      int64_t inserted,
      conn.RunSql(SqlFor(conn.dialect(), Sql::kInsertIfAbsent, mask),
                  table_sql::MaskedBinds(mask, schema_.attributes, item, nullptr)));
  return inserted > 0;
}

Status Table::Replace(Connection& conn, uint64_t mask, const Item& item) const {
  return conn
      .RunSql(SqlFor(conn.dialect(), Sql::kReplace, mask),
              table_sql::MaskedBinds(mask, schema_.attributes, item, nullptr))
      .status();
}

Result<std::optional<Item>> Table::InsertReturning(Connection& conn, uint64_t mask,
                                                   const Item& item) const {
  return FirstRow(conn, Sql::kInsertReturning, mask,
                  table_sql::MaskedBinds(mask, schema_.attributes, item, nullptr));
}

Result<Item> Table::UpdateReturning(Connection& conn, uint64_t mask, const Item& values,
                                    const Key& key) const {
  ASSIGN_OR_RETURN(
      std::optional<Item> stored,
      FirstRow(conn, Sql::kUpdate, mask,
               table_sql::MaskedBinds(mask, schema_.attributes, values, &key)));
  if (!stored) return NotFound("table " + name() + ": no row to update");
  return std::move(*stored);
}

Result<std::optional<Item>> Table::DeleteReturning(Connection& conn,
                                                   const Key& key) const {
  return FirstRow(conn, Sql::kDelete, 0, table_sql::KeyBinds(key));
}

}  // namespace sheetlog
