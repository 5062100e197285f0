-- emulator/queue: SQS standard queues (see schema/README.md "002 — queues"), the same
-- tables as emulator/schema/sqlite/002_queue.sql in PostgreSQL's SQL. Text keys
-- COLLATE "C" (bytewise, as SQLite's BINARY); INTEGER -> bigint; BLOB -> bytea.
CREATE TABLE queue (
  name text COLLATE "C" PRIMARY KEY,
  visibility_timeout_s bigint NOT NULL,
  delay_s bigint NOT NULL,
  retention_s bigint NOT NULL,
  max_receive_count bigint NOT NULL,
  dead_letter_queue text COLLATE "C" NOT NULL,
  created_micros bigint NOT NULL,
  modified_micros bigint NOT NULL
);

CREATE TABLE queue_message (
  id text COLLATE "C" PRIMARY KEY,
  queue text COLLATE "C" NOT NULL,
  body bytea NOT NULL,
  sent_micros bigint NOT NULL,
  visible_at_micros bigint NOT NULL,
  receive_count bigint NOT NULL DEFAULT 0,
  first_receive_micros bigint,
  receipt text,
  last_error text,
  source_queue text COLLATE "C",
  dead_lettered_micros bigint,
  -- Insertion order, where SQLite's code uses its rowid: ties of a time (messages sent
  -- in one microsecond, a SendBatch) are received and listed in the order sent.
  seq bigint GENERATED ALWAYS AS IDENTITY
);

-- Receive: the earliest visible message of a queue is the first index entry.
CREATE INDEX queue_message_by_visible ON queue_message (queue, visible_at_micros, seq);
-- Retention purge, oldest message age, and dead-letter listing (oldest sent first).
CREATE INDEX queue_message_by_sent ON queue_message (queue, sent_micros, seq);
