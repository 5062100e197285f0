-- 001 in PostgreSQL's SQL: the same tables as schema/sqlite/001_event_log.sql (columns
-- documented in schema/README.md). Text keys are COLLATE "C" (bytewise, as SQLite's
-- BINARY), so keys sort the same on both backends whatever the database's collation.
CREATE TABLE sheet (
  id              text COLLATE "C" NOT NULL PRIMARY KEY,
  name            text   NOT NULL DEFAULT '',
  created         bigint NOT NULL,
  snapshot_every  bigint NOT NULL,
  segment_entries bigint NOT NULL,
  first_seq       bigint NOT NULL DEFAULT 0,
  snapshot_entry_seq bigint NOT NULL DEFAULT 0
);

CREATE TABLE segment (
  sheet_id      text COLLATE "C" NOT NULL,
  num           bigint NOT NULL,
  created       bigint NOT NULL,
  first_seq     bigint NOT NULL,
  last_snapshot bigint,
  archive       text,
  PRIMARY KEY (sheet_id, num)
);

CREATE TABLE entry (
  sheet_id      text COLLATE "C" NOT NULL,
  segment       bigint NOT NULL,
  num           bigint NOT NULL,
  seq           bigint NOT NULL,
  created       bigint NOT NULL,
  external      text,
  type          text   NOT NULL,
  version       bigint NOT NULL,
  body          text,
  snapshot_root text,
  PRIMARY KEY (sheet_id, segment, num)
);
CREATE UNIQUE INDEX entry_by_seq ON entry (sheet_id, seq);
CREATE INDEX entry_by_created ON entry (created);
CREATE INDEX entry_snapshots ON entry (sheet_id, seq) WHERE type = 'Snapshot';

CREATE TABLE pending_snapshot (
  log_id    text COLLATE "C" NOT NULL,
  segment   bigint NOT NULL,
  entry     bigint NOT NULL,
  created   bigint NOT NULL,
  modified  bigint NOT NULL,
  active    bigint NOT NULL,
  increment bigint NOT NULL,
  state     text,
  PRIMARY KEY (log_id, segment, entry)
);
