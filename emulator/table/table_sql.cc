// Table: the schema checks and the SQL each operation shape runs, built once per
// shape and cached; the helpers every part of emulator/table shares (table_sql.h).
#include "emulator/table/table_sql.h"

#include <algorithm>
#include <set>

#include "emulator/env/mutex.h"
#include "emulator/sqlite/database.h"
#include "emulator/table/table.h"

namespace sheetlog {
namespace table_sql {

std::string Quote(const std::string& identifier) {
  std::string out = "\"";
  for (char c : identifier) {
    out.push_back(c);
    if (c == '"') out.push_back('"');
  }
  out.push_back('"');
  return out;
}

void BindValue(Statement& stmt, int index, const Value& v) {
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

std::string Tuple(const std::vector<std::string>& columns, size_t n) {
  std::string out = "(";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    out += Quote(columns[i]);
  }
  return out + ")";
}

std::string Placeholders(size_t n) {
  std::string out = "(";
  for (size_t i = 0; i < n; ++i) out += i > 0 ? ", ?" : "?";
  return out + ")";
}

uint64_t PresentMask(const Item& item, const std::map<std::string, int>& column_index) {
  uint64_t mask = 0;
  for (const auto& [column, value] : item) {
    if (value.is_null()) continue;
    mask |= uint64_t{1} << column_index.at(column);
  }
  return mask;
}

void BindMasked(Statement& stmt, int* bind, uint64_t mask,
                const std::vector<Attribute>& attributes, const Item& item) {
  for (size_t i = 0; i < attributes.size(); ++i) {
    if ((mask & (uint64_t{1} << i)) == 0) continue;
    auto it = item.find(attributes[i].column);
    BindValue(stmt, (*bind)++, it == item.end() ? Value() : it->second);
  }
}

Status ConditionFailedStatus(const Condition& c) {
  return ConditionFailed(c.ToString() + " failed");
}

// SqliteStatus maps every SQLITE_CONSTRAINT to ConditionFailed. A conflict (a unique
// index, a trigger's RAISE) is a lost race; a NOT NULL, CHECK or type violation is a
// malformed item that no retry will fix: InvalidArgument, so callers that retry on
// ConditionFailed do not loop.
Status WriteStatus(Connection& conn, Status status) {
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

}  // namespace table_sql

using namespace table_sql;  // NOLINT: the helpers of this module's own files

// ---------------------------------------------------------------------------
// Table: schema and SQL

Table::Table(TableSchema schema) : schema_(std::move(schema)) {
  auto invalid = [&](const std::string& why) {
    schema_status_ = InvalidArgument("table " + schema_.table + ": " + why);
  };
  if (schema_.attributes.size() > static_cast<size_t>(kMaxAttributes)) {
    invalid("more than 64 attributes");
  }
  for (size_t i = 0; i < schema_.attributes.size(); ++i) {
    if (!column_index_.emplace(schema_.attributes[i].column, static_cast<int>(i))
             .second) {
      invalid("column " + schema_.attributes[i].column + " listed twice");
    }
    if (i > 0) select_list_ += ", ";
    select_list_ += Quote(schema_.attributes[i].column);
  }
  if (schema_.partition_key.empty()) invalid("no partition key");
  if (schema_.sort_key.size() > 255) invalid("sort key too long");
  std::vector<std::string> keys = schema_.partition_key;
  keys.insert(keys.end(), schema_.sort_key.begin(), schema_.sort_key.end());
  for (const std::string& k : keys) {
    int index = ColumnIndex(k);
    if (index < 0) {
      invalid("key column " + k + " is not among the attributes");
      continue;
    }
    if (!key_where_.empty()) key_where_ += " AND ";
    key_where_ += Quote(k) + " = ?";
    key_columns_.push_back(index);
  }
}

int Table::ColumnIndex(const std::string& column) const {
  auto it = column_index_.find(column);
  return it == column_index_.end() ? -1 : it->second;
}

const std::string& Table::SqlFor(Sql kind, uint64_t shape) const {
  MutexLock lock(&sql_mu_);
  auto key = std::make_pair(static_cast<int>(kind), shape);
  auto it = sql_.find(key);
  if (it == sql_.end()) it = sql_.emplace(key, BuildSql(kind, shape)).first;
  return it->second;
}

std::string Table::BuildSql(Sql kind, uint64_t shape) const {
  const std::string table = Quote(schema_.table);
  std::vector<std::string> keys = schema_.partition_key;
  keys.insert(keys.end(), schema_.sort_key.begin(), schema_.sort_key.end());

  // For the column-mask shapes: the masked columns in schema order.
  auto masked = [&](const std::string& separator, const std::string& suffix) {
    std::string out;
    for (size_t i = 0; i < schema_.attributes.size(); ++i) {
      if ((shape & (uint64_t{1} << i)) == 0) continue;
      if (!out.empty()) out += separator;
      out += Quote(schema_.attributes[i].column) + suffix;
    }
    return out;
  };
  auto insert_head = [&] {
    std::string columns = masked(", ", "");
    std::string values;
    for (size_t i = 0; i < schema_.attributes.size(); ++i) {
      if ((shape & (uint64_t{1} << i)) == 0) continue;
      values += values.empty() ? "?" : ", ?";
    }
    return "INSERT INTO " + table + " (" + columns + ") VALUES (" + values + ")";
  };
  const std::string conflict_target = " ON CONFLICT " + Tuple(keys, keys.size());

  switch (kind) {
    case Sql::kGet:
      return "SELECT " + select_list_ + " FROM " + table + " WHERE " + key_where_;
    case Sql::kDelete:
      return "DELETE FROM " + table + " WHERE " + key_where_ + " RETURNING " +
             select_list_;
    case Sql::kInsertIfAbsent:
      return insert_head() + conflict_target + " DO NOTHING";
    case Sql::kUpsert: {
      // excluded.<c> of a column the INSERT does not name is its DEFAULT: exactly
      // PutItem's "replace the whole item".
      std::string sets;
      for (const Attribute& a : schema_.attributes) {
        if (std::find(keys.begin(), keys.end(), a.column) != keys.end()) continue;
        if (!sets.empty()) sets += ", ";
        sets += Quote(a.column) + " = excluded." + Quote(a.column);
      }
      return insert_head() + conflict_target +
             (sets.empty() ? " DO NOTHING" : " DO UPDATE SET " + sets);
    }
    case Sql::kInsert:
      return insert_head() + " RETURNING " + select_list_;
    case Sql::kUpdate:
      return "UPDATE " + table + " SET " + masked(", ", " = ?") + " WHERE " + key_where_ +
             " RETURNING " + select_list_;
    case Sql::kQuery: {
      std::string sql = "SELECT " + select_list_ + " FROM " + table + " WHERE ";
      for (size_t i = 0; i < schema_.partition_key.size(); ++i) {
        if (i > 0) sql += " AND ";
        sql += Quote(schema_.partition_key[i]) + " = ?";
      }
      const auto& sk = schema_.sort_key;
      size_t from_len = (shape >> kFromLenShift) & 0xff;
      size_t to_len = (shape >> kToLenShift) & 0xff;
      if (from_len > 0)
        sql += " AND " + Tuple(sk, from_len) + " >= " + Placeholders(from_len);
      if (to_len > 0) sql += " AND " + Tuple(sk, to_len) + " <= " + Placeholders(to_len);
      bool reverse = (shape & kReverse) != 0;
      if (shape & kHasStart) {
        sql += " AND " + Tuple(sk, sk.size()) + (reverse ? " < " : " > ") +
               Placeholders(sk.size());
      }
      if (!sk.empty()) {
        sql += " ORDER BY ";
        for (size_t i = 0; i < sk.size(); ++i) {
          if (i > 0) sql += ", ";
          sql += Quote(sk[i]) + (reverse ? " DESC" : " ASC");
        }
      }
      if (shape & kHasLimit) sql += " LIMIT ?";
      return sql;
    }
    case Sql::kScan: {
      std::string sql = "SELECT " + select_list_ + " FROM " + table;
      if (shape & kHasStart) {
        sql += " WHERE " + Tuple(keys, keys.size()) + " > " + Placeholders(keys.size());
      }
      sql += " ORDER BY ";
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i > 0) sql += ", ";
        sql += Quote(keys[i]);
      }
      if (shape & kHasLimit) sql += " LIMIT ?";
      return sql;
    }
  }
  return "";
}

}  // namespace sheetlog
