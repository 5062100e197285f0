-- 010: emulator/schema/sqlite/010_history_owner.sql in PostgreSQL's SQL (the same
-- version, the same tables; notes there): who wrote each execution history row, and the
-- owners' leases, by which another node's `started` row counts as running.
ALTER TABLE execution_history ADD COLUMN owner text COLLATE "C" NOT NULL DEFAULT '';

CREATE TABLE execution_owner (
  owner      text COLLATE "C" NOT NULL PRIMARY KEY,
  expires_at bigint NOT NULL
);
