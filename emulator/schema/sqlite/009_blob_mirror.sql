-- emulator/blob/s3_blob_store.h: what the S3 blob store keeps of an object in the table
-- store besides the bucket (see schema/README.md "009 — blob mirror"). One row per object
-- that carries or carried tags, written before the object's commit point at the store;
-- the lifecycle sweep reads these rows, never the bucket, so it works on stores without
-- lifecycle rules, and an object's age is measured on the server's clock. Unused (and
-- empty) with the directory store, which keeps tags beside each object.
CREATE TABLE blob_mirror (
  blob_key       TEXT PRIMARY KEY NOT NULL,
  tags           TEXT NOT NULL,     -- JSON object: tag key -> value
  created_micros INTEGER NOT NULL   -- when the object was put (the server's clock)
) WITHOUT ROWID;
