-- emulator/queue: SQS standard queues (see schema/README.md "002 — queues").
CREATE TABLE queue (
  name TEXT PRIMARY KEY,
  visibility_timeout_s INTEGER NOT NULL,
  delay_s INTEGER NOT NULL,
  retention_s INTEGER NOT NULL,
  max_receive_count INTEGER NOT NULL,
  dead_letter_queue TEXT NOT NULL,
  created_micros INTEGER NOT NULL,
  modified_micros INTEGER NOT NULL
);

CREATE TABLE queue_message (
  id TEXT PRIMARY KEY,
  queue TEXT NOT NULL,
  body BLOB NOT NULL,
  sent_micros INTEGER NOT NULL,
  visible_at_micros INTEGER NOT NULL,
  receive_count INTEGER NOT NULL DEFAULT 0,
  first_receive_micros INTEGER,
  receipt TEXT,
  last_error TEXT,
  source_queue TEXT,
  dead_lettered_micros INTEGER
);

-- Receive: the earliest visible message of a queue is the first index entry.
CREATE INDEX queue_message_by_visible ON queue_message (queue, visible_at_micros);
-- Retention purge, oldest message age, and dead-letter listing (oldest sent first).
CREATE INDEX queue_message_by_sent ON queue_message (queue, sent_micros);
