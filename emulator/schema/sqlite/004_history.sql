-- 004: execution history of every stream / queue handler invocation (seed 002), kept by
-- emulator/runtime/execution_history.h. Column-by-column notes: schema/README.md
-- "004 — execution history".
--
-- Rows are immutable: an invocation appends a `started` row and later a `succeeded`,
-- `failed` or `deferred` row. The one exception is atomic_counter, which a concurrent
-- duplicate increments when it tries to claim the same `started` row (seed 002's
-- UpdateItem ADD 1): whoever does not get 1 back stops.
CREATE TABLE execution_history (
  partition_key  TEXT    NOT NULL,  -- one unit of work, e.g. "<mapping>:<shard>:<sequence>"
  sequence       INTEGER NOT NULL,  -- 1, 2, ... within partition_key, in creation order
  atomic_counter INTEGER NOT NULL,  -- 1, or more once a concurrent duplicate collided
  exec_status    TEXT    NOT NULL
                 CHECK (exec_status IN ('started', 'succeeded', 'failed', 'deferred')),
  created_at     INTEGER NOT NULL,  -- micros since the epoch (the injected clock)
  error          TEXT,              -- failed / deferred: why
  source         TEXT    NOT NULL DEFAULT '',  -- event source mapping name
  invocation_id  TEXT    NOT NULL DEFAULT '',  -- UUID of the invocation that wrote the row
  detail         TEXT,              -- what the work was about, e.g. the record's keys JSON
  PRIMARY KEY (partition_key, sequence)
) WITHOUT ROWID;

-- ListFailed(since, until): failed rows by time (then checked to be the latest of
-- their key). Partial: successes, the vast majority, are not indexed.
CREATE INDEX execution_history_failed ON execution_history (created_at)
  WHERE exec_status = 'failed';
-- Prune: rows older than a horizon.
CREATE INDEX execution_history_by_created ON execution_history (created_at);
