-- 001: the event log of seed 001 (Segment, Entry), sheet metadata, and seed 000's
-- Pending Snapshots table. Column-by-column notes: schema/README.md.

-- Sheet metadata (seed 001: "a full featured implementation will have other tables to
-- manage spreadsheet metadata").
CREATE TABLE sheet (
  id              TEXT    NOT NULL PRIMARY KEY,  -- UUID, the log id
  name            TEXT    NOT NULL DEFAULT '',
  created         INTEGER NOT NULL,              -- unix seconds
  snapshot_every  INTEGER NOT NULL,              -- entries between Snapshot entries; 0 = off
  segment_entries INTEGER NOT NULL,              -- entries per segment before a new one
  first_seq       INTEGER NOT NULL DEFAULT 0,    -- first retained seq (after truncation)
  -- seq of the newest Snapshot entry (completed or not), maintained in the same
  -- transaction that appends one: the snapshot policy's "entries since" counter.
  snapshot_entry_seq INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- Seed 001 Segment table. PK (sheet_id, num).
CREATE TABLE segment (
  sheet_id      TEXT    NOT NULL,  -- Spreadsheet Id (PK)
  num           INTEGER NOT NULL,  -- Num (SK): order of segments in the log
  created       INTEGER NOT NULL,  -- Created, unix seconds
  first_seq     INTEGER NOT NULL,  -- flat seq of this segment's entry 0 (sheetlog)
  last_snapshot INTEGER,           -- Last Snapshot: entry num of newest completed snapshot
  archive       TEXT,              -- Archive: blob key once archived
  PRIMARY KEY (sheet_id, num)
) WITHOUT ROWID;

-- Seed 001 Entry table. PK ((sheet_id, segment), num): the seed's Segment Id is the
-- pair (UUID, segment num).
CREATE TABLE entry (
  sheet_id      TEXT    NOT NULL,  -- Segment Id (PK), UUID part
  segment       INTEGER NOT NULL,  -- Segment Id (PK), Num part
  num           INTEGER NOT NULL,  -- Num (SK): order of entries in the segment
  seq           INTEGER NOT NULL,  -- flat seq across segments: segment.first_seq + num
  created       INTEGER NOT NULL,  -- Created, unix seconds
  external      TEXT,              -- External: blob key holding the body
  type          TEXT    NOT NULL,  -- Type
  version       INTEGER NOT NULL,  -- Version of the body format for this type
  body          TEXT,              -- Body: JSON text, NULL when external or none
  snapshot_root TEXT,              -- Snapshot entries: root key once completed
  PRIMARY KEY (sheet_id, segment, num)
) WITHOUT ROWID;
CREATE UNIQUE INDEX entry_by_seq ON entry (sheet_id, seq);
CREATE INDEX entry_by_created ON entry (created);
-- The snapshot policy asks "where is the newest Snapshot entry?" after every append;
-- a partial index keeps that one probe without indexing ordinary entries.
CREATE INDEX entry_snapshots ON entry (sheet_id, seq) WHERE type = 'Snapshot';

-- Seed 000 Pending Snapshots table. PK (log_id, (segment, entry)).
CREATE TABLE pending_snapshot (
  log_id    TEXT    NOT NULL,  -- Log Id (PK)
  segment   INTEGER NOT NULL,  -- Num (SK), first of the ordered pair
  entry     INTEGER NOT NULL,  -- Num (SK), second of the ordered pair
  created   INTEGER NOT NULL,  -- Created, unix seconds
  modified  INTEGER NOT NULL,  -- Modified, unix seconds (microseconds precision kept in state)
  active    INTEGER NOT NULL,  -- Active: 1 while an invocation works on it
  increment INTEGER NOT NULL,  -- Increment: +1 on every update (optimistic concurrency)
  state     TEXT,              -- State: JSON checkpoint
  PRIMARY KEY (log_id, segment, entry)
) WITHOUT ROWID;
