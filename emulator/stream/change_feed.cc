#include "emulator/stream/change_feed.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <optional>
#include <utility>

#include "emulator/env/clock.h"
#include "emulator/env/mutex.h"
#include "emulator/json_text.h"
#include "emulator/table/connection.h"

namespace sheetlog {

struct ChangeFeed::Notifier {
  explicit Notifier(Clock* c) : clock(c) {}

  void OnCommit() {
    {
      MutexLock lock(&mu);
      ++version;
    }
    cv.NotifyAll();
    MutexLock lock(&callbacks_mu);
    for (auto& [id, callback] : callbacks) callback();
  }

  Clock* clock;
  Mutex mu;
  CondVar cv;
  uint64_t version GUARDED_BY(mu) = 0;
  uint64_t wake_generation GUARDED_BY(mu) = 0;

  // Held while callbacks run, so Unsubscribe() waits for a running callback.
  Mutex callbacks_mu;
  std::map<int, std::function<void()>> callbacks GUARDED_BY(callbacks_mu);
  int next_id GUARDED_BY(callbacks_mu) = 1;
};

namespace {

constexpr int kPruneBatch = 5000;

Result<nlohmann::json> ParseImage(const SqlRow& row, int col, const char* what) {
  if (row.IsNull(col)) return nlohmann::json();
  nlohmann::json parsed = ParseJsonOrDiscarded(row.Text(col));
  if (parsed.is_discarded()) {
    return Internal(std::string("stream record has malformed ") + what + " JSON");
  }
  return parsed;
}

Status ValidateConfig(const StreamConfig& config) {
  if (config.shard_count < 1 || config.shard_count > 1024) {
    return InvalidArgument("shard_count must be in 1..1024, got " +
                           std::to_string(config.shard_count));
  }
  if (config.retention_micros <= 0) return InvalidArgument("retention must be positive");
  return Status::OK();
}

Result<StreamConfig> ReadConfig(Connection& conn, const std::string& stream) {
  std::optional<StreamConfig> config;
  RETURN_IF_ERROR(conn.RunSql("SELECT shard_count, retention_micros FROM stream_config "
                              "WHERE stream = ?1",
                              {stream},
                              [&](const SqlRow& row) {
                                config.emplace();
                                config->shard_count = static_cast<int>(row.Int(0));
                                config->retention_micros = row.Int(1);
                                return false;
                              })
                      .status());
  if (!config) return NotFound("no stream named " + stream);
  return *config;
}

// shard -> newest sequence ever written, from the shards' counters.
Result<std::map<int, int64_t>> ReadHeads(Connection& conn, const std::string& stream) {
  std::map<int, int64_t> latest;
  RETURN_IF_ERROR(conn.RunSql("SELECT shard, last_sequence FROM stream_shard "
                              "WHERE stream = ?1",
                              {stream},
                              [&](const SqlRow& row) {
                                latest[static_cast<int>(row.Int(0))] = row.Int(1);
                                return true;
                              })
                      .status());
  return latest;
}

// The advisory lock under which numbering rounds run, one at a time across every
// process sharing a PostgreSQL database ("feednum").
constexpr int64_t kNumberingLock = 0x666565646e756d;
// Records one numbering round takes at most.
constexpr int kNumberingBatch = 10000;

// One numbering round (emulator/schema/postgres/012_feed_numbering.sql): the committed
// records of ?1 not numbered yet, oldest provisional number first, get per shard the
// numbers after the shard's last_sequence, which moves on. Answers how many records it
// numbered. Run under kNumberingLock, as a statement of its own after the lock was
// taken: READ COMMITTED gives it a snapshot in which the previous round has committed.
constexpr const char* kNumberingRound =
    "WITH pending AS ("
    " SELECT shard, sequence AS provisional FROM stream_record"
    " WHERE stream = ?1 AND sequence < 0 ORDER BY sequence DESC LIMIT ?2),"
    " numbered AS ("
    " SELECT p.shard, p.provisional, COALESCE(s.last_sequence, 0) +"
    " row_number() OVER (PARTITION BY p.shard ORDER BY p.provisional DESC) AS final"
    " FROM pending p LEFT JOIN stream_shard s ON s.stream = ?1 AND s.shard = p.shard),"
    " renumbered AS ("
    " UPDATE stream_record r SET sequence = n.final FROM numbered n"
    " WHERE r.stream = ?1 AND r.shard = n.shard AND r.sequence = n.provisional"
    " RETURNING r.shard, r.sequence),"
    " heads AS ("
    " INSERT INTO stream_shard AS s (stream, shard, last_sequence)"
    " SELECT ?1, shard, max(sequence) FROM renumbered GROUP BY shard"
    " ON CONFLICT (stream, shard) DO UPDATE SET last_sequence = excluded.last_sequence"
    " RETURNING 1)"
    " SELECT (SELECT COUNT(*) FROM renumbered), (SELECT COUNT(*) FROM heads)";

// Whether `stream` has committed records not numbered yet. Only PostgreSQL's triggers
// leave any; SQLite's number their records as they write them.
Result<bool> HasUnnumbered(Connection& conn, const std::string& stream) {
  if (conn.dialect() != SqlDialect::kPostgres) return false;
  bool found = false;
  RETURN_IF_ERROR(conn.RunSql("SELECT 1 FROM stream_record WHERE stream = ?1 AND "
                              "sequence < 0 LIMIT 1",
                              {stream},
                              [&](const SqlRow&) {
                                found = true;
                                return false;
                              })
                      .status());
  return found;
}

}  // namespace

// The numbering rounds of one stream of one database, shared by every ChangeFeed of
// this process on them: the readers one commit wakes (the runtime's shard consumers,
// the live-update hub, ...) join one round instead of queueing a round each behind the
// advisory lock.
struct ChangeFeed::NumberingFlight {
  Mutex mu;
  CondVar cv;
  uint64_t asked GUARDED_BY(mu) = 0;    // tickets handed out, one per call
  uint64_t covered GUARDED_BY(mu) = 0;  // every ticket <= this had a round begin after it
  bool running GUARDED_BY(mu) = false;
  Result<int64_t> last GUARDED_BY(mu) = int64_t{0};  // the last round's outcome
};

namespace {

std::shared_ptr<ChangeFeed::NumberingFlight> SharedNumberingFlight(
    Transactions* db, const std::string& stream) {
  static Mutex registry_mu;
  static std::map<std::pair<Transactions*, std::string>,
                  std::weak_ptr<ChangeFeed::NumberingFlight>>
      registry;
  MutexLock lock(&registry_mu);
  for (auto it = registry.begin(); it != registry.end();) {
    it = it->second.expired() ? registry.erase(it) : std::next(it);
  }
  std::weak_ptr<ChangeFeed::NumberingFlight>& slot = registry[{db, stream}];
  std::shared_ptr<ChangeFeed::NumberingFlight> flight = slot.lock();
  if (flight == nullptr) {
    flight = std::make_shared<ChangeFeed::NumberingFlight>();
    slot = flight;
  }
  return flight;
}

}  // namespace

ChangeFeed::ChangeFeed(Transactions* db, Clock* clock, std::string stream)
    : db_(db),
      clock_(clock),
      stream_(std::move(stream)),
      notifier_(std::make_shared<Notifier>(clock)),
      numbering_(SharedNumberingFlight(db_, stream_)) {
  // The listener keeps the notifier alive: a database has no way to remove a listener.
  std::shared_ptr<Notifier> notifier = notifier_;
  db_->AddCommitListener([notifier] { notifier->OnCommit(); });
  // Other nodes' commits (PostgreSQL's LISTEN/NOTIFY) wake readers the same way.
  db_->AddRemoteCommitListener(RemoteChange::kChangeFeed,
                               [notifier] { notifier->OnCommit(); });
}

ChangeFeed::~ChangeFeed() {
  MutexLock lock(&notifier_->callbacks_mu);
  notifier_->callbacks.clear();
}

Result<StreamConfig> ChangeFeed::Config() {
  Result<StreamConfig> config = NotFound("");
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) {
    config = ReadConfig(conn, stream_);
    return Status::OK();
  }));
  return config;
}

Status ChangeFeed::Configure(const StreamConfig& config) {
  RETURN_IF_ERROR(ValidateConfig(config));
  return db_->Write([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(int64_t changed,
                     conn.RunSql("UPDATE stream_config SET shard_count = ?1, "
                                 "retention_micros = ?2 WHERE stream = ?3",
                                 {config.shard_count, config.retention_micros, stream_}));
    if (changed == 0) return NotFound("no stream named " + stream_);
    return Status::OK();
  });
}

Result<std::vector<StreamRecord>> ChangeFeed::Read(int shard, int64_t after_sequence,
                                                   int limit) {
  if (limit < 1 || limit > kMaxReadLimit) {
    return InvalidArgument("read limit must be in 1.." + std::to_string(kMaxReadLimit));
  }
  std::vector<StreamRecord> records;
  RETURN_IF_ERROR(ReadNumbered([&](Connection& conn) -> Status {
    records.clear();
    Status parsed;
    RETURN_IF_ERROR(
        conn.RunSql("SELECT sequence, event_name, keys, new_image, old_image, "
                    "created_micros FROM stream_record WHERE stream = ?1 AND "
                    "shard = ?2 AND sequence > ?3 ORDER BY sequence LIMIT ?4",
                    {stream_, shard, after_sequence, limit},
                    [&](const SqlRow& row) {
                      StreamRecord record;
                      record.stream = stream_;
                      record.shard = shard;
                      record.sequence = row.Int(0);
                      std::optional<StreamEventName> name =
                          ParseStreamEventName(row.Text(1));
                      if (!name) {
                        parsed = Internal("stream record has unknown event name");
                        return false;
                      }
                      record.event_name = *name;
                      Result<nlohmann::json> keys = ParseImage(row, 2, "keys");
                      Result<nlohmann::json> new_image = ParseImage(row, 3, "new image");
                      Result<nlohmann::json> old_image = ParseImage(row, 4, "old image");
                      for (const auto* image : {&keys, &new_image, &old_image}) {
                        if (!image->ok()) {
                          parsed = image->status();
                          return false;
                        }
                      }
                      record.keys = std::move(keys).value();
                      record.new_image = std::move(new_image).value();
                      record.old_image = std::move(old_image).value();
                      record.created_micros = row.Int(5);
                      records.push_back(std::move(record));
                      return true;
                    })
            .status());
    return parsed;
  }));
  return records;
}

Result<std::map<int, int64_t>> ChangeFeed::LatestSequences() {
  std::map<int, int64_t> latest;
  RETURN_IF_ERROR(ReadNumbered([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(latest, ReadHeads(conn, stream_));
    return Status::OK();
  }));
  return latest;
}

Result<int64_t> ChangeFeed::Checkpoint(const std::string& consumer, int shard) {
  ASSIGN_OR_RETURN(auto all, Checkpoints(consumer));
  auto it = all.find(shard);
  return it == all.end() ? 0 : it->second;
}

Result<std::map<int, int64_t>> ChangeFeed::Checkpoints(const std::string& consumer) {
  std::map<int, int64_t> checkpoints;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    checkpoints.clear();
    return conn
        .RunSql(
            "SELECT shard, sequence FROM stream_checkpoint WHERE "
            "consumer = ?1 AND stream = ?2",
            {consumer, stream_},
            [&](const SqlRow& row) {
              checkpoints[static_cast<int>(row.Int(0))] = row.Int(1);
              return true;
            })
        .status();
  }));
  return checkpoints;
}

Status ChangeFeed::SaveCheckpoint(const std::string& consumer, int shard,
                                  int64_t sequence) {
  if (consumer.empty()) return InvalidArgument("checkpoint needs a consumer name");
  int64_t now = clock_->NowMicros();
  return db_->Write([&](Connection& conn) -> Status {
    return conn
        .RunSql(
            "INSERT INTO stream_checkpoint (consumer, stream, shard, sequence, "
            "updated_micros) VALUES (?1, ?2, ?3, ?4, ?5) "
            "ON CONFLICT (consumer, stream, shard) DO UPDATE SET "
            "sequence = excluded.sequence, updated_micros = excluded.updated_micros "
            "WHERE excluded.sequence > stream_checkpoint.sequence",
            {consumer, stream_, shard, sequence, now})
        .status();
  });
}

Status ChangeFeed::ResetCheckpoints(const std::string& consumer) {
  return db_->Write([&](Connection& conn) -> Status {
    return conn
        .RunSql("DELETE FROM stream_checkpoint WHERE consumer = ?1 AND stream = ?2",
                {consumer, stream_})
        .status();
  });
}

Result<int64_t> ChangeFeed::DeleteAllRecords(Connection& conn) {
  return conn.RunSql("DELETE FROM stream_record WHERE stream = ?1", {stream_});
}

Result<int64_t> ChangeFeed::Prune() {
  // Numbered first: a record pruned before its number was given would leave its
  // number to the next record, and a consumer that counts on sequence order would see
  // a later record take an earlier one's place.
  RETURN_IF_ERROR(NumberCommitted().status());
  ASSIGN_OR_RETURN(StreamConfig config, Config());
  const int64_t horizon = clock_->NowMicros() - config.retention_micros;
  int64_t total = 0;
  // In bounded batches, so a long backlog does not hold the writer for long.
  while (true) {
    int64_t deleted = 0;
    RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
      ASSIGN_OR_RETURN(
          deleted,
          conn.RunSql("DELETE FROM stream_record WHERE stream = ?1 AND "
                      "(shard, sequence) IN (SELECT shard, sequence FROM stream_record "
                      "WHERE stream = ?1 AND created_micros < ?2 LIMIT ?3)",
                      {stream_, horizon, kPruneBatch}));
      return Status::OK();
    }));
    total += deleted;
    if (deleted < kPruneBatch) break;
  }
  return total;
}

Result<std::vector<ShardStats>> ChangeFeed::Stats(
    const std::vector<std::string>& known_consumers) {
  std::vector<ShardStats> stats;
  const int64_t now = clock_->NowMicros();
  RETURN_IF_ERROR(ReadNumbered([&](Connection& conn) -> Status {
    stats.clear();
    ASSIGN_OR_RETURN(StreamConfig config, ReadConfig(conn, stream_));
    std::map<int, ShardStats> by_shard;
    for (int shard = 0; shard < config.shard_count; ++shard)
      by_shard[shard].shard = shard;

    ASSIGN_OR_RETURN(auto latest, ReadHeads(conn, stream_));
    RETURN_IF_ERROR(
        conn.RunSql("SELECT shard, COUNT(*), MIN(sequence) FROM stream_record "
                    "WHERE stream = ?1 GROUP BY shard",
                    {stream_},
                    [&](const SqlRow& row) {
                      const int shard = static_cast<int>(row.Int(0));
                      ShardStats& s = by_shard[shard];
                      s.shard = shard;
                      s.retained_records = row.Int(1);
                      s.oldest_sequence = row.Int(2);
                      return true;
                    })
            .status());
    for (auto& [shard, s] : by_shard) {
      auto it = latest.find(shard);
      if (it != latest.end()) s.latest_sequence = it->second;
    }

    std::map<std::string, std::map<int, int64_t>> by_consumer;
    RETURN_IF_ERROR(conn.RunSql("SELECT consumer, shard, sequence FROM stream_checkpoint "
                                "WHERE stream = ?1 ORDER BY consumer",
                                {stream_},
                                [&](const SqlRow& row) {
                                  by_consumer[row.Text(0)][static_cast<int>(row.Int(1))] =
                                      row.Int(2);
                                  return true;
                                })
                        .status());
    for (const std::string& consumer : known_consumers) by_consumer[consumer];
    for (auto& [shard, s] : by_shard) {
      for (const auto& [consumer, shards] : by_consumer) {
        ConsumerShardStats c;
        c.consumer = consumer;
        auto it = shards.find(shard);
        c.checkpoint = it == shards.end() ? 0 : it->second;
        RETURN_IF_ERROR(conn.RunSql("SELECT COUNT(*), MIN(created_micros) FROM "
                                    "stream_record WHERE stream = ?1 AND shard = ?2 AND "
                                    "sequence > ?3",
                                    {stream_, shard, c.checkpoint},
                                    [&](const SqlRow& row) {
                                      c.lag_records = row.Int(0);
                                      if (!row.IsNull(1)) {
                                        c.oldest_unprocessed_age_micros =
                                            std::max<int64_t>(0, now - row.Int(1));
                                      }
                                      return false;
                                    })
                            .status());
        s.consumers.push_back(std::move(c));
      }
    }
    for (auto& [shard, s] : by_shard) stats.push_back(std::move(s));
    return Status::OK();
  }));
  return stats;
}

Result<int64_t> ChangeFeed::NumberCommitted() {
  NumberingFlight& flight = *numbering_;
  MutexLock lock(&flight.mu);
  const uint64_t ticket = ++flight.asked;
  while (flight.covered < ticket) {
    if (flight.running) {
      flight.cv.Wait(flight.mu);
      continue;
    }
    // A round beginning now sees every write committed before any call so far began.
    flight.running = true;
    const uint64_t covers = flight.asked;
    lock.Unlock();
    Result<int64_t> numbered = RunNumberingRounds();
    lock.Lock();
    flight.running = false;
    flight.covered = covers;
    flight.last = numbered;
    flight.cv.NotifyAll();
    return numbered;
  }
  // Joined a round another call ran: its records were counted there.
  if (!flight.last.ok()) return flight.last.status();
  return 0;
}

Result<int64_t> ChangeFeed::RunNumberingRounds() {
  int64_t total = 0;
  while (true) {
    int64_t numbered = 0;
    RETURN_IF_ERROR(db_->Write([&](Connection& conn) -> Status {
      numbered = 0;
      if (conn.dialect() != SqlDialect::kPostgres) return Status::OK();
      RETURN_IF_ERROR(
          conn.RunSql("SELECT pg_advisory_xact_lock(?1)", {kNumberingLock}).status());
      // The round's commit need not wait for its WAL flush: whatever is made of its
      // numbers that lasts (a checkpoint, a side effect's write) is a later commit,
      // whose flush takes this one's commit record with it (WAL is flushed in order).
      // Lost in a crash before that, the records are numbered again by the next round,
      // and nobody kept the lost numbers.
      RETURN_IF_ERROR(
          conn.RunSql("SELECT set_config('synchronous_commit', 'off', true)", {})
              .status());
      return conn
          .RunSql(kNumberingRound, {stream_, kNumberingBatch},
                  [&](const SqlRow& row) {
                    numbered = row.Int(0);
                    return false;
                  })
          .status();
    }));
    total += numbered;
    if (numbered < kNumberingBatch) return total;
  }
}

Status ChangeFeed::ReadNumbered(const Transactions::Work& work) {
  bool unnumbered = false;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    // First, so the read's snapshot is the one checked: if every record in it is
    // numbered, `work` sees every write committed before the call.
    ASSIGN_OR_RETURN(unnumbered, HasUnnumbered(conn, stream_));
    return unnumbered ? Status::OK() : work(conn);
  }));
  if (!unnumbered) return Status::OK();
  // Numbered in a round that began after the call did (so it saw those writes), and
  // read in a snapshot taken after the round committed.
  RETURN_IF_ERROR(NumberCommitted().status());
  return db_->Read(work);
}

uint64_t ChangeFeed::ChangeVersion() const {
  MutexLock lock(&notifier_->mu);
  return notifier_->version;
}

bool ChangeFeed::WaitForChange(uint64_t seen_version, int64_t deadline_micros) {
  Notifier& n = *notifier_;
  MutexLock lock(&n.mu);
  const uint64_t generation = n.wake_generation;
  while (true) {
    if (n.version > seen_version) return true;
    if (n.wake_generation != generation) return false;
    if (deadline_micros == INT64_MAX) {
      n.cv.Wait(n.mu);
    } else if (clock_->WaitUntil(n.cv, n.mu, deadline_micros)) {
      return n.version > seen_version;
    }
  }
}

void ChangeFeed::WakeWaiters() {
  {
    MutexLock lock(&notifier_->mu);
    ++notifier_->wake_generation;
  }
  notifier_->cv.NotifyAll();
}

int ChangeFeed::Subscribe(std::function<void()> callback) {
  MutexLock lock(&notifier_->callbacks_mu);
  int id = notifier_->next_id++;
  notifier_->callbacks[id] = std::move(callback);
  return id;
}

void ChangeFeed::Unsubscribe(int id) {
  MutexLock lock(&notifier_->callbacks_mu);
  notifier_->callbacks.erase(id);
}

}  // namespace sheetlog
