-- 004: execution history of every stream / queue handler invocation (seed 002), kept by
-- emulator/runtime/execution_history.h: emulator/schema/sqlite/004_history.sql in
-- PostgreSQL's SQL (the same version, the same table; notes there and in
-- schema/README.md "004 — execution history").
--
-- Rows are immutable but for atomic_counter, which a concurrent duplicate increments
-- when it tries to claim the same `started` row (seed 002's UpdateItem ADD 1).
-- partition_key sorts bytewise (COLLATE "C"), as SQLite's BINARY: the invocation log
-- pages by it.
CREATE TABLE execution_history (
  partition_key  text COLLATE "C" NOT NULL,
  sequence       bigint NOT NULL,
  atomic_counter bigint NOT NULL,
  exec_status    text   NOT NULL
                 CHECK (exec_status IN ('started', 'succeeded', 'failed', 'deferred')),
  created_at     bigint NOT NULL,  -- micros since the epoch (the injected clock)
  error          text,
  source         text   NOT NULL DEFAULT '',
  invocation_id  text   NOT NULL DEFAULT '',
  detail         text,
  PRIMARY KEY (partition_key, sequence)
);

CREATE INDEX execution_history_failed ON execution_history (created_at)
  WHERE exec_status = 'failed';
CREATE INDEX execution_history_by_created ON execution_history (created_at);
