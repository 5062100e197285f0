-- 013 in PostgreSQL's SQL: schema/sqlite/013_fork.sql's columns (schema/README.md
-- "013").
ALTER TABLE sheet ADD COLUMN fork_of text;
ALTER TABLE sheet ADD COLUMN fork_seq bigint;
ALTER TABLE sheet ADD COLUMN shared_blobs text;
