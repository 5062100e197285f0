-- 008 in PostgreSQL's SQL: schema/sqlite/008_sheet_deletion.sql's tombstones.
CREATE TABLE sheet_deletion (
  sheet_id text COLLATE "C" NOT NULL PRIMARY KEY,
  deleted  bigint NOT NULL
);
