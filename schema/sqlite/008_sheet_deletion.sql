-- 008: tombstones of deleted sheets. Written in the transaction that removes the
-- sheet's rows, so a sheet is never invisible without one; the purge of the
-- sheet's blobs (src/log/sheet_deletion.h) runs after, again at every start and every
-- purge period, and drops the tombstone once nothing of the sheet can still appear.
CREATE TABLE sheet_deletion (
  sheet_id TEXT    NOT NULL PRIMARY KEY,  -- UUID of the deleted sheet
  deleted  INTEGER NOT NULL               -- unix seconds (clock) of the delete
) WITHOUT ROWID;
