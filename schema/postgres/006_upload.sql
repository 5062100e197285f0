-- 006 in PostgreSQL's SQL: schema/sqlite/006_upload.sql's table (schema/README.md).
CREATE TABLE upload (
  upload_id    text COLLATE "C" NOT NULL PRIMARY KEY,
  sheet_id     text   NOT NULL,
  blob_key     text COLLATE "C" NOT NULL,
  kind         text   NOT NULL,
  type         text   NOT NULL,
  version      bigint NOT NULL,
  body         text,
  content_type text,
  size         bigint,
  created      bigint NOT NULL,
  expires      bigint NOT NULL,
  entry_seq    bigint
);
CREATE UNIQUE INDEX upload_by_key ON upload (blob_key);
