// Table: the schema checks and the SQL each operation shape runs, built once per
// shape and cached; the helpers every part of emulator/table shares (table_sql.h).
#include "emulator/table/table_sql.h"

#include <algorithm>
#include <set>

#include "emulator/env/mutex.h"
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

std::string Tuple(const std::vector<std::string>& columns, size_t n) {
  std::string out = "(";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    out += Quote(columns[i]);
  }
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

std::vector<const Value*> MaskedBinds(uint64_t mask,
                                      const std::vector<Attribute>& attributes,
                                      const Item& item, const Key* key) {
  static const Value kAbsent;
  std::vector<const Value*> binds;
  for (size_t i = 0; i < attributes.size(); ++i) {
    if ((mask & (uint64_t{1} << i)) == 0) continue;
    auto it = item.find(attributes[i].column);
    binds.push_back(it == item.end() ? &kAbsent : &it->second);
  }
  if (key != nullptr) {
    for (const Value& v : key->partition) binds.push_back(&v);
    for (const Value& v : key->sort) binds.push_back(&v);
  }
  return binds;
}

std::vector<const Value*> KeyBinds(const Key& key) {
  std::vector<const Value*> binds;
  for (const Value& v : key.partition) binds.push_back(&v);
  for (const Value& v : key.sort) binds.push_back(&v);
  return binds;
}

Status ConditionFailedStatus(const Condition& c) {
  return ConditionFailed(c.ToString() + " failed");
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
    key_columns_.push_back(index);
  }
  std::set<std::string> index_names;
  if (schema_.indexes.size() > 255) invalid("more than 255 indexes");
  for (const SecondaryIndex& index : schema_.indexes) {
    if (index.name.empty() || !index_names.insert(index.name).second) {
      invalid("index name '" + index.name + "' empty or listed twice");
    }
    if (index.partition_key.empty()) {
      invalid("index " + index.name + " has no partition key");
    }
    if (index.sort_key.size() > 255) {
      invalid("index " + index.name + ": sort key too long");
    }
    for (const auto* columns : {&index.partition_key, &index.sort_key}) {
      for (const std::string& c : *columns) {
        if (ColumnIndex(c) < 0) {
          invalid("index " + index.name + ": column " + c +
                  " is not among the attributes");
        }
      }
    }
  }
}

const std::vector<std::string>& Table::QueryPartitionKey(uint64_t shape) const {
  const size_t index = (shape >> kIndexShift) & 0xff;
  return index == 0 ? schema_.partition_key : schema_.indexes[index - 1].partition_key;
}

const std::vector<std::string>& Table::QuerySortKey(uint64_t shape) const {
  const size_t index = (shape >> kIndexShift) & 0xff;
  return index == 0 ? schema_.sort_key : schema_.indexes[index - 1].sort_key;
}

int Table::ColumnIndex(const std::string& column) const {
  auto it = column_index_.find(column);
  return it == column_index_.end() ? -1 : it->second;
}

const std::string& Table::SqlFor(SqlDialect dialect, Sql kind, uint64_t shape,
                                 size_t rows) const {
  MutexLock lock(&sql_mu_);
  auto key =
      std::make_tuple(static_cast<int>(dialect), static_cast<int>(kind), shape, rows);
  auto it = sql_.find(key);
  if (it == sql_.end()) {
    it = sql_.emplace(key, BuildSql(dialect, kind, shape, rows)).first;
  }
  return it->second;  // std::map: the reference stays valid as entries are added
}

// Standard SQL that SQLite and PostgreSQL both run, with `?1`, `?2`, ... numbered in the
// order the row primitives bind their values (table_rows.cc: MaskedBinds, KeyBinds, a
// query's bounds then its limit); where the dialects differ, `dialect` says which.
// Placeholders are numbered as the text is built, one statement after another: never
// two numbering calls in one expression, whose operands C++ may evaluate in any order.
std::string Table::BuildSql(SqlDialect dialect, Sql kind, uint64_t shape,
                            size_t rows) const {
  const std::string table = Quote(schema_.table);
  std::vector<std::string> keys = schema_.partition_key;
  keys.insert(keys.end(), schema_.sort_key.begin(), schema_.sort_key.end());

  int param = 0;
  // The next placeholder. Not "?" + to_string: GCC 12 at -O3 reports a false
  // -Warray-bounds in the inlined operator+ (the Release build failed on it).
  auto next = [&param] {
    std::string placeholder(1, '?');
    placeholder += std::to_string(++param);
    return placeholder;
  };
  // "(?a, ?b, ...)": `n` placeholders.
  auto placeholders = [&](size_t n) {
    std::string out = "(";
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) out += ", ";
      out += next();
    }
    return out + ")";
  };
  // "pk1" = ?a AND ... AND "skN" = ?b: the key's columns.
  auto key_where = [&] {
    std::string out;
    for (const std::string& k : keys) {
      if (!out.empty()) out += " AND ";
      out += Quote(k);
      out += " = ";
      out += next();
    }
    return out;
  };
  // For the column-mask shapes: the masked columns in schema order, each followed by
  // " = ?n" if `assign`.
  auto masked = [&](bool assign) {
    std::string out;
    for (size_t i = 0; i < schema_.attributes.size(); ++i) {
      if ((shape & (uint64_t{1} << i)) == 0) continue;
      if (!out.empty()) out += ", ";
      out += Quote(schema_.attributes[i].column);
      if (assign) {
        out += " = ";
        out += next();
      }
    }
    return out;
  };
  // INSERT INTO t (masked columns) VALUES (?a, ...), ...: `row_count` rows.
  auto insert_head = [&](size_t row_count = 1) {
    std::string sql = "INSERT INTO " + table + " (" + masked(/*assign=*/false) + ")";
    sql += " VALUES ";
    for (size_t row = 0; row < row_count; ++row) {
      sql += row == 0 ? "(" : ", (";
      bool first = true;
      for (size_t i = 0; i < schema_.attributes.size(); ++i) {
        if ((shape & (uint64_t{1} << i)) == 0) continue;
        if (!first) sql += ", ";
        first = false;
        sql += next();
      }
      sql += ")";
    }
    return sql;
  };
  const std::string conflict_target = " ON CONFLICT " + Tuple(keys, keys.size());

  switch (kind) {
    case Sql::kGet:
      return "SELECT " + select_list_ + " FROM " + table + " WHERE " + key_where();
    case Sql::kGetForUpdate:
      // SQLite has no row locks (and needs none: one writer).
      return "SELECT " + select_list_ + " FROM " + table + " WHERE " + key_where() +
             (dialect == SqlDialect::kPostgres ? " FOR UPDATE" : "");
    case Sql::kDelete:
      return "DELETE FROM " + table + " WHERE " + key_where() + " RETURNING " +
             select_list_;
    case Sql::kInsertIfAbsent:
      return insert_head() + conflict_target + " DO NOTHING";
    case Sql::kReplace: {
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
    case Sql::kInsertReturning:
      return insert_head() + conflict_target + " DO NOTHING RETURNING " + select_list_;
    case Sql::kInsertAllIfAbsent: {
      std::string returning;
      for (const std::string& k : keys) {
        if (!returning.empty()) returning += ", ";
        returning += Quote(k);
      }
      return insert_head(rows) + conflict_target + " DO NOTHING RETURNING " + returning;
    }
    case Sql::kUpdate: {
      std::string sql = "UPDATE " + table + " SET " + masked(/*assign=*/true);
      sql += " WHERE " + key_where();  // the key's numbers after the columns'
      return sql + " RETURNING " + select_list_;
    }
    case Sql::kQuery: {
      std::string sql = "SELECT " + select_list_ + " FROM " + table + " WHERE ";
      const auto& pk = QueryPartitionKey(shape);
      for (size_t i = 0; i < pk.size(); ++i) {
        if (i > 0) sql += " AND ";
        sql += Quote(pk[i]) + " = " + next();
      }
      const auto& sk = QuerySortKey(shape);
      size_t from_len = (shape >> kFromLenShift) & 0xff;
      size_t to_len = (shape >> kToLenShift) & 0xff;
      if (from_len > 0) {
        sql += " AND " + Tuple(sk, from_len) + " >= " + placeholders(from_len);
      }
      if (to_len > 0) sql += " AND " + Tuple(sk, to_len) + " <= " + placeholders(to_len);
      bool reverse = (shape & kReverse) != 0;
      if (shape & kHasStart) {
        sql += " AND " + Tuple(sk, sk.size()) + (reverse ? " < " : " > ") +
               placeholders(sk.size());
      }
      if (!sk.empty()) {
        sql += " ORDER BY ";
        for (size_t i = 0; i < sk.size(); ++i) {
          if (i > 0) sql += ", ";
          sql += Quote(sk[i]) + (reverse ? " DESC" : " ASC");
        }
      }
      if (shape & kHasLimit) sql += " LIMIT " + next();
      return sql;
    }
    case Sql::kQueryNewest: {
      // One subquery per partition (ORDER BY and LIMIT inside each), joined with
      // UNION ALL: each is the primary key's index seek a Query of its own would be.
      std::string sql;
      for (size_t row = 0; row < rows; ++row) {
        if (row > 0) sql += " UNION ALL ";
        sql += "SELECT " + select_list_ + " FROM (SELECT " + select_list_ + " FROM " +
               table + " WHERE ";
        for (size_t i = 0; i < schema_.partition_key.size(); ++i) {
          if (i > 0) sql += " AND ";
          sql += Quote(schema_.partition_key[i]) + " = " + next();
        }
        const auto& sk = schema_.sort_key;
        if (!sk.empty()) {
          sql += " ORDER BY ";
          for (size_t i = 0; i < sk.size(); ++i) {
            if (i > 0) sql += ", ";
            sql += Quote(sk[i]) + " DESC";
          }
        }
        sql += " LIMIT 1) AS newest" + std::to_string(row);
      }
      return sql;
    }
    case Sql::kScan: {
      std::string sql = "SELECT " + select_list_ + " FROM " + table;
      if (shape & kHasStart) {
        sql += " WHERE " + Tuple(keys, keys.size()) + " > " + placeholders(keys.size());
      }
      sql += " ORDER BY ";
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i > 0) sql += ", ";
        sql += Quote(keys[i]);
      }
      if (shape & kHasLimit) sql += " LIMIT " + next();
      return sql;
    }
  }
  return "";
}

}  // namespace sheetlog
