-- 003: the change feed (DynamoDB Streams stand-in, emulator/stream) in PostgreSQL's
-- SQL: the tables of emulator/schema/sqlite/003_stream.sql (same version, same
-- meaning) and the SQL functions its triggers call. Triggers are generated per table by
-- AttachStream() (emulator/stream/stream_triggers.h) in PL/pgSQL.
--
-- Commit order: a trigger takes the next sequence of its shard by updating the shard's
-- stream_shard row (INSERT ... ON CONFLICT DO UPDATE), which locks that row until the
-- transaction ends. A second transaction writing the same shard waits there for the
-- first to commit (or roll back) and then takes the number after it, so within a shard
-- sequences are handed out in commit order and without gaps: a consumer that has read
-- up to N never meets a record with a number <= N committed later (an identity column
-- or SEQUENCE would hand numbers out in statement order instead). The price: writers of
-- one shard commit one after another (4 shards by default).

CREATE TABLE stream_config (
  stream           text COLLATE "C" NOT NULL PRIMARY KEY,  -- source table name
  shard_count      bigint NOT NULL CHECK (shard_count > 0),
  retention_micros bigint NOT NULL CHECK (retention_micros > 0)
);

-- Per-shard sequence counter (and, through its row lock, the commit order above).
CREATE TABLE stream_shard (
  stream        text COLLATE "C" NOT NULL,
  shard         bigint NOT NULL,
  last_sequence bigint NOT NULL,
  PRIMARY KEY (stream, shard)
);

CREATE TABLE stream_record (
  stream         text COLLATE "C" NOT NULL,
  shard          bigint NOT NULL,
  sequence       bigint NOT NULL,  -- 1, 2, ... within (stream, shard), in commit order
  event_name     text NOT NULL CHECK (event_name IN ('INSERT', 'MODIFY', 'REMOVE')),
  keys           text NOT NULL,    -- JSON object of the primary key columns
  new_image      text,             -- JSON object of the row after (NULL for REMOVE)
  old_image      text,             -- JSON object of the row before (NULL for INSERT)
  created_micros bigint NOT NULL,  -- sheetlog_now_micros() at the change
  PRIMARY KEY (stream, shard, sequence)
);
CREATE INDEX stream_record_by_created ON stream_record (stream, created_micros);

CREATE TABLE stream_checkpoint (
  consumer       text COLLATE "C" NOT NULL,
  stream         text COLLATE "C" NOT NULL,
  shard          bigint NOT NULL,
  sequence       bigint NOT NULL,
  updated_micros bigint NOT NULL,
  PRIMARY KEY (consumer, stream, shard)
);

-- The node's clock: PostgresDatabase begins every transaction with
-- set_config('sheetlog.now_micros', <its Clock's NowMicros()>, true). Unset (a session
-- of another client), the server's clock.
CREATE FUNCTION sheetlog_now_micros() RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT COALESCE(NULLIF(current_setting('sheetlog.now_micros', true), '')::bigint,
                  (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)
$$;

-- SQLite's sheetlog_hash (emulator/sqlite/database.cc) over byte strings, giving the
-- same values: FNV-1a, 64 bits, over the bytes of every argument, each argument
-- followed by the separator byte 0xff (a NULL argument: the separator alone), with the
-- offset basis exactly as database.cc writes it (1469598103934665603, not the
-- standard basis), the result's top bit cleared. bigint arithmetic does not wrap, so
-- the state is kept in two 32-bit halves; the FNV prime is 2^40 + 435.
CREATE FUNCTION sheetlog_hash_bytes(VARIADIC parts bytea[]) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  hi bigint := 342167472;   -- 0x14650fb0
  lo bigint := 1939669891;  -- 0x739d0383
  part bytea;
  product bigint;
BEGIN
  FOREACH part IN ARRAY parts LOOP
    IF part IS NOT NULL THEN
      FOR i IN 0 .. length(part) - 1 LOOP
        lo := lo # get_byte(part, i);
        product := lo * 435;
        hi := (hi * 435 + (product >> 32) + (lo << 8)) & 4294967295;
        lo := product & 4294967295;
      END LOOP;
    END IF;
    lo := lo # 255;
    product := lo * 435;
    hi := (hi * 435 + (product >> 32) + (lo << 8)) & 4294967295;
    lo := product & 4294967295;
  END LOOP;
  RETURN ((hi & 2147483647) << 32) | lo;
END
$$;

-- sheetlog_hash(a, b, ...) over text, as SQLite's over text and integers (an integer's
-- text is its decimal digits on both; write `x::text` for an integer argument here).
CREATE FUNCTION sheetlog_hash(VARIADIC parts text[]) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT sheetlog_hash_bytes(VARIADIC ARRAY(
    SELECT convert_to(p, 'UTF8') FROM unnest(parts) WITH ORDINALITY AS u(p, n)
    ORDER BY n))
$$;
