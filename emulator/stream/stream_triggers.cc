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

std::string TriggerName(const std::string& table, const char* event) {
  return QuoteIdentifier("stream_" + table + "_" + event);
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

}  // namespace

StreamSource StreamSourceFromSchema(const TableSchema& schema) {
  StreamSource source;
  source.table = schema.table;
  source.partition_key = schema.partition_key;
  source.sort_key = schema.sort_key;
  for (const Attribute& a : schema.attributes) source.columns.push_back(a.column);
  return source;
}

std::string StreamTriggerSql(const StreamSource& source,
                             const std::vector<StreamColumn>& columns) {
  std::vector<StreamColumn> key_columns;
  for (const auto* names : {&source.partition_key, &source.sort_key}) {
    for (const std::string& name : *names) {
      auto it = std::find_if(columns.begin(), columns.end(),
                             [&](const StreamColumn& c) { return c.name == name; });
      key_columns.push_back(it != columns.end() ? *it : StreamColumn{name, false});
    }
  }
  const std::string table = QuoteIdentifier(source.table);
  std::string sql;
  sql += "CREATE TRIGGER IF NOT EXISTS " + TriggerName(source.table, "insert") +
         " AFTER INSERT ON " + table + "\n" +
         TriggerBody(source, key_columns, columns, "INSERT") + ";\n";

  std::string changed;
  for (size_t i = 0; i < columns.size(); ++i) {
    const std::string column = QuoteIdentifier(columns[i].name);
    if (i > 0) changed += " OR ";
    changed += "OLD." + column + " IS NOT NEW." + column;
  }
  sql += "CREATE TRIGGER IF NOT EXISTS " + TriggerName(source.table, "update") +
         " AFTER UPDATE ON " + table + "\nWHEN " + changed + "\n" +
         TriggerBody(source, key_columns, columns, "MODIFY") + ";\n";

  sql += "CREATE TRIGGER IF NOT EXISTS " + TriggerName(source.table, "delete") +
         " AFTER DELETE ON " + table + "\n" +
         TriggerBody(source, key_columns, columns, "REMOVE") + ";\n";
  return sql;
}

Status AttachStream(SqliteConnection& conn, const StreamSource& source,
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

  // Declared columns, in table order: name -> may hold a BLOB.
  std::vector<StreamColumn> table_columns;
  {
    ASSIGN_OR_RETURN(Statement info,
                     conn.Prepare("SELECT name, type FROM pragma_table_info(?)"));
    info.Bind(1, source.table);
    while (true) {
      ASSIGN_OR_RETURN(bool row, info.Step());
      if (!row) break;
      std::string type = info.ColumnText(1);
      std::transform(type.begin(), type.end(), type.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      table_columns.push_back(
          {info.ColumnText(0), type.empty() || type.find("BLOB") != std::string::npos});
    }
  }
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
  std::vector<StreamColumn> columns;
  if (source.columns.empty()) {
    columns = table_columns;
  } else {
    for (const std::string& name : source.columns) columns.push_back(*find(name));
  }

  ASSIGN_OR_RETURN(Statement config,
                   conn.Prepare("INSERT INTO stream_config (stream, shard_count, "
                                "retention_micros) VALUES (?, ?, ?) "
                                "ON CONFLICT (stream) DO NOTHING"));
  RETURN_IF_ERROR(config.Bind(1, source.table)
                      .Bind(2, settings.shard_count)
                      .Bind(3, settings.retention_micros)
                      .Run());
  return conn.Exec(StreamTriggerSql(source, columns));
}

Status DetachStream(SqliteConnection& conn, const std::string& table) {
  for (const char* event : {"insert", "update", "delete"}) {
    RETURN_IF_ERROR(conn.Exec("DROP TRIGGER IF EXISTS " + TriggerName(table, event)));
  }
  return Status::OK();
}

}  // namespace sheetlog
