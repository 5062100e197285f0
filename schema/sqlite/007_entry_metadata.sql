-- 007: entry metadata (infinisheet's LogMetadata) and the state at an exact
-- truncation. Column-by-column notes: schema/README.md "007".

-- JSON object of the metadata fields ever set on the entry ("snapshot", "history",
-- "pending"): a string, or null once cleared. NULL: none ever set.
ALTER TABLE entry ADD COLUMN metadata TEXT;

-- Root key of a snapshot holding every entry before first_seq, written by an exact
-- truncation that cut a segment in the middle; NULL when first_seq is a segment
-- boundary kept by the segment-granular truncation, or nothing was truncated.
ALTER TABLE sheet ADD COLUMN base_root TEXT;

-- seq of the newest entry whose metadata has a "snapshot" string (a client-managed
-- snapshot), maintained by every write of metadata; NULL when there is none.
ALTER TABLE sheet ADD COLUMN client_snapshot_seq INTEGER;

-- The entry stream's triggers predate the new column: dropped here, and created again
-- with every column in their images by AttachStream when the application opens the
-- database (src/app/schema.h), so change-feed subscribers see metadata changes (a
-- PATCH is a MODIFY record).
DROP TRIGGER IF EXISTS stream_entry_insert;
DROP TRIGGER IF EXISTS stream_entry_update;
DROP TRIGGER IF EXISTS stream_entry_delete;
