// Attaching a table to the change feed: AFTER INSERT / UPDATE / DELETE triggers that
// write a stream record in the same transaction as the change (seed 004's outbox: the
// record and the change commit together or not at all). Each backend has its own form:
// SQLite triggers, PL/pgSQL on PostgreSQL (one function per table, `stream_<table>_
// record`, run by three triggers), writing the same records.
//
// schema/003_stream.sql attaches `entry` with triggers of the same form as those
// generated here; any other table can be attached at run time with AttachStream().
//
// What a trigger does, per changed row:
//   shard    = sheetlog_hash(partition key columns, in order) % stream_config.shard_count
//   sequence = ++stream_shard.last_sequence of that shard (1 for the first record); on
//              PostgreSQL the counter row stays locked until commit, so sequences are
//              in commit order per shard (emulator/postgres/schema/003_stream.sql)
//   record   = (event name, keys JSON, new image JSON, old image JSON,
//               created_micros = sheetlog_now_micros(), the injected clock)
// An UPDATE that changes no column writes nothing (as DynamoDB). An UPDATE that changes
// the partition key writes its MODIFY record to the new key's shard. NULL columns are
// left out of keys and images; values of columns that may hold BLOBs (declared BLOB, or
// with no declared type; bytea on PostgreSQL) appear as upper-case hex text. On
// PostgreSQL a boolean appears as 1/0 and json/jsonb as its text, as SQLite stores
// them; partition key columns must be text, varchar, an integer type or bytea there
// (hashed as SQLite hashes them: the text, the decimal digits, the bytes).
//
// The SQLite triggers call sheetlog_hash() and sheetlog_now_micros(), which only
// connections opened by Database have: a change made with another SQLite client fails.
// The PostgreSQL ones call the SQL functions of emulator/postgres/schema/003_stream.sql
// (any client may write; without PostgresDatabase's clock setting the server's clock
// stamps the record, and its commit wakes no node's readers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emulator/status.h"
#include "emulator/table/connection.h"
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
  bool may_hold_blob = false;  // SQLite: wrapped in hex() when the value is a BLOB
  // PostgreSQL: the column's type as format_type() names it ("text", "bigint",
  // "bytea"...); empty on SQLite.
  std::string type = {};
};

// The statements creating the triggers of `source` in `dialect` (SQLite: three CREATE
// TRIGGER IF NOT EXISTS; PostgreSQL: CREATE OR REPLACE FUNCTION, then three CREATE
// TRIGGER), with `columns` as the image columns. Pure text generation: no validation.
std::vector<std::string> StreamTriggerSql(SqlDialect dialect, const StreamSource& source,
                                          const std::vector<StreamColumn>& columns);

// Creates the stream of `source.table`: its stream_config row (if absent; an existing
// row keeps its settings) and its triggers (if absent: attaching twice is a no-op; on
// PostgreSQL, processes attaching at once are serialised by an advisory lock).
// InvalidArgument if the table, a key column or a listed column does not exist, if
// partition_key is empty, if settings are out of range, or (PostgreSQL) if a partition
// key column has a type whose hash is not defined as SQLite's.
// REQUIRES: `conn` is in a write transaction (Transactions::Write), so a failure
// changes nothing.
Status AttachStream(Connection& conn, const StreamSource& source,
                    const StreamSettings& settings = {});

// Drops the triggers of `table` (its records, counters and checkpoints stay).
// Detaching a table that has no stream is OK.
Status DetachStream(Connection& conn, const std::string& table);

}  // namespace sheetlog
