-- 011: names an owner holds while its lease lives (a change-feed shard consumed by one
-- node at a time; the sweep and retention run once per cluster). Kept by
-- emulator/runtime/cluster_membership.h (docs/cluster.md "Node leases and claims:
-- ClusterMembership"); schema/README.md "011 — owner claims".
--
-- A claim is held by `owner` while that owner's lease (execution_owner, 010) has not
-- expired: a node that dies lets every claim of its go at once when its one lease
-- lapses, and a live node keeps its claims without renewing each. Taking a claim is
-- one conditional upsert: free, ours already, or its owner's lease is gone.
CREATE TABLE owner_claim (
  name  TEXT NOT NULL PRIMARY KEY,  -- e.g. "stream/entry-effects/3", "sweep"
  owner TEXT NOT NULL               -- execution_owner.owner
) WITHOUT ROWID;

-- The node an owner runs as (ExecutionHistory::LeaseOptions::node: the host and data
-- directory), stable across its restarts: a new owner of the same node releases its
-- predecessor's lease at start (that process is gone), so its claims come free at once
-- instead of when the lease lapses.
ALTER TABLE execution_owner ADD COLUMN node TEXT NOT NULL DEFAULT '';
