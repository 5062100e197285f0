-- 003: the change feed (DynamoDB Streams stand-in, emulator/stream) and the `entry`
-- table's stream: triggers write a stream record in the same transaction as every
-- change, so a record exists exactly when its change committed (seed 004's outbox).
-- Column-by-column notes: schema/README.md "003 — change feed".
--
-- Other tables are attached at run time with AttachStream() (emulator/stream/
-- stream_triggers.h), which generates triggers of this same form.

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

-- The `entry` stream: 4 shards by the partition key (sheet_id, segment), so all entries
-- of a segment are in one shard, in order (seed 000); 24 hours of retention.
INSERT INTO stream_config (stream, shard_count, retention_micros)
VALUES ('entry', 4, 86400000000);

-- NULL columns are left out of the images (json_patch drops null members), as
-- DynamoDB leaves out attributes that are not present.
CREATE TRIGGER IF NOT EXISTS stream_entry_insert AFTER INSERT ON entry
BEGIN
  INSERT INTO stream_shard (stream, shard, last_sequence)
  VALUES ('entry', sheetlog_hash(NEW.sheet_id, NEW.segment) %
                   (SELECT shard_count FROM stream_config WHERE stream = 'entry'), 1)
  ON CONFLICT (stream, shard) DO UPDATE SET last_sequence = last_sequence + 1;
  INSERT INTO stream_record (stream, shard, sequence, event_name, keys, new_image,
                             old_image, created_micros)
  SELECT 'entry', s.shard, s.last_sequence, 'INSERT',
         json_patch('{}', json_object('sheet_id', NEW.sheet_id, 'segment', NEW.segment,
                                      'num', NEW.num)),
         json_patch('{}', json_object('sheet_id', NEW.sheet_id, 'segment', NEW.segment,
                                      'num', NEW.num, 'seq', NEW.seq,
                                      'created', NEW.created, 'external', NEW.external,
                                      'type', NEW.type, 'version', NEW.version,
                                      'body', NEW.body,
                                      'snapshot_root', NEW.snapshot_root)),
         NULL, sheetlog_now_micros()
  FROM stream_shard s
  WHERE s.stream = 'entry'
    AND s.shard = sheetlog_hash(NEW.sheet_id, NEW.segment) %
                  (SELECT shard_count FROM stream_config WHERE stream = 'entry');
END;

-- An UPDATE that changes nothing writes no record (as DynamoDB).
CREATE TRIGGER IF NOT EXISTS stream_entry_update AFTER UPDATE ON entry
WHEN OLD.sheet_id IS NOT NEW.sheet_id OR OLD.segment IS NOT NEW.segment
  OR OLD.num IS NOT NEW.num OR OLD.seq IS NOT NEW.seq OR OLD.created IS NOT NEW.created
  OR OLD.external IS NOT NEW.external OR OLD.type IS NOT NEW.type
  OR OLD.version IS NOT NEW.version OR OLD.body IS NOT NEW.body
  OR OLD.snapshot_root IS NOT NEW.snapshot_root
BEGIN
  INSERT INTO stream_shard (stream, shard, last_sequence)
  VALUES ('entry', sheetlog_hash(NEW.sheet_id, NEW.segment) %
                   (SELECT shard_count FROM stream_config WHERE stream = 'entry'), 1)
  ON CONFLICT (stream, shard) DO UPDATE SET last_sequence = last_sequence + 1;
  INSERT INTO stream_record (stream, shard, sequence, event_name, keys, new_image,
                             old_image, created_micros)
  SELECT 'entry', s.shard, s.last_sequence, 'MODIFY',
         json_patch('{}', json_object('sheet_id', NEW.sheet_id, 'segment', NEW.segment,
                                      'num', NEW.num)),
         json_patch('{}', json_object('sheet_id', NEW.sheet_id, 'segment', NEW.segment,
                                      'num', NEW.num, 'seq', NEW.seq,
                                      'created', NEW.created, 'external', NEW.external,
                                      'type', NEW.type, 'version', NEW.version,
                                      'body', NEW.body,
                                      'snapshot_root', NEW.snapshot_root)),
         json_patch('{}', json_object('sheet_id', OLD.sheet_id, 'segment', OLD.segment,
                                      'num', OLD.num, 'seq', OLD.seq,
                                      'created', OLD.created, 'external', OLD.external,
                                      'type', OLD.type, 'version', OLD.version,
                                      'body', OLD.body,
                                      'snapshot_root', OLD.snapshot_root)),
         sheetlog_now_micros()
  FROM stream_shard s
  WHERE s.stream = 'entry'
    AND s.shard = sheetlog_hash(NEW.sheet_id, NEW.segment) %
                  (SELECT shard_count FROM stream_config WHERE stream = 'entry');
END;

CREATE TRIGGER IF NOT EXISTS stream_entry_delete AFTER DELETE ON entry
BEGIN
  INSERT INTO stream_shard (stream, shard, last_sequence)
  VALUES ('entry', sheetlog_hash(OLD.sheet_id, OLD.segment) %
                   (SELECT shard_count FROM stream_config WHERE stream = 'entry'), 1)
  ON CONFLICT (stream, shard) DO UPDATE SET last_sequence = last_sequence + 1;
  INSERT INTO stream_record (stream, shard, sequence, event_name, keys, new_image,
                             old_image, created_micros)
  SELECT 'entry', s.shard, s.last_sequence, 'REMOVE',
         json_patch('{}', json_object('sheet_id', OLD.sheet_id, 'segment', OLD.segment,
                                      'num', OLD.num)),
         NULL,
         json_patch('{}', json_object('sheet_id', OLD.sheet_id, 'segment', OLD.segment,
                                      'num', OLD.num, 'seq', OLD.seq,
                                      'created', OLD.created, 'external', OLD.external,
                                      'type', OLD.type, 'version', OLD.version,
                                      'body', OLD.body,
                                      'snapshot_root', OLD.snapshot_root)),
         sheetlog_now_micros()
  FROM stream_shard s
  WHERE s.stream = 'entry'
    AND s.shard = sheetlog_hash(OLD.sheet_id, OLD.segment) %
                  (SELECT shard_count FROM stream_config WHERE stream = 'entry');
END;
