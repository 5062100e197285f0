-- 014: who received each in-flight queue message (emulator/queue/queue.h,
-- ReleaseReceivedBy; schema/README.md "014"). A process that holds a lease
-- (emulator/runtime/cluster_membership.h) names its owner id when it receives; when that
-- owner's lease is released (its restart) or lapses and is pruned, the messages it
-- held are made visible again at once instead of after their visibility timeout. NULL:
-- received by a process without a lease, or never received, or released.
ALTER TABLE queue_message ADD COLUMN receiver_owner TEXT;

-- Releasing a gone owner's messages: only received messages carry one.
CREATE INDEX queue_message_by_receiver ON queue_message (receiver_owner)
  WHERE receiver_owner IS NOT NULL;
