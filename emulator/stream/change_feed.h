// emulator/stream: the change feed, sheetlog's DynamoDB Streams. Triggers
// (stream_triggers.h, on every table attached with AttachStream) write one record
// per committed change, in the change's own transaction; ChangeFeed reads them per shard
// in order, keeps per-consumer durable checkpoints, prunes records past the retention
// window and wakes readers as soon as a write commits.
//
// Ordering: within a shard, sequences increase by one per record (a rolled-back change
// leaves neither a record nor a gap), and a record is numbered only once committed,
// after every record numbered before it: a reader that has read up to N never later
// meets a record numbered <= N. SQLite numbers records as its one writer commits them;
// PostgreSQL's writers leave a provisional number, and NumberCommitted() numbers
// committed records in rounds, so no writer waits on another's commit
// (emulator/schema/postgres/012_feed_numbering.sql). Records of one partition key always
// share a shard (while the shard count is unchanged) and are numbered in the order their
// writes ran. Across shards there is no order.
//
// Retention: Prune() deletes records older than the retention window (default 24 h) by
// the Clock, whether or not every consumer has processed them: a record pruned before
// its consumer read it is lost, as on AWS. The event log stays the source of truth; the
// reprocess tool (seed 000's manual fallback) repairs missed side effects.
//
// Backends: any Transactions (SQLite's Database, PostgresDatabase); every statement is
// the shared SQL of Connection::RunSql, the triggers each backend's own
// (stream_triggers.h). On PostgreSQL the order and the checkpoints hold across the nodes
// writing one database, and a commit on any node wakes every node's readers (the
// commit listeners, and the remote ones: docs/cluster.md "The change feed on
// PostgreSQL", "Wake-ups between nodes: LISTEN/NOTIFY").
//
// Thread-safe. All state is in the database except the wake-up machinery.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emulator/status.h"
#include "emulator/stream/stream_record.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;

struct StreamConfig {
  int shard_count = 4;
  int64_t retention_micros = 24LL * 3600 * 1000000;
};

struct ConsumerShardStats {
  std::string consumer;
  int64_t checkpoint = 0;   // last processed sequence; 0 = nothing yet
  int64_t lag_records = 0;  // retained records after the checkpoint
  // Clock time since the oldest retained record after the checkpoint was written;
  // 0 when the consumer is caught up.
  int64_t oldest_unprocessed_age_micros = 0;
};

struct ShardStats {
  int shard = 0;
  int64_t latest_sequence = 0;   // newest record ever written; 0 = none
  int64_t oldest_sequence = 0;   // oldest retained record; 0 = none retained
  int64_t retained_records = 0;  // records not yet pruned
  // Every consumer with a checkpoint in any shard of this stream, ordered by name.
  std::vector<ConsumerShardStats> consumers;
};

class ChangeFeed {
 public:
  static constexpr int kMaxReadLimit = 10000;
  // Internal (change_feed.cc): the numbering rounds the ChangeFeeds of one database
  // and stream share in a process.
  struct NumberingFlight;

  // The feed of `stream` (the source table's name; `entry` exists from schema 003,
  // others once AttachStream() ran). `db` and `clock` must outlive this object.
  // Registers a commit listener on `db`.
  ChangeFeed(Transactions* db, Clock* clock, std::string stream = "entry");
  ~ChangeFeed();
  ChangeFeed(const ChangeFeed&) = delete;
  ChangeFeed& operator=(const ChangeFeed&) = delete;

  const std::string& stream() const { return stream_; }

  // NotFound if the stream has no config row (the table is not attached).
  Result<StreamConfig> Config();
  // Changes the shard count and retention. Records already written keep their shard;
  // new ones are spread over the new count, so per-key order across the change holds
  // only if consumers drained the old records first. InvalidArgument if out of range
  // (shard_count 1..1024, retention > 0); NotFound if the stream does not exist.
  Status Configure(const StreamConfig& config);

  // Up to `limit` (1..kMaxReadLimit) records of `shard` with sequence > after_sequence,
  // in sequence order. Records already pruned are simply not there. An eventually
  // consistent read: it sees every write committed before the call began.
  Result<std::vector<StreamRecord>> Read(int shard, int64_t after_sequence, int limit);

  // shard -> newest sequence, for every shard that has ever had a record.
  Result<std::map<int, int64_t>> LatestSequences();

  // PostgreSQL: numbers the stream's committed records that have only a provisional
  // sequence (stream_triggers.h), one round at a time under an advisory lock shared by
  // every process; returns how many it numbered (0 when it joined a round that another
  // call of this process had begun after this one began, which numbered them). Read, LatestSequences and Stats call
  // it when they find such records, so a caller never needs to; a node calls it to
  // number what a writer that died left behind. SQLite: 0 (its records are numbered as
  // they are written).
  Result<int64_t> NumberCommitted();

  // The consumer's checkpoint in `shard`; 0 if it has none.
  Result<int64_t> Checkpoint(const std::string& consumer, int shard);
  // shard -> checkpoint, for every shard where the consumer has one.
  Result<std::map<int, int64_t>> Checkpoints(const std::string& consumer);
  // Records that `consumer` has processed `shard` up to and including `sequence`.
  // Durable when this returns OK. Never moves a checkpoint backwards (a smaller value
  // is ignored), so a slow duplicate cannot undo progress.
  Status SaveCheckpoint(const std::string& consumer, int shard, int64_t sequence);
  // Forgets every checkpoint of `consumer`: it starts again from the oldest retained
  // record (the reprocess tool's reset).
  Status ResetCheckpoints(const std::string& consumer);

  // Deletes records older than the retention window by the Clock; returns how many.
  Result<int64_t> Prune();
  // Deletes every record of the stream, inside the caller's transaction: the feed's
  // part of an admin reset (App::Reset), run after the source table's rows are deleted
  // (their delete triggers write records too). Sequence counters and checkpoints stay:
  // sequences go on growing, so every consumer reads the next record. Returns how many.
  Result<int64_t> DeleteAllRecords(Connection& conn);

  // Per shard, for 0..shard_count-1 and any higher shard that still has records.
  // `known_consumers` are listed too, with checkpoint 0 where they have none: a
  // consumer whose very first batch keeps failing has never checkpointed, and would
  // otherwise be missing from the stats exactly when it holds its shard back.
  Result<std::vector<ShardStats>> Stats(
      const std::vector<std::string>& known_consumers = {});

  // Wake-ups. The version increases after committed writes that wrote change-feed
  // records, this process's and (as heard) other processes' (perhaps after others
  // too: a woken reader re-reads and may find nothing new).
  uint64_t ChangeVersion() const;
  // Blocks until ChangeVersion() > seen_version (returns true), until the clock reaches
  // `deadline_micros` (returns false; INT64_MAX = no deadline), or until WakeWaiters().
  bool WaitForChange(uint64_t seen_version, int64_t deadline_micros);
  // Makes blocked WaitForChange calls return at once.
  void WakeWaiters();
  // Calls `callback` after every committed write, on the committing thread: it must be
  // quick and must not write to the database. Returns an id for Unsubscribe.
  int Subscribe(std::function<void()> callback);
  // After this returns, the callback is not running and will not be called again.
  void Unsubscribe(int id);

 private:
  struct Notifier;

  // Runs `work` in a read transaction that sees every record committed before the call
  // numbered: when the first snapshot holds records not yet numbered, NumberCommitted()
  // runs and `work` runs in a new read transaction (so it may run twice).
  Status ReadNumbered(const Transactions::Work& work);
  // NumberCommitted's rounds, until one numbers less than a full batch.
  Result<int64_t> RunNumberingRounds();

  Transactions* db_;
  Clock* clock_;
  std::string stream_;
  std::shared_ptr<Notifier> notifier_;  // shared with the commit listener
  // Shared by every ChangeFeed of this process on the same database and stream.
  std::shared_ptr<NumberingFlight> numbering_;
};

}  // namespace sheetlog
