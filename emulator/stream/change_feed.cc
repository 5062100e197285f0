#include "emulator/stream/change_feed.h"

#include <algorithm>
#include <climits>

#include "emulator/env/clock.h"
#include "emulator/env/mutex.h"
#include "emulator/json_text.h"

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

Result<nlohmann::json> ParseImage(const Statement& stmt, int col, const char* what) {
  if (stmt.IsNull(col)) return nlohmann::json();
  nlohmann::json parsed = ParseJsonOrDiscarded(stmt.ColumnView(col));
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

Result<StreamConfig> ReadConfig(SqliteConnection& conn, const std::string& stream) {
  ASSIGN_OR_RETURN(Statement stmt,
                   conn.Prepare("SELECT shard_count, retention_micros FROM stream_config "
                                "WHERE stream = ?"));
  stmt.Bind(1, stream);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return NotFound("no stream named " + stream);
  StreamConfig config;
  config.shard_count = static_cast<int>(stmt.ColumnInt(0));
  config.retention_micros = stmt.ColumnInt(1);
  return config;
}

}  // namespace

ChangeFeed::ChangeFeed(Database* db, Clock* clock, std::string stream)
    : db_(db),
      clock_(clock),
      stream_(std::move(stream)),
      notifier_(std::make_shared<Notifier>(clock)) {
  // The listener keeps the notifier alive: Database has no way to remove a listener.
  std::shared_ptr<Notifier> notifier = notifier_;
  db_->AddCommitListener([notifier] { notifier->OnCommit(); });
}

ChangeFeed::~ChangeFeed() {
  MutexLock lock(&notifier_->callbacks_mu);
  notifier_->callbacks.clear();
}

Result<StreamConfig> ChangeFeed::Config() {
  Result<StreamConfig> config = NotFound("");
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) {
    config = ReadConfig(conn, stream_);
    return Status::OK();
  }));
  return config;
}

Status ChangeFeed::Configure(const StreamConfig& config) {
  RETURN_IF_ERROR(ValidateConfig(config));
  return db_->Write([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(Statement stmt,
                     conn.Prepare("UPDATE stream_config SET shard_count = ?, "
                                  "retention_micros = ? WHERE stream = ?"));
    RETURN_IF_ERROR(stmt.Bind(1, config.shard_count)
                        .Bind(2, config.retention_micros)
                        .Bind(3, stream_)
                        .Run());
    if (conn.Changes() == 0) return NotFound("no stream named " + stream_);
    return Status::OK();
  });
}

Result<std::vector<StreamRecord>> ChangeFeed::Read(int shard, int64_t after_sequence,
                                                   int limit) {
  if (limit < 1 || limit > kMaxReadLimit) {
    return InvalidArgument("read limit must be in 1.." + std::to_string(kMaxReadLimit));
  }
  std::vector<StreamRecord> records;
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(
        Statement stmt,
        conn.Prepare("SELECT sequence, event_name, keys, new_image, old_image, "
                     "created_micros FROM stream_record WHERE stream = ? AND "
                     "shard = ? AND sequence > ? ORDER BY sequence LIMIT ?"));
    stmt.Bind(1, stream_).Bind(2, shard).Bind(3, after_sequence).Bind(4, limit);
    while (true) {
      ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      StreamRecord record;
      record.stream = stream_;
      record.shard = shard;
      record.sequence = stmt.ColumnInt(0);
      std::optional<StreamEventName> name = ParseStreamEventName(stmt.ColumnView(1));
      if (!name) return Internal("stream record has unknown event name");
      record.event_name = *name;
      ASSIGN_OR_RETURN(record.keys, ParseImage(stmt, 2, "keys"));
      ASSIGN_OR_RETURN(record.new_image, ParseImage(stmt, 3, "new image"));
      ASSIGN_OR_RETURN(record.old_image, ParseImage(stmt, 4, "old image"));
      record.created_micros = stmt.ColumnInt(5);
      records.push_back(std::move(record));
    }
    return Status::OK();
  }));
  return records;
}

Result<std::map<int, int64_t>> ChangeFeed::LatestSequences() {
  std::map<int, int64_t> latest;
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(Statement stmt, conn.Prepare("SELECT shard, last_sequence FROM "
                                                  "stream_shard WHERE stream = ?"));
    stmt.Bind(1, stream_);
    while (true) {
      ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      latest[static_cast<int>(stmt.ColumnInt(0))] = stmt.ColumnInt(1);
    }
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
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(Statement stmt,
                     conn.Prepare("SELECT shard, sequence FROM stream_checkpoint WHERE "
                                  "consumer = ? AND stream = ?"));
    stmt.Bind(1, consumer).Bind(2, stream_);
    while (true) {
      ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      checkpoints[static_cast<int>(stmt.ColumnInt(0))] = stmt.ColumnInt(1);
    }
    return Status::OK();
  }));
  return checkpoints;
}

Status ChangeFeed::SaveCheckpoint(const std::string& consumer, int shard,
                                  int64_t sequence) {
  if (consumer.empty()) return InvalidArgument("checkpoint needs a consumer name");
  int64_t now = clock_->NowMicros();
  return db_->Write([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(
        Statement stmt,
        conn.Prepare(
            "INSERT INTO stream_checkpoint (consumer, stream, shard, sequence, "
            "updated_micros) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (consumer, stream, shard) DO UPDATE SET "
            "sequence = excluded.sequence, updated_micros = excluded.updated_micros "
            "WHERE excluded.sequence > stream_checkpoint.sequence"));
    return stmt.Bind(1, consumer)
        .Bind(2, stream_)
        .Bind(3, shard)
        .Bind(4, sequence)
        .Bind(5, now)
        .Run();
  });
}

Status ChangeFeed::ResetCheckpoints(const std::string& consumer) {
  return db_->Write([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(Statement stmt, conn.Prepare("DELETE FROM stream_checkpoint WHERE "
                                                  "consumer = ? AND stream = ?"));
    return stmt.Bind(1, consumer).Bind(2, stream_).Run();
  });
}

Result<int64_t> ChangeFeed::Prune() {
  ASSIGN_OR_RETURN(StreamConfig config, Config());
  const int64_t horizon = clock_->NowMicros() - config.retention_micros;
  int64_t total = 0;
  // In bounded batches, so a long backlog does not hold the writer for long.
  while (true) {
    int64_t deleted = 0;
    RETURN_IF_ERROR(db_->Write([&](SqliteConnection& conn) -> Status {
      ASSIGN_OR_RETURN(
          Statement stmt,
          conn.Prepare("DELETE FROM stream_record WHERE stream = ?1 AND "
                       "(shard, sequence) IN (SELECT shard, sequence FROM stream_record "
                       "WHERE stream = ?1 AND created_micros < ?2 LIMIT ?3)"));
      RETURN_IF_ERROR(stmt.Bind(1, stream_).Bind(2, horizon).Bind(3, kPruneBatch).Run());
      deleted = conn.Changes();
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
  RETURN_IF_ERROR(db_->Read([&](SqliteConnection& conn) -> Status {
    ASSIGN_OR_RETURN(StreamConfig config, ReadConfig(conn, stream_));
    std::map<int, ShardStats> by_shard;
    for (int shard = 0; shard < config.shard_count; ++shard)
      by_shard[shard].shard = shard;

    ASSIGN_OR_RETURN(Statement heads, conn.Prepare("SELECT shard, last_sequence FROM "
                                                   "stream_shard WHERE stream = ?"));
    heads.Bind(1, stream_);
    std::map<int, int64_t> latest;
    while (true) {
      ASSIGN_OR_RETURN(bool row, heads.Step());
      if (!row) break;
      latest[static_cast<int>(heads.ColumnInt(0))] = heads.ColumnInt(1);
    }
    ASSIGN_OR_RETURN(
        Statement retained,
        conn.Prepare("SELECT shard, COUNT(*), MIN(sequence) FROM stream_record "
                     "WHERE stream = ? GROUP BY shard"));
    retained.Bind(1, stream_);
    while (true) {
      ASSIGN_OR_RETURN(bool row, retained.Step());
      if (!row) break;
      ShardStats& s = by_shard[static_cast<int>(retained.ColumnInt(0))];
      s.shard = static_cast<int>(retained.ColumnInt(0));
      s.retained_records = retained.ColumnInt(1);
      s.oldest_sequence = retained.ColumnInt(2);
    }
    for (auto& [shard, s] : by_shard) {
      auto it = latest.find(shard);
      if (it != latest.end()) s.latest_sequence = it->second;
    }

    ASSIGN_OR_RETURN(
        Statement checkpoints,
        conn.Prepare("SELECT consumer, shard, sequence FROM stream_checkpoint "
                     "WHERE stream = ? ORDER BY consumer"));
    checkpoints.Bind(1, stream_);
    std::map<std::string, std::map<int, int64_t>> by_consumer;
    while (true) {
      ASSIGN_OR_RETURN(bool row, checkpoints.Step());
      if (!row) break;
      by_consumer[checkpoints.ColumnText(0)][static_cast<int>(checkpoints.ColumnInt(1))] =
          checkpoints.ColumnInt(2);
    }
    for (const std::string& consumer : known_consumers) by_consumer[consumer];
    for (auto& [shard, s] : by_shard) {
      for (const auto& [consumer, shards] : by_consumer) {
        ConsumerShardStats c;
        c.consumer = consumer;
        auto it = shards.find(shard);
        c.checkpoint = it == shards.end() ? 0 : it->second;
        // Prepared per use: a Statement is reset only when its wrapper goes away.
        ASSIGN_OR_RETURN(Statement lag,
                         conn.Prepare("SELECT COUNT(*), MIN(created_micros) FROM "
                                      "stream_record WHERE stream = ? AND shard = ? AND "
                                      "sequence > ?"));
        lag.Bind(1, stream_).Bind(2, shard).Bind(3, c.checkpoint);
        ASSIGN_OR_RETURN(bool row, lag.Step());
        if (row) {
          c.lag_records = lag.ColumnInt(0);
          if (!lag.IsNull(1)) {
            c.oldest_unprocessed_age_micros =
                std::max<int64_t>(0, now - lag.ColumnInt(1));
          }
        }
        s.consumers.push_back(std::move(c));
      }
    }
    for (auto& [shard, s] : by_shard) stats.push_back(std::move(s));
    return Status::OK();
  }));
  return stats;
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
