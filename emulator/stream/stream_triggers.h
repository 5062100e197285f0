// Attaching a table to the change feed: AFTER INSERT / UPDATE / DELETE triggers that
// write a stream record in the same transaction as the change (seed 004's outbox: the
// record and the change commit together or not at all).
//
// schema/003_stream.sql attaches `entry` with triggers of the same form as those
// generated here; any other table can be attached at run time with AttachStream().
//
// What a trigger does, per changed row:
//   shard    = sheetlog_hash(partition key columns, in order) % stream_config.shard_count
//   sequence = ++stream_shard.last_sequence of that shard (1 for the first record)
//   record   = (event name, keys JSON, new image JSON, old image JSON,
//               created_micros = sheetlog_now_micros(), the injected clock)
// An UPDATE that changes no column writes nothing (as DynamoDB). An UPDATE that changes
// the partition key writes its MODIFY record to the new key's shard. NULL columns are
// left out of keys and images; values of columns that may hold BLOBs (declared BLOB, or
// with no declared type) appear as upper-case hex text.
//
// The triggers call sheetlog_hash() and sheetlog_now_micros(), which only connections
// opened by Database have: a change made with another SQLite client fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emulator/sqlite/database.h"
#include "emulator/status.h"
#include "emulator/table/table.h"

namespace sheetlog {

struct StreamSource {
  std::string table;                       // SQL table; also the stream's name
  std::vector<std::string> partition_key;  // columns hashed into the shard; >= 1
  std::vector<std::string> sort_key;       // with partition_key: the "keys" JSON
  // Columns in the images. Empty: every column of the table.
  std::vector<std::string> columns;
};

// The stream of a table described for emulator/table.
StreamSource StreamSourceFromSchema(const TableSchema& schema);

struct StreamSettings {
  // Default: 4.
  int shard_count = 4;
  // Records older than this are pruned. Default: 24 hours, as DynamoDB Streams.
  int64_t retention_micros = 24LL * 3600 * 1000000;
};

struct StreamColumn {
  std::string name;
  bool may_hold_blob = false;  // wrapped in hex() when the value is a BLOB
};

// The three CREATE TRIGGER IF NOT EXISTS statements for `source` (separated by ";"),
// with `columns` as the image columns. Pure text generation: no validation.
std::string StreamTriggerSql(const StreamSource& source,
                             const std::vector<StreamColumn>& columns);

// Creates the stream of `source.table`: its stream_config row (if absent; an existing
// row keeps its settings) and its triggers (if absent: attaching twice is a no-op).
// InvalidArgument if the table, a key column or a listed column does not exist, if
// partition_key is empty, or if settings are out of range.
// REQUIRES: `conn` is in a write transaction (Database::Write), so a failure changes
// nothing.
Status AttachStream(SqliteConnection& conn, const StreamSource& source,
                    const StreamSettings& settings = {});

// Drops the triggers of `table` (its records, counters and checkpoints stay).
// Detaching a table that has no stream is OK.
Status DetachStream(SqliteConnection& conn, const std::string& table);

}  // namespace sheetlog
