-- 012: the change feed numbered after commit (docs/cluster.md "The change feed on
-- PostgreSQL"). Writers no longer take the next number of their shard inside their
-- transaction (a stream_shard row every writer of a shard locked until its commit:
-- one commit per shard at a time). A trigger now writes its record with a provisional
-- sequence, the negated next value of stream_record_provisional, unique and below zero,
-- and never touches stream_shard. ChangeFeed numbers committed records later, in
-- rounds under an advisory lock, each round giving the records it sees the numbers
-- after the shard's last_sequence in provisional order (ChangeFeed::NumberCommitted).
-- A record is read only once numbered, and a round numbers only committed records, so
-- a reader that has read up to N never later meets a record numbered <= N: the
-- guarantee the row lock gave, without one on the write path.
CREATE SEQUENCE stream_record_provisional;

-- What a round looks for: the records not numbered yet, oldest first.
CREATE INDEX stream_record_unnumbered ON stream_record (stream, sequence)
  WHERE sequence < 0;
