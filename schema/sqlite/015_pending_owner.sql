-- 015: who holds a pending snapshot (src/log/pending_snapshots.h, the snapshot worker's
-- stale rule; schema/README.md "015").

-- The lease owner id (emulator/runtime/cluster_membership.h, ClusterMembership) of the
-- invocation that last claimed or created the item. NULL when unknown: an item written
-- before this migration, or by a process without a lease ('' when such a process
-- claimed it from an owner). An Active item whose owner's lease is gone (released by
-- its restart, or lapsed) may be claimed at once, without waiting out the stale
-- timeout; an item without an owner keeps that timeout.
ALTER TABLE pending_snapshot ADD COLUMN owner TEXT;
