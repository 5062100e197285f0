-- 011: emulator/schema/sqlite/011_owner_claim.sql in PostgreSQL's SQL (the same
-- version, the same table; notes there): names an owner holds while its lease lives.
CREATE TABLE owner_claim (
  name  text COLLATE "C" NOT NULL PRIMARY KEY,
  owner text COLLATE "C" NOT NULL
);

-- The node an owner runs as (ExecutionHistory::LeaseOptions::node: the host and data
-- directory), stable across its restarts: a new owner of the same node releases its
-- predecessor's lease at start (that process is gone), so its claims come free at once
-- instead of when the lease lapses.
ALTER TABLE execution_owner ADD COLUMN node text COLLATE "C" NOT NULL DEFAULT '';
