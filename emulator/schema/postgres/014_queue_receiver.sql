-- 014: emulator/schema/sqlite/014_queue_receiver.sql in PostgreSQL's SQL (the same
-- version, the same column and index; notes there): who received each in-flight queue
-- message, so a gone owner's messages are released at once.
ALTER TABLE queue_message ADD COLUMN receiver_owner text COLLATE "C";

CREATE INDEX queue_message_by_receiver ON queue_message (receiver_owner)
  WHERE receiver_owner IS NOT NULL;
