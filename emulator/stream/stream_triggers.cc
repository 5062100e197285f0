#include "emulator/stream/stream_triggers.h"

#include <algorithm>
#include <cctype>

namespace sheetlog {

namespace {

std::string QuoteIdentifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string QuoteLiteral(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string TriggerName(const std::string& table, const char* event) {
  return QuoteIdentifier("stream_" + table + "_" + event);
}

// The key columns (partition key, then sort key) as image columns.
std::vector<StreamColumn> KeyColumns(const StreamSource& source,
                                     const std::vector<StreamColumn>& columns) {
  std::vector<StreamColumn> key_columns;
  for (const auto* names : {&source.partition_key, &source.sort_key}) {
    for (const std::string& name : *names) {
      auto it = std::find_if(columns.begin(), columns.end(),
                             [&](const StreamColumn& c) { return c.name == name; });
      key_columns.push_back(it != columns.end() ? *it : StreamColumn{name, false});
    }
  }
  return key_columns;
}

// ---------------------------------------------------------------------------
// SQLite

std::string ColumnValue(const std::string& row, const StreamColumn& column) {
  std::string ref = row + "." + QuoteIdentifier(column.name);
  if (!column.may_hold_blob) return ref;
  return "CASE WHEN typeof(" + ref + ") = 'blob' THEN hex(" + ref + ") ELSE " + ref +
         " END";
}

// json_patch('{}', json_object(...)): json_patch drops members whose value is null, so
// NULL columns are left out, as absent attributes are on DynamoDB.
std::string JsonImage(const std::string& row, const std::vector<StreamColumn>& columns) {
  std::string out = "json_patch('{}', json_object(";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) out += ", ";
    out += QuoteLiteral(columns[i].name) + ", " + ColumnValue(row, columns[i]);
  }
  return out + "))";
}

std::string ShardExpression(const StreamSource& source, const std::string& row) {
  std::string out = "sheetlog_hash(";
  for (size_t i = 0; i < source.partition_key.size(); ++i) {
    if (i > 0) out += ", ";
    out += row + "." + QuoteIdentifier(source.partition_key[i]);
  }
  return out + ") % (SELECT shard_count FROM stream_config WHERE stream = " +
         QuoteLiteral(source.table) + ")";
}

std::string TriggerBody(const StreamSource& source,
                        const std::vector<StreamColumn>& key_columns,
                        const std::vector<StreamColumn>& columns,
                        const char* event_name) {
  bool remove = std::string(event_name) == "REMOVE";
  bool insert = std::string(event_name) == "INSERT";
  const std::string key_row = remove ? "OLD" : "NEW";
  const std::string stream = QuoteLiteral(source.table);
  const std::string shard = ShardExpression(source, key_row);
  std::string sql;
  sql += "BEGIN\n";
  sql += "  INSERT INTO stream_shard (stream, shard, last_sequence) VALUES (" + stream +
         ", " + shard + ", 1)\n";
  sql +=
      "  ON CONFLICT (stream, shard) DO UPDATE SET last_sequence = last_sequence + 1;\n";
  sql +=
      "  INSERT INTO stream_record (stream, shard, sequence, event_name, keys, "
      "new_image, "
      "old_image, created_micros)\n";
  sql += "  SELECT " + stream + ", s.shard, s.last_sequence, '" + event_name + "', " +
         JsonImage(key_row, key_columns) + ", " +
         (remove ? std::string("NULL") : JsonImage("NEW", columns)) + ", " +
         (insert ? std::string("NULL") : JsonImage("OLD", columns)) +
         ", sheetlog_now_micros()\n";
  sql += "  FROM stream_shard s WHERE s.stream = " + stream + " AND s.shard = " + shard +
         ";\n";
  sql += "END";
  return sql;
}

std::vector<std::string> SqliteTriggerSql(const StreamSource& source,
                                          const std::vector<StreamColumn>& columns) {
  const std::vector<StreamColumn> key_columns = KeyColumns(source, columns);
  const std::string table = QuoteIdentifier(source.table);
  std::vector<std::string> sql;
  sql.push_back("CREATE TRIGGER IF NOT EXISTS " + TriggerName(source.table, "insert") +
                " AFTER INSERT ON " + table + "\n" +
                TriggerBody(source, key_columns, columns, "INSERT"));

  std::string changed;
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string column = QuoteIdentifier(columns[i].name);
    if (i > 0) changed += " OR ";
    changed += "OLD." + column + " IS NOT NEW." + column;
  }
  sql.push_back("CREATE TRIGGER IF NOT EXISTS " + TriggerName(source.table, "update") +
                " AFTER UPDATE ON " + table + "\nWHEN " + changed + "\n" +
                TriggerBody(source, key_columns, columns, "MODIFY"));

  sql.push_back("CREATE TRIGGER IF NOT EXISTS " + TriggerName(source.table, "delete") +
                " AFTER DELETE ON " + table + "\n" +
                TriggerBody(source, key_columns, columns, "REMOVE"));
  return sql;
}

// ---------------------------------------------------------------------------
// PostgreSQL

// The PL/pgSQL function the three triggers of `table` run.
std::string PostgresFunctionName(const std::string& table) {
  return QuoteIdentifier("stream_" + table + "_record");
}

// A column's value as SQLite's image holds it.
std::string PostgresImageValue(const std::string& row, const StreamColumn& column) {
  const std::string ref = row + "." + QuoteIdentifier(column.name);
  if (column.type == "bytea") return "upper(encode(" + ref + ", 'hex'))";
  if (column.type == "boolean") return ref + "::integer";
  if (column.type == "json" || column.type == "jsonb") return ref + "::text";
  return ref;
}

// The partition key column's bytes as SQLite's sheetlog_hash reads them; empty if
// its type has no such form.
std::string PostgresHashArgument(const std::string& row, const StreamColumn& column) {
  const std::string ref = row + "." + QuoteIdentifier(column.name);
  if (column.type == "text" || column.type == "character varying") {
    return "convert_to(" + ref + ", 'UTF8')";
  }
  if (column.type == "smallint" || column.type == "integer" || column.type == "bigint") {
    return "convert_to(" + ref + "::text, 'UTF8')";
  }
  if (column.type == "bytea") return ref;
  return "";
}

// jsonb_strip_nulls drops members whose value is null, as json_patch does on SQLite.
// jsonb_build_object takes at most 100 arguments: 50 columns each, joined with ||.
std::string PostgresJsonImage(const std::string& row,
                              const std::vector<StreamColumn>& columns) {
  constexpr size_t kPerCall = 50;
  std::string out = "jsonb_strip_nulls(jsonb_build_object(";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i > 0 && i % kPerCall == 0) out += ") || jsonb_build_object(";
    if (i % kPerCall != 0) out += ", ";
    out += QuoteLiteral(columns[i].name) + ", " + PostgresImageValue(row, columns[i]);
  }
  return out + "))::text";
}

std::string PostgresShardExpression(const StreamSource& source,
                                    const std::vector<StreamColumn>& key_columns,
                                    const std::string& row) {
  std::string out = "sheetlog_hash_bytes(";
  for (size_t i = 0; i < source.partition_key.size(); ++i) {
    if (i > 0) out += ", ";
    out += PostgresHashArgument(row, key_columns[i]);
  }
  return out + ") % (SELECT shard_count FROM stream_config WHERE stream = " +
         QuoteLiteral(source.table) + ")";
}

// The statement-level function the INSERT trigger of `table` runs.
std::string PostgresInsertsFunctionName(const std::string& table) {
  return QuoteIdentifier("stream_" + table + "_inserts");
}

// The transition table the INSERT trigger reads its statement's new rows from.
constexpr const char* kPostgresNewRows = "sheetlog_new_rows";

// Records get a provisional sequence, below zero and unique, in the order the writes
// ran; ChangeFeed numbers them once committed (emulator/schema/postgres/
// 012_feed_numbering.sql). No row every writer of a shard locks until its commit.
constexpr const char* kPostgresProvisionalSequence =
    "-nextval('stream_record_provisional')";

std::vector<std::string> PostgresTriggerSql(const StreamSource& source,
                                            const std::vector<StreamColumn>& columns) {
  const std::vector<StreamColumn> key_columns = KeyColumns(source, columns);
  const std::string table = QuoteIdentifier(source.table);
  const std::string stream = QuoteLiteral(source.table);
  const std::string function = PostgresFunctionName(source.table);
  const std::string inserts = PostgresInsertsFunctionName(source.table);
  // Read back by PostgresDatabase with the COMMIT, to wake the node's readers.
  const std::string feed_written =
      "  PERFORM set_config('sheetlog.feed_written', 'on', true);\n";

  // INSERT: once per statement, every new row's record in one INSERT ... SELECT (a
  // batch of appends is one statement: one trigger call, one plan). The rows are taken
  // in key order before the provisional numbers are drawn (OFFSET 0 keeps the sort
  // below the projection), so one key's rows of a statement keep their order.
  std::string key_order;
  for (const StreamColumn& column : key_columns) {
    key_order += (key_order.empty() ? "" : ", ") + std::string("n.") +
                 QuoteIdentifier(column.name);
  }
  std::string inserts_body;
  inserts_body += "CREATE OR REPLACE FUNCTION " + inserts +
                  "() RETURNS trigger LANGUAGE plpgsql AS $sheetlog$\nBEGIN\n";
  inserts_body +=
      "  INSERT INTO stream_record (stream, shard, sequence, event_name, keys, "
      "new_image, old_image, created_micros)\n  SELECT " +
      stream + ", r.shard, " + kPostgresProvisionalSequence +
      ", 'INSERT', r.keys, r.new_image, NULL, r.created_micros\n  FROM (SELECT " +
      PostgresShardExpression(source, key_columns, "n") + " AS shard,\n    " +
      PostgresJsonImage("n", key_columns) + " AS keys,\n    " +
      PostgresJsonImage("n", columns) +
      " AS new_image,\n    sheetlog_now_micros() AS created_micros\n    FROM " +
      kPostgresNewRows + " n ORDER BY " + key_order + " OFFSET 0) r;\n";
  // A statement that inserted nothing (ON CONFLICT DO NOTHING) wakes nobody.
  inserts_body += "  IF FOUND THEN\n  " + feed_written + "  END IF;\n";
  inserts_body += "  RETURN NULL;\nEND\n$sheetlog$";

  // UPDATE and DELETE: once per row (an UPDATE's old and new rows are paired only
  // there).
  auto record = [&](const char* event, const std::string& key_row,
                    const std::string& new_image, const std::string& old_image) {
    return "    INSERT INTO stream_record (stream, shard, sequence, event_name, keys,"
           " new_image, old_image, created_micros)\n    VALUES (" +
           stream + ", " + PostgresShardExpression(source, key_columns, key_row) + ", " +
           kPostgresProvisionalSequence + ", '" + event + "', " +
           PostgresJsonImage(key_row, key_columns) + ",\n      " + new_image +
           ",\n      " + old_image + ", sheetlog_now_micros());\n";
  };
  std::string body;
  body += "CREATE OR REPLACE FUNCTION " + function +
          "() RETURNS trigger LANGUAGE plpgsql AS $sheetlog$\nBEGIN\n";
  body += "  IF TG_OP = 'UPDATE' THEN\n" + record("MODIFY", "NEW",
                                                  PostgresJsonImage("NEW", columns),
                                                  PostgresJsonImage("OLD", columns));
  body += "  ELSE\n" + record("REMOVE", "OLD", "NULL", PostgresJsonImage("OLD", columns));
  body += "  END IF;\n";
  body += feed_written;
  body += "  RETURN NULL;\nEND\n$sheetlog$";

  std::string changed;
  for (size_t i = 0; i < columns.size(); ++i) {
    std::string column = QuoteIdentifier(columns[i].name);
    // json has no equality operator: compared as text.
    const std::string cast = columns[i].type == "json" ? "::text" : "";
    if (i > 0) changed += " OR ";
    changed += "OLD." + column + cast + " IS DISTINCT FROM NEW." + column + cast;
  }
  return {inserts_body, body,
          "CREATE TRIGGER " + TriggerName(source.table, "insert") + " AFTER INSERT ON " +
              table + " REFERENCING NEW TABLE AS " + kPostgresNewRows +
              " FOR EACH STATEMENT EXECUTE FUNCTION " + inserts + "()",
          "CREATE TRIGGER " + TriggerName(source.table, "update") + " AFTER UPDATE ON " +
              table + " FOR EACH ROW WHEN (" + (changed.empty() ? "false" : changed) +
              ") EXECUTE FUNCTION " + function + "()",
          "CREATE TRIGGER " + TriggerName(source.table, "delete") + " AFTER DELETE ON " +
              table + " FOR EACH ROW EXECUTE FUNCTION " + function + "()"};
}

// Declared columns of `table`, in table order; empty if there is no such table.
Result<std::vector<StreamColumn>> TableColumns(Connection& conn,
                                               const std::string& table) {
  std::vector<StreamColumn> columns;
  const bool sqlite = conn.dialect() == SqlDialect::kSqlite;
  const char* sql =
      sqlite ? "SELECT name, type FROM pragma_table_info(?1)"
             : "SELECT a.attname, format_type(a.atttypid, NULL) FROM pg_attribute a "
               "WHERE a.attrelid = to_regclass(quote_ident(?1)) AND a.attnum > 0 AND "
               "NOT a.attisdropped ORDER BY a.attnum";
  RETURN_IF_ERROR(
      conn.RunSql(
              sql, {table},
              [&](const SqlRow& row) {
                std::string type = row.Text(1);
                if (sqlite) {
                  std::transform(
                      type.begin(), type.end(), type.begin(),
                      [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
                  columns.push_back({row.Text(0), type.empty() || type.find("BLOB") !=
                                                                      std::string::npos});
                } else {
                  columns.push_back({row.Text(0), type == "bytea", std::move(type)});
                }
                return true;
              })
          .status());
  return columns;
}

// The advisory lock key under which PostgreSQL processes attach streams ("stream").
constexpr int64_t kAttachLock = 0x73747265616d;

// On PostgreSQL: whether the three triggers of `table` exist, under the attach lock
// (held until the transaction ends), so that processes attaching at once create them
// once.
Result<bool> PostgresTriggersExist(Connection& conn, const std::string& table) {
  RETURN_IF_ERROR(
      conn.RunSql("SELECT pg_advisory_xact_lock(?1)", {kAttachLock}).status());
  // Triggers of the form before provisional numbering (schema 012) ran a row-level
  // function for every event and had no `stream_<table>_inserts`: they are replaced.
  int64_t found = 0;
  RETURN_IF_ERROR(
      conn.RunSql("SELECT COUNT(*) FROM pg_trigger WHERE tgrelid = "
                  "to_regclass(quote_ident(?1)) AND tgname IN (?2, ?3, ?4) AND "
                  "to_regprocedure(quote_ident(?5) || '()') IS NOT NULL",
                  {table, "stream_" + table + "_insert", "stream_" + table + "_update",
                   "stream_" + table + "_delete", "stream_" + table + "_inserts"},
                  [&](const SqlRow& row) {
                    found = row.Int(0);
                    return false;
                  })
          .status());
  return found == 3;
}

}  // namespace

StreamSource StreamSourceFromSchema(const TableSchema& schema) {
  StreamSource source;
  source.table = schema.table;
  source.partition_key = schema.partition_key;
  source.sort_key = schema.sort_key;
  for (const Attribute& a : schema.attributes) source.columns.push_back(a.column);
  return source;
}

std::vector<std::string> StreamTriggerSql(SqlDialect dialect, const StreamSource& source,
                                          const std::vector<StreamColumn>& columns) {
  return dialect == SqlDialect::kSqlite ? SqliteTriggerSql(source, columns)
                                        : PostgresTriggerSql(source, columns);
}

Status AttachStream(Connection& conn, const StreamSource& source,
                    const StreamSettings& settings) {
  if (source.table.empty()) return InvalidArgument("stream source has no table name");
  if (source.partition_key.empty()) {
    return InvalidArgument("stream source " + source.table + " has no partition key");
  }
  if (settings.shard_count < 1 || settings.shard_count > 1024) {
    return InvalidArgument("shard_count must be in 1..1024, got " +
                           std::to_string(settings.shard_count));
  }
  if (settings.retention_micros <= 0) {
    return InvalidArgument("retention must be positive");
  }
  const bool postgres = conn.dialect() == SqlDialect::kPostgres;
  // PostgreSQL cuts identifiers at 63 bytes: "stream_<table>_inserts" must fit whole.
  constexpr size_t kPostgresMaxTableName =
      63 - std::string_view("stream__inserts").size();
  if (postgres && source.table.size() > kPostgresMaxTableName) {
    return InvalidArgument("a table with a stream on PostgreSQL has a name of at most " +
                           std::to_string(kPostgresMaxTableName) +
                           " bytes: " + source.table);
  }

  ASSIGN_OR_RETURN(std::vector<StreamColumn> table_columns,
                   TableColumns(conn, source.table));
  if (table_columns.empty()) {
    return InvalidArgument("no table named " + source.table + " to attach a stream to");
  }
  auto find = [&](const std::string& name) {
    return std::find_if(table_columns.begin(), table_columns.end(),
                        [&](const StreamColumn& c) { return c.name == name; });
  };
  for (const auto* names : {&source.partition_key, &source.sort_key, &source.columns}) {
    for (const std::string& name : *names) {
      if (find(name) == table_columns.end()) {
        return InvalidArgument("table " + source.table + " has no column " + name);
      }
    }
  }
  if (postgres) {
    for (const std::string& name : source.partition_key) {
      if (PostgresHashArgument("NEW", *find(name)).empty()) {
        return InvalidArgument(
            "partition key column " + name + " of " + source.table + " is of type " +
            find(name)->type +
            ", whose shard hash is not defined as on SQLite: use text, varchar, an "
            "integer type or bytea");
      }
    }
  }
  std::vector<StreamColumn> columns;
  if (source.columns.empty()) {
    columns = table_columns;
  } else {
    for (const std::string& name : source.columns) columns.push_back(*find(name));
  }

  RETURN_IF_ERROR(
      conn.RunSql("INSERT INTO stream_config (stream, shard_count, "
                  "retention_micros) VALUES (?1, ?2, ?3) "
                  "ON CONFLICT (stream) DO NOTHING",
                  {source.table, settings.shard_count, settings.retention_micros})
          .status());
  if (postgres) {
    ASSIGN_OR_RETURN(bool exist, PostgresTriggersExist(conn, source.table));
    if (exist) return Status::OK();
    // Whatever part of them exists (none, unless created by hand) is replaced.
    RETURN_IF_ERROR(DetachStream(conn, source.table));
  }
  for (const std::string& sql : StreamTriggerSql(conn.dialect(), source, columns)) {
    RETURN_IF_ERROR(conn.RunSql(sql, {}).status());
  }
  return Status::OK();
}

Status DetachStream(Connection& conn, const std::string& table) {
  if (conn.dialect() == SqlDialect::kSqlite) {
    for (const char* event : {"insert", "update", "delete"}) {
      RETURN_IF_ERROR(
          conn.RunSql("DROP TRIGGER IF EXISTS " + TriggerName(table, event), {})
              .status());
    }
    return Status::OK();
  }
  // PostgreSQL's triggers belong to their table: DROP TRIGGER ... ON a table that does
  // not exist fails even with IF EXISTS (and the table's triggers went with it).
  bool exists = false;
  RETURN_IF_ERROR(conn.RunSql("SELECT to_regclass(quote_ident(?1)) IS NOT NULL", {table},
                              [&](const SqlRow& row) {
                                exists = row.Int(0) != 0;  // a boolean reads as 1/0
                                return false;
                              })
                      .status());
  if (exists) {
    for (const char* event : {"insert", "update", "delete"}) {
      RETURN_IF_ERROR(conn.RunSql("DROP TRIGGER IF EXISTS " + TriggerName(table, event) +
                                      " ON " + QuoteIdentifier(table),
                                  {})
                          .status());
    }
  }
  for (const std::string& function :
       {PostgresFunctionName(table), PostgresInsertsFunctionName(table)}) {
    RETURN_IF_ERROR(
        conn.RunSql("DROP FUNCTION IF EXISTS " + function + "()", {}).status());
  }
  return Status::OK();
}

}  // namespace sheetlog
