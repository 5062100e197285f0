// PostgresConnection's table rows (emulator/table/connection.h) in PostgreSQL's SQL:
// the statements Table::SqlFor builds for PostgreSQL ($n placeholders, FOR UPDATE on
// reads that precede a write).
#include "emulator/postgres/postgres_connection.h"
#include "emulator/table/table_sql.h"

namespace sheetlog {

namespace {

using Sql = Table::Sql;

// The row's columns (every column of `table`, in schema order) as an Item.
Item PostgresRowItem(const Table& table, const PostgresRow& row) {
  Item item;
  const std::vector<Attribute>& attributes = table.schema().attributes;
  for (size_t i = 0; i < attributes.size(); ++i) {
    Value v = row.ValueAt(static_cast<int>(i));
    if (!v.is_null()) item.emplace(attributes[i].column, std::move(v));
  }
  return item;
}

const std::string& PostgresSql(const Table& table, Sql kind, uint64_t shape) {
  return table.SqlFor(SqlDialect::kPostgres, kind, shape);
}

}  // namespace

Result<std::optional<Item>> PostgresConnection::OneRow(
    const Table& table, const std::string& sql, const std::vector<const Value*>& params) {
  std::optional<Item> item;
  RETURN_IF_ERROR(Run(sql, params, [&](const PostgresRow& row) {
                    item = PostgresRowItem(table, row);
                    return false;
                  }).status());
  return item;
}

Result<std::optional<Item>> PostgresConnection::LoadRow(const Table& table,
                                                        const Key& key, bool for_write) {
  // FOR UPDATE: the row stays as read (no other transaction writes or locks it) until
  // this one ends, so conditions judged on it still hold when the write lands.
  return OneRow(table, PostgresSql(table, for_write ? Sql::kGetForUpdate : Sql::kGet, 0),
                table_sql::KeyBinds(key));
}

Result<bool> PostgresConnection::InsertIfAbsent(const Table& table, uint64_t mask,
                                                const Item& item) {
  // ON CONFLICT DO NOTHING: the primary key's unique index decides between racing
  // writers (a second insert waits for the first to commit, then does nothing).
  ASSIGN_OR_RETURN(
      int64_t inserted,
      Run(PostgresSql(table, Sql::kInsertIfAbsent, mask),
          table_sql::MaskedBinds(mask, table.schema().attributes, item, nullptr)));
  return inserted > 0;
}

Status PostgresConnection::Replace(const Table& table, uint64_t mask, const Item& item) {
  return Run(PostgresSql(table, Sql::kReplace, mask),
             table_sql::MaskedBinds(mask, table.schema().attributes, item, nullptr))
      .status();
}

Result<std::optional<Item>> PostgresConnection::InsertReturning(const Table& table,
                                                                uint64_t mask,
                                                                const Item& item) {
  return OneRow(table, PostgresSql(table, Sql::kInsertReturning, mask),
                table_sql::MaskedBinds(mask, table.schema().attributes, item, nullptr));
}

Result<Item> PostgresConnection::UpdateReturning(const Table& table, uint64_t mask,
                                                 const Item& values, const Key& key) {
  ASSIGN_OR_RETURN(
      std::optional<Item> stored,
      OneRow(table, PostgresSql(table, Sql::kUpdate, mask),
             table_sql::MaskedBinds(mask, table.schema().attributes, values, &key)));
  if (!stored) return NotFound("table " + table.name() + ": no row to update");
  return std::move(*stored);
}

Result<std::optional<Item>> PostgresConnection::DeleteReturning(const Table& table,
                                                                const Key& key) {
  return OneRow(table, PostgresSql(table, Sql::kDelete, 0), table_sql::KeyBinds(key));
}

Status PostgresConnection::SelectRows(const Table& table, bool scan, uint64_t shape,
                                      const std::vector<const Value*>& binds, int limit,
                                      const std::function<bool(Item)>& row) {
  std::vector<const Value*> params = binds;
  const Value limit_value(static_cast<int64_t>(limit));
  if (shape & table_sql::kHasLimit) params.push_back(&limit_value);
  return Run(PostgresSql(table, scan ? Sql::kScan : Sql::kQuery, shape), params,
             [&](const PostgresRow& r) { return row(PostgresRowItem(table, r)); })
      .status();
}

}  // namespace sheetlog
