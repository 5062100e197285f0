-- 003: the change feed (DynamoDB Streams stand-in, emulator/stream): triggers write a
-- stream record in the same transaction as every change of an attached table, so a
-- record exists exactly when its change committed (seed 004's outbox). Column-by-column
-- notes: schema/README.md "003 — change feed".
--
-- Tables are attached at run time with AttachStream() (emulator/stream/
-- stream_triggers.h), which writes the table's stream_config row and generates its
-- triggers; the application attaches its own (src/app/schema.h attaches `entry`).
-- Databases created before the emulator and the application split their schemas got
-- the `entry` row and triggers from this migration; AttachStream leaves them as they
-- are (same names, same form).

-- One row per stream (= source table). shard_count and retention are read by the
-- triggers and by ChangeFeed on every use, so changing them needs no migration.
CREATE TABLE stream_config (
  stream           TEXT    NOT NULL PRIMARY KEY,             -- source table name
  shard_count      INTEGER NOT NULL CHECK (shard_count > 0),
  retention_micros INTEGER NOT NULL CHECK (retention_micros > 0)
) WITHOUT ROWID;

-- Per-shard sequence counter: the triggers bump it and stamp the record with the new
-- value, so sequences grow by one per record within a shard and never repeat, even
-- after every record of the shard has been pruned.
CREATE TABLE stream_shard (
  stream        TEXT    NOT NULL,
  shard         INTEGER NOT NULL,
  last_sequence INTEGER NOT NULL,
  PRIMARY KEY (stream, shard)
) WITHOUT ROWID;

CREATE TABLE stream_record (
  stream         TEXT    NOT NULL,
  shard          INTEGER NOT NULL,
  sequence       INTEGER NOT NULL,  -- 1, 2, ... within (stream, shard), in commit order
  event_name     TEXT    NOT NULL CHECK (event_name IN ('INSERT', 'MODIFY', 'REMOVE')),
  keys           TEXT    NOT NULL,  -- JSON object of the primary key columns
  new_image      TEXT,              -- JSON object of the row after (NULL for REMOVE)
  old_image      TEXT,              -- JSON object of the row before (NULL for INSERT)
  created_micros INTEGER NOT NULL,  -- sheetlog_now_micros() at the change
  PRIMARY KEY (stream, shard, sequence)
) WITHOUT ROWID;
-- Prune: records older than the retention window.
CREATE INDEX stream_record_by_created ON stream_record (stream, created_micros);

-- Durable read positions: a consumer has processed (or skipped) every record of the
-- shard up to and including `sequence`.
CREATE TABLE stream_checkpoint (
  consumer       TEXT    NOT NULL,
  stream         TEXT    NOT NULL,
  shard          INTEGER NOT NULL,
  sequence       INTEGER NOT NULL,
  updated_micros INTEGER NOT NULL,
  PRIMARY KEY (consumer, stream, shard)
) WITHOUT ROWID;
