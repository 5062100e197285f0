-- 006: large-entry uploads (seed 000's three steps), and the bookkeeping that lets the
-- lifecycle sweep tell a referenced blob from an orphan.
CREATE TABLE upload (
  upload_id    TEXT    NOT NULL PRIMARY KEY,  -- UUID
  sheet_id     TEXT    NOT NULL,
  blob_key     TEXT    NOT NULL,              -- where the payload is (or will be) stored
  kind         TEXT    NOT NULL,              -- 'client' (presigned PUT) | 'inline' (server)
  type         TEXT    NOT NULL,              -- entry type to append on completion
  version      INTEGER NOT NULL,
  body         TEXT,                          -- small JSON body declared with the upload
  content_type TEXT,
  size         INTEGER,                       -- declared size, if any
  created      INTEGER NOT NULL,              -- unix seconds
  expires      INTEGER NOT NULL,              -- presigned PUT URL expiry, unix seconds
  entry_seq    INTEGER                        -- seq of the entry once completed: the blob is
                                              -- referenced from then on (written in the same
                                              -- transaction as the entry)
) WITHOUT ROWID;
CREATE UNIQUE INDEX upload_by_key ON upload (blob_key);
