-- 010: who wrote each execution history row, and the owners' leases ("running
-- elsewhere" judged by a node's lease, not by a process of this machine). Kept by
-- emulator/runtime/execution_history.h ("Liveness"); schema/README.md "010 — history
-- owners".
--
-- Every process running handlers takes a random owner id at start and renews its lease
-- on the clock; a `started` row of another owner counts as running while that owner's
-- lease has not expired. Rows written before this migration have no owner ('') and no
-- lease: their invocations are judged as before (abandoned unless running here).
ALTER TABLE execution_history ADD COLUMN owner TEXT NOT NULL DEFAULT '';

CREATE TABLE execution_owner (
  owner      TEXT    NOT NULL PRIMARY KEY,  -- random UUID, one per process start
  expires_at INTEGER NOT NULL               -- micros (the owner's clock at renewal + ttl)
) WITHOUT ROWID;
