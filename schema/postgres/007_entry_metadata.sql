-- 007 in PostgreSQL's SQL: schema/sqlite/007_entry_metadata.sql's columns
-- (schema/README.md "007"). The SQLite file also drops the entry stream's triggers of 003 so that
-- AttachStream makes them again with the new column; on PostgreSQL no database predates
-- this version, and AttachStream replaces the triggers at every start anyway.
ALTER TABLE entry ADD COLUMN metadata text;
ALTER TABLE sheet ADD COLUMN base_root text;
ALTER TABLE sheet ADD COLUMN client_snapshot_seq bigint;
