// The two dialects' migrations make the same schema at every version (issue "One
// storage seam"; docs/cluster.md "Migrations and schema versions": "a version means the
// same tables on both"). For each version, from the first to the newest, a SQLite
// database and a PostgreSQL database are migrated to it (ApplyMigrations' target
// version, through each backend's Open; one database per dialect, stepped version by
// version) and compared:
//   - the set of tables;
//   - each table's columns, in order, each with a coarse type class (SQLite's affinity
//     of the declared type; PostgreSQL's data_type: bigint/integer -> integer, text ->
//     text, double precision/real -> real, bytea -> blob) and NOT NULL (a primary key
//     column counts as NOT NULL: PostgreSQL makes it so, and a SQLite rowid table's
//     non-integer key would take a NULL no code writes);
//   - the primary key's columns, in order;
//   - the unique indexes' columns, in order, and whether each is partial (names aside).
// SQLite is read with PRAGMA table_info / index_list / index_info, PostgreSQL with
// information_schema.columns and pg_index / pg_attribute. What exists in one dialect
// only, on purpose, is in kDialectOnly with the reason.
//
// Named Postgres*: ctest gives it the shared test PostgreSQL server (CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "emulator/postgres/postgres_database.h"
#include "emulator/sqlite/database.h"
#include "emulator/table/connection.h"
#include "emulator/table/migrations.h"
#include "src/app/schema.h"
#include "tests/support/postgres_test_server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

// A table, or a column (`column` not empty), that exists in one dialect only.
struct DialectOnly {
  SqlDialect dialect;
  const char* table;
  const char* column;
  const char* reason;
};

// Everything the comparison leaves out, each with why. A column named here must exist
// in its dialect at the newest version (so the list cannot outlive its reason).
constexpr DialectOnly kDialectOnly[] = {
    {SqlDialect::kPostgres, "queue_message", "seq",
     "insertion order (a bigint identity, the last column of both indexes) where "
     "SQLite's code uses the table's rowid: messages sent in one microsecond are "
     "received and listed in the order sent (schema/README.md, 002)"},
    {SqlDialect::kSqlite, "sqlite_sequence", "",
     "SQLite's own: AUTOINCREMENT's counters (no table uses AUTOINCREMENT today)"},
    {SqlDialect::kSqlite, "sqlite_stat1", "", "SQLite's own: ANALYZE's statistics"},
    {SqlDialect::kSqlite, "sqlite_stat4", "", "SQLite's own: ANALYZE's statistics"},
};

bool LeftOut(SqlDialect dialect, const std::string& table, const std::string& column) {
  return std::any_of(
      std::begin(kDialectOnly), std::end(kDialectOnly), [&](const DialectOnly& only) {
        return only.dialect == dialect && only.table == table && only.column == column;
      });
}

const char* DialectName(SqlDialect dialect) {
  return dialect == SqlDialect::kPostgres ? "PostgreSQL" : "SQLite";
}

// A table as the comparison sees it.
struct TableShape {
  // "name class" or "name class not null", in column order.
  std::vector<std::string> columns;
  std::vector<std::string> primary_key;
  // "(a, b)" or "(a, b) partial".
  std::set<std::string> unique;
};
using SchemaShape = std::map<std::string, TableShape>;

std::string DescribeTable(const TableShape& table) {
  std::string out = "columns:";
  for (const std::string& c : table.columns) out += "\n  " + c;
  out += "\nprimary key:";
  for (const std::string& c : table.primary_key) out += " " + c;
  out += "\nunique:";
  for (const std::string& u : table.unique) out += " " + u;
  return out;
}

std::string ColumnList(const std::vector<std::string>& columns) {
  std::string out = "(";
  for (size_t i = 0; i < columns.size(); ++i) out += (i > 0 ? ", " : "") + columns[i];
  return out + ")";
}

// SQLite's affinity of a declared type (its documented rules, in their order).
std::string SqliteTypeClass(std::string declared) {
  std::transform(declared.begin(), declared.end(), declared.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  auto has = [&](const char* part) { return declared.find(part) != std::string::npos; };
  if (has("INT")) return "integer";
  if (has("CHAR") || has("CLOB") || has("TEXT")) return "text";
  if (has("BLOB") || declared.empty()) return "blob";
  if (has("REAL") || has("FLOA") || has("DOUB")) return "real";
  return "numeric";
}

std::string PostgresTypeClass(const std::string& data_type) {
  static const std::map<std::string, std::string> kClasses = {
      {"smallint", "integer"},
      {"integer", "integer"},
      {"bigint", "integer"},
      {"text", "text"},
      {"character varying", "text"},
      {"character", "text"},
      {"double precision", "real"},
      {"real", "real"},
      {"bytea", "blob"},
      {"numeric", "numeric"},
  };
  auto it = kClasses.find(data_type);
  return it == kClasses.end() ? data_type : it->second;  // boolean, ...: no SQLite twin
}

std::string ColumnShape(const std::string& name, const std::string& type_class,
                        bool not_null) {
  return name + " " + type_class + (not_null ? " not null" : "");
}

// Rows of `sql` on `db`, in a read transaction.
void ReadRows(Transactions& db, const std::string& sql,
              const std::function<void(const SqlRow&)>& row) {
  ASSERT_OK(db.Read([&](Connection& c) -> Status {
    return c
        .RunSql(sql, {},
                [&](const SqlRow& r) {
                  row(r);
                  return true;
                })
        .status();
  }));
}

SchemaShape ReadSqliteShape(Transactions& db) {
  SchemaShape shape;
  constexpr SqlDialect kDialect = SqlDialect::kSqlite;
  std::map<std::string, std::map<int64_t, std::string>> keys;  // table -> pk position
  ReadRows(db,
           "SELECT m.name, p.name, p.type, p.\"notnull\", p.pk"
           " FROM sqlite_master AS m, pragma_table_info(m.name) AS p"
           " WHERE m.type = 'table' ORDER BY m.name, p.cid",
           [&](const SqlRow& r) {
             const std::string table = r.Text(0);
             const std::string column = r.Text(1);
             if (LeftOut(kDialect, table, "") || LeftOut(kDialect, table, column)) return;
             const int64_t key_position = r.Int(4);
             shape[table].columns.push_back(ColumnShape(
                 column, SqliteTypeClass(r.Text(2)), r.Int(3) != 0 || key_position > 0));
             if (key_position > 0) keys[table][key_position] = column;
           });
  for (auto& [table, columns] : keys) {
    for (auto& [position, column] : columns) shape[table].primary_key.push_back(column);
  }
  // Unique indexes other than the primary key's (origin 'pk'): CREATE UNIQUE INDEX
  // ('c') and UNIQUE constraints ('u').
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> unique;
  std::map<std::pair<std::string, std::string>, bool> partial;
  ReadRows(db,
           "SELECT m.name, l.name, l.partial, COALESCE(i.name, '(expression)')"
           " FROM sqlite_master AS m, pragma_index_list(m.name) AS l,"
           " pragma_index_info(l.name) AS i"
           " WHERE m.type = 'table' AND l.\"unique\" = 1 AND l.origin <> 'pk'"
           " ORDER BY m.name, l.name, i.seqno",
           [&](const SqlRow& r) {
             const std::string table = r.Text(0);
             if (LeftOut(kDialect, table, "")) return;
             const std::pair<std::string, std::string> index(table, r.Text(1));
             unique[index].push_back(r.Text(3));
             partial[index] = r.Int(2) != 0;
           });
  for (const auto& [index, columns] : unique) {
    shape[index.first].unique.insert(ColumnList(columns) +
                                     (partial[index] ? " partial" : ""));
  }
  return shape;
}

SchemaShape ReadPostgresShape(Transactions& db) {
  SchemaShape shape;
  constexpr SqlDialect kDialect = SqlDialect::kPostgres;
  ReadRows(db,
           "SELECT table_name, column_name, data_type, is_nullable"
           " FROM information_schema.columns WHERE table_schema = current_schema()"
           " ORDER BY table_name, ordinal_position",
           [&](const SqlRow& r) {
             const std::string table = r.Text(0);
             const std::string column = r.Text(1);
             if (LeftOut(kDialect, table, "") || LeftOut(kDialect, table, column)) return;
             shape[table].columns.push_back(
                 ColumnShape(column, PostgresTypeClass(r.Text(2)), r.Text(3) == "NO"));
           });
  // The primary key and the unique indexes, each index's key columns in order.
  struct Index {
    std::string table;
    bool primary = false;
    bool partial = false;
    std::vector<std::string> columns;
  };
  std::map<int64_t, Index> indexes;
  ReadRows(
      db,
      "SELECT t.relname::text, i.indexrelid::bigint,"
      " CASE WHEN i.indisprimary THEN 1 ELSE 0 END,"
      " CASE WHEN i.indpred IS NULL THEN 0 ELSE 1 END,"
      " COALESCE(a.attname::text, '(expression)')"
      " FROM pg_index AS i"
      " JOIN pg_class AS t ON t.oid = i.indrelid"
      " JOIN pg_namespace AS s ON s.oid = t.relnamespace"
      " CROSS JOIN LATERAL unnest(i.indkey::smallint[]) WITH ORDINALITY AS k(attnum, n)"
      " LEFT JOIN pg_attribute AS a ON a.attrelid = t.oid AND a.attnum = k.attnum"
      " WHERE s.nspname = current_schema() AND (i.indisprimary OR i.indisunique)"
      " AND k.n <= i.indnkeyatts"
      " ORDER BY t.relname, i.indexrelid, k.n",
      [&](const SqlRow& r) {
        Index& index = indexes[r.Int(1)];
        index.table = r.Text(0);
        index.primary = r.Int(2) != 0;
        index.partial = r.Int(3) != 0;
        index.columns.push_back(r.Text(4));
      });
  for (const auto& [oid, index] : indexes) {
    if (LeftOut(kDialect, index.table, "")) continue;
    if (index.primary) {
      shape[index.table].primary_key = index.columns;
    } else {
      shape[index.table].unique.insert(ColumnList(index.columns) +
                                       (index.partial ? " partial" : ""));
    }
  }
  return shape;
}

// "NNN name" of each migration, in version order.
std::vector<std::string> VersionsOf(std::vector<Migration> migrations) {
  std::sort(migrations.begin(), migrations.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  std::vector<std::string> out;
  for (const Migration& m : migrations) {
    out.push_back(std::to_string(m.version) + " " + m.name);
  }
  return out;
}

std::vector<Migration> AllMigrations(SqlDialect dialect) {
  std::vector<Migration> all = EmulatorMigrations(dialect);
  const std::vector<Migration>& app = SheetlogMigrations(dialect);
  all.insert(all.end(), app.begin(), app.end());
  std::sort(all.begin(), all.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  return all;
}

TEST(PostgresSchemaParityTest, BothDialectsHaveTheSameVersionsWithTheSameNames) {
  EXPECT_EQ(VersionsOf(EmulatorMigrations(SqlDialect::kSqlite)),
            VersionsOf(EmulatorMigrations(SqlDialect::kPostgres)))
      << "emulator/schema/sqlite/ and emulator/schema/postgres/";
  EXPECT_EQ(VersionsOf(SheetlogMigrations(SqlDialect::kSqlite)),
            VersionsOf(SheetlogMigrations(SqlDialect::kPostgres)))
      << "schema/sqlite/ and schema/postgres/";
}

TEST(PostgresSchemaParityTest,
     BothDialectsHaveTheSameTablesColumnsAndKeysAtEveryVersion) {
  testing::TempDir dir;
  testing::PostgresTestDatabase server("schema_parity");
  ASSERT_FALSE(server.conninfo().empty());
  const std::vector<Migration> versions = AllMigrations(SqlDialect::kSqlite);
  ASSERT_FALSE(versions.empty());
  for (const Migration& m : versions) {
    SCOPED_TRACE(std::string("at version ") + std::to_string(m.version) + " (" + m.name +
                 ")");
    Database::Options sqlite_options;
    sqlite_options.path = dir.File("parity.db");
    sqlite_options.sync = SyncMode::kOff;
    sqlite_options.migrations = SheetlogMigrations(SqlDialect::kSqlite);
    sqlite_options.target_version = m.version;
    Result<std::unique_ptr<Database>> sqlite = Database::Open(sqlite_options);
    ASSERT_OK(sqlite);
    ASSERT_EQ((*sqlite)->schema_version(), m.version);

    PostgresDatabase::Options postgres_options;
    postgres_options.conninfo = server.conninfo();
    postgres_options.migrations = SheetlogMigrations(SqlDialect::kPostgres);
    postgres_options.target_version = m.version;
    Result<std::unique_ptr<PostgresDatabase>> postgres =
        PostgresDatabase::Open(postgres_options);
    ASSERT_OK(postgres);
    ASSERT_EQ((*postgres)->schema_version(), m.version);

    const SchemaShape sqlite_shape = ReadSqliteShape(**sqlite);
    const SchemaShape postgres_shape = ReadPostgresShape(**postgres);
    std::set<std::string> tables;
    for (const auto& [table, shape] : sqlite_shape) tables.insert(table);
    for (const auto& [table, shape] : postgres_shape) tables.insert(table);
    for (const std::string& table : tables) {
      auto in_sqlite = sqlite_shape.find(table);
      auto in_postgres = postgres_shape.find(table);
      if (in_sqlite == sqlite_shape.end() || in_postgres == postgres_shape.end()) {
        const SqlDialect has =
            in_sqlite == sqlite_shape.end() ? SqlDialect::kPostgres : SqlDialect::kSqlite;
        ADD_FAILURE() << "table " << table << " exists in " << DialectName(has)
                      << " only";
        continue;
      }
      EXPECT_EQ(DescribeTable(in_sqlite->second), DescribeTable(in_postgres->second))
          << "table " << table << ": SQLite's (left) and PostgreSQL's (right) differ";
    }
  }

  // Every column left out is there at the newest version, in its dialect.
  Database::Options sqlite_options;
  sqlite_options.path = dir.File("parity.db");
  sqlite_options.sync = SyncMode::kOff;
  sqlite_options.migrations = SheetlogMigrations(SqlDialect::kSqlite);
  Result<std::unique_ptr<Database>> sqlite = Database::Open(sqlite_options);
  ASSERT_OK(sqlite);
  PostgresDatabase::Options postgres_options;
  postgres_options.conninfo = server.conninfo();
  postgres_options.migrations = SheetlogMigrations(SqlDialect::kPostgres);
  Result<std::unique_ptr<PostgresDatabase>> postgres =
      PostgresDatabase::Open(postgres_options);
  ASSERT_OK(postgres);
  for (const DialectOnly& only : kDialectOnly) {
    if (std::string(only.column).empty()) continue;
    Transactions& db = only.dialect == SqlDialect::kSqlite
                           ? static_cast<Transactions&>(**sqlite)
                           : static_cast<Transactions&>(**postgres);
    const std::string sql =
        only.dialect == SqlDialect::kSqlite
            ? std::string("SELECT COUNT(*) FROM pragma_table_info('") + only.table +
                  "') WHERE name = '" + only.column + "'"
            : std::string(
                  "SELECT COUNT(*) FROM information_schema.columns WHERE "
                  "table_schema = current_schema() AND table_name = '") +
                  only.table + "' AND column_name = '" + only.column + "'";
    int64_t found = 0;
    ReadRows(db, sql, [&](const SqlRow& r) { found = r.Int(0); });
    EXPECT_EQ(found, 1) << DialectName(only.dialect) << "'s " << only.table << "."
                        << only.column << " is left out of the comparison ("
                        << only.reason << ") but is no longer there";
  }
}

}  // namespace
}  // namespace sheetlog
