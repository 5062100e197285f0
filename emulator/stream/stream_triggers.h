// Attaching a table to the change feed: AFTER INSERT / UPDATE / DELETE triggers that
// write a stream record in the same transaction as the change (seed 004's outbox: the
// record and the change commit together or not at all). Each backend has its own form:
// SQLite triggers, PL/pgSQL on PostgreSQL (`stream_<table>_inserts` once per INSERT
// statement, over its transition table; `stream_<table>_record` per updated or deleted
// row), writing the same records.
//
// Tables are attached at run time with AttachStream() (the application attaches `entry`
// at open: src/app/schema.h); triggers an older database got from
// emulator/schema/sqlite/003_stream.sql have the same names and form.
//
// What a trigger does, per changed row:
//   shard    = sheetlog_hash(partition key columns, in order) % stream_config.shard_count
//   sequence = SQLite: ++stream_shard.last_sequence of that shard (1 for the first
//              record; one writer at a time, so in commit order). PostgreSQL: a
//              provisional number below zero (-nextval('stream_record_provisional')),
//              which ChangeFeed replaces once the record is committed
//              (emulator/schema/postgres/012_feed_numbering.sql)
//   record   = (event name, keys JSON, new image JSON, old image JSON,
//               created_micros = sheetlog_now_micros(), the injected clock)
// An UPDATE that changes no column writes nothing (as DynamoDB). An UPDATE that changes
// the partition key writes its MODIFY record to the new key's shard. NULL columns are
// left out of keys and images; values of columns that may hold BLOBs (declared BLOB, or
// with no declared type; bytea on PostgreSQL) appear as upper-case hex text.
//
// The SQLite triggers call sheetlog_hash() and sheetlog_now_micros(), which only
// connections opened by Database have: a change made with another SQLite client fails.
// The PostgreSQL ones (their value encodings, the partition key types they hash, and
// writes by other clients): docs/cluster.md "The change feed on PostgreSQL".
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
