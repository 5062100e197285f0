-- 015 in PostgreSQL's SQL: schema/sqlite/015_pending_owner.sql's column (schema/README.md
-- "015").
ALTER TABLE pending_snapshot ADD COLUMN owner text;
