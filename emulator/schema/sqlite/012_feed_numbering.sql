-- 012: the change feed numbered after commit on PostgreSQL (emulator/schema/postgres/
-- 012_feed_numbering.sql). SQLite has one writer at a time, so its triggers keep
-- numbering records as they write them and never leave one unnumbered (sequence < 0);
-- the index is here so both dialects have the same schema at every version.
CREATE INDEX stream_record_unnumbered ON stream_record (stream, sequence)
  WHERE sequence < 0;
