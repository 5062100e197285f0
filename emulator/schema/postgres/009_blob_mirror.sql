-- 009 in PostgreSQL's SQL: emulator/schema/sqlite/009_blob_mirror.sql's table (the
-- tags and creation times of an S3 store's objects, read by the orphan sweep).
CREATE TABLE blob_mirror (
  blob_key       text COLLATE "C" NOT NULL PRIMARY KEY,
  tags           text   NOT NULL,
  created_micros bigint NOT NULL
);
