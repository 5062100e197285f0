// The change feed (emulator/stream) on both backends from one source (Sqlite/... and
// Postgres/...): the `entry` stream's records, order, pruning, checkpoints, wake-ups and
// attaching other tables; then what holds only with several PostgreSQL nodes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "emulator/env/clock.h"
#include "emulator/stream/change_feed.h"
#include "emulator/stream/stream_triggers.h"
#include "src/app/schema.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

using testing::Backend;

constexpr int64_t kHour = 3600LL * 1000000;

std::unique_ptr<testing::BackendTestDatabase> OpenEntryDb(Backend backend,
                                                          const testing::TempDir& dir,
                                                          Clock* clock) {
  return testing::OpenEntryTestDatabase(backend, dir.File("sheetlog.db"), clock);
}

std::unique_ptr<Database> OpenDb(const testing::TempDir& dir, Clock* clock) {
  return testing::OpenTestDatabase(dir.File("sheetlog.db"), clock);
}

Status InsertEntry(Connection& c, const std::string& sheet, int64_t segment, int64_t num,
                   const std::string& type = "SetCell",
                   std::optional<std::string> external = std::nullopt) {
  return c
      .RunSql(
          "INSERT INTO entry (sheet_id, segment, num, seq, created, "
          "external, type, version, body) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, "
          "1, ?7)",
          {sheet, segment, num, segment * 1000 + num,
           external ? Value(*external) : Value::Null(), type,
           external ? Value::Null() : Value(R"({"ref":"A1","value":1})")})
      .status();
}

Status Insert(Transactions& db, const std::string& sheet, int64_t segment, int64_t num,
              const std::string& type = "SetCell") {
  return db.Write(
      [&](Connection& c) { return InsertEntry(c, sheet, segment, num, type); });
}

// Runs one statement without parameters in a write transaction.
Status WriteSql(Transactions& db, const std::string& sql) {
  return db.Write([&](Connection& c) { return c.RunSql(sql, {}).status(); });
}

// The shard the triggers must pick: sheetlog_hash(partition key) % shard_count.
int ShardOf(Transactions& db, const std::string& sheet, int64_t segment,
            int shard_count = 4) {
  int shard = -1;
  EXPECT_TRUE(db.Read([&](Connection& c) -> Status {
                  return c
                      .RunSql("SELECT sheetlog_hash(?1, ?2) % ?3",
                              {sheet, segment, shard_count},
                              [&](const SqlRow& row) {
                                shard = static_cast<int>(row.Int(0));
                                return false;
                              })
                      .status();
                }).ok());
  return shard;
}

std::vector<StreamRecord> ReadAll(ChangeFeed& feed, int shard, int64_t after = 0) {
  auto records = feed.Read(shard, after, ChangeFeed::kMaxReadLimit);
  EXPECT_OK(records);
  return records.ok() ? *records : std::vector<StreamRecord>{};
}

class ChangeFeedTest : public ::testing::TestWithParam<Backend> {
 protected:
  ChangeFeedTest() : db_(OpenEntryDb(GetParam(), dir_, &clock_)) {}
  void SetUp() override { ASSERT_NE(db_->get(), nullptr); }

  Transactions* db() { return db_->get(); }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<testing::BackendTestDatabase> db_;
};

TEST_P(ChangeFeedTest, InsertModifyRemoveCarryTheirImagesInCommitOrder) {
  ChangeFeed feed(db(), &clock_);
  const int64_t t0 = clock_.NowMicros();

  ASSERT_OK(Insert(*db(), "sheet-a", 0, 0, "Snapshot"));
  clock_.AdvanceSeconds(1);
  ASSERT_OK(WriteSql(*db(),
                     "UPDATE entry SET snapshot_root = 'root-1' WHERE "
                     "sheet_id = 'sheet-a'"));
  clock_.AdvanceSeconds(1);
  ASSERT_OK(WriteSql(*db(), "DELETE FROM entry WHERE sheet_id = 'sheet-a'"));

  const int shard = ShardOf(*db(), "sheet-a", 0);
  std::vector<StreamRecord> records = ReadAll(feed, shard);
  ASSERT_EQ(records.size(), 3u);
  const nlohmann::json keys = {{"sheet_id", "sheet-a"}, {"segment", 0}, {"num", 0}};

  EXPECT_EQ(records[0].event_name, StreamEventName::kInsert);
  EXPECT_EQ(records[0].sequence, 1);
  EXPECT_EQ(records[0].shard, shard);
  EXPECT_EQ(records[0].stream, "entry");
  EXPECT_EQ(records[0].keys, keys);
  EXPECT_EQ(records[0].new_image["type"], "Snapshot");
  EXPECT_EQ(records[0].new_image["body"], R"({"ref":"A1","value":1})");
  // NULL columns are absent, as attributes that are not present on DynamoDB.
  EXPECT_FALSE(records[0].new_image.contains("external"));
  EXPECT_FALSE(records[0].new_image.contains("snapshot_root"));
  EXPECT_TRUE(records[0].old_image.is_null());
  EXPECT_EQ(records[0].created_micros, t0);

  EXPECT_EQ(records[1].event_name, StreamEventName::kModify);
  EXPECT_EQ(records[1].sequence, 2);
  EXPECT_EQ(records[1].keys, keys);
  EXPECT_EQ(records[1].new_image["snapshot_root"], "root-1");
  EXPECT_FALSE(records[1].old_image.contains("snapshot_root"));
  EXPECT_EQ(records[1].old_image["type"], "Snapshot");
  EXPECT_EQ(records[1].created_micros, t0 + 1000000);

  EXPECT_EQ(records[2].event_name, StreamEventName::kRemove);
  EXPECT_EQ(records[2].sequence, 3);
  EXPECT_EQ(records[2].keys, keys);
  EXPECT_TRUE(records[2].new_image.is_null());
  EXPECT_EQ(records[2].old_image["snapshot_root"], "root-1");

  // Reading after a sequence continues from there.
  std::vector<StreamRecord> tail = ReadAll(feed, shard, 2);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].sequence, 3);
}

TEST_P(ChangeFeedTest, UpdateThatChangesNothingWritesNoRecord) {
  ChangeFeed feed(db(), &clock_);
  ASSERT_OK(Insert(*db(), "s", 0, 0));
  ASSERT_OK(WriteSql(*db(), "UPDATE entry SET type = type WHERE sheet_id = 's'"));
  EXPECT_EQ(ReadAll(feed, ShardOf(*db(), "s", 0)).size(), 1u);
}

TEST_P(ChangeFeedTest, RolledBackWriteLeavesNoRecordAndNoGap) {
  ChangeFeed feed(db(), &clock_);
  Status failed = db()->Write([](Connection& c) {
    RETURN_IF_ERROR(InsertEntry(c, "s", 0, 0));
    return ConditionFailed("lost the race after writing");
  });
  ASSERT_TRUE(failed.IsConditionFailed());
  const int shard = ShardOf(*db(), "s", 0);
  EXPECT_TRUE(ReadAll(feed, shard).empty());

  // A failing statement (duplicate key) inside an otherwise committed batch.
  ASSERT_OK(Insert(*db(), "s", 0, 0));
  EXPECT_FALSE(Insert(*db(), "s", 0, 0).ok());
  ASSERT_OK(Insert(*db(), "s", 0, 1));
  std::vector<StreamRecord> records = ReadAll(feed, shard);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].sequence, 1);
  EXPECT_EQ(records[0].keys["num"], 0);
  EXPECT_EQ(records[1].sequence, 2);
  EXPECT_EQ(records[1].keys["num"], 1);
}

TEST_P(ChangeFeedTest, ShardsFollowThePartitionKeyAndKeepEachKeyInOrder) {
  ChangeFeed feed(db(), &clock_);
  // Interleave appends of many segments, several writers at once.
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int num = 0; num < 10; ++num) {
        for (int s = w * 5; s < w * 5 + 5; ++s) {
          EXPECT_OK(Insert(*db(), "sheet-" + std::to_string(s), s % 2, num));
        }
      }
    });
  }
  for (auto& t : writers) t.join();

  std::set<int> used;
  int total = 0;
  for (int shard = 0; shard < 4; ++shard) {
    std::vector<StreamRecord> records = ReadAll(feed, shard);
    std::map<std::string, int64_t> last_num;
    for (size_t i = 0; i < records.size(); ++i) {
      const StreamRecord& r = records[i];
      EXPECT_EQ(r.sequence, static_cast<int64_t>(i + 1)) << "no gaps within a shard";
      const std::string sheet = r.keys["sheet_id"];
      const int64_t segment = r.keys["segment"];
      EXPECT_EQ(ShardOf(*db(), sheet, segment), shard);
      // Commit order: each segment's entries arrive in num order.
      auto it = last_num.find(sheet);
      int64_t num = r.keys["num"];
      if (it != last_num.end()) {
        EXPECT_EQ(num, it->second + 1);
      } else {
        EXPECT_EQ(num, 0);
      }
      last_num[sheet] = num;
      used.insert(shard);
      ++total;
    }
  }
  EXPECT_EQ(total, 200);
  EXPECT_GE(used.size(), 2u) << "20 keys should spread over more than one shard";
}

TEST_P(ChangeFeedTest, PruneDeletesRecordsOlderThanRetention) {
  ChangeFeed feed(db(), &clock_);
  ASSERT_OK(Insert(*db(), "s", 0, 0));
  clock_.Advance(23 * kHour);
  ASSERT_OK(Insert(*db(), "s", 0, 1));
  clock_.Advance(2 * kHour);  // the first is 25 h old, the second 2 h

  auto pruned = feed.Prune();
  ASSERT_OK(pruned);
  EXPECT_EQ(*pruned, 1);
  const int shard = ShardOf(*db(), "s", 0);
  std::vector<StreamRecord> records = ReadAll(feed, shard);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].sequence, 2);

  // Sequences never repeat, even once a shard is empty.
  clock_.Advance(48 * kHour);
  ASSERT_EQ(*feed.Prune(), 1);
  ASSERT_OK(Insert(*db(), "s", 0, 2));
  records = ReadAll(feed, shard);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].sequence, 3);

  // A shorter retention window applies at once.
  ASSERT_OK(feed.Configure({4, kHour}));
  clock_.Advance(kHour + 1);
  EXPECT_EQ(*feed.Prune(), 1);
}

TEST_P(ChangeFeedTest, CheckpointsSurviveReopenAndNeverMoveBackwards) {
  {
    ChangeFeed feed(db(), &clock_);
    ASSERT_OK(feed.SaveCheckpoint("effects", 2, 17));
    ASSERT_OK(feed.SaveCheckpoint("effects", 2, 9));  // ignored: older
    ASSERT_OK(feed.SaveCheckpoint("effects", 0, 3));
    ASSERT_OK(feed.SaveCheckpoint("other", 2, 1));
  }
  db_->Reopen();
  ASSERT_NE(db(), nullptr);
  ChangeFeed feed(db(), &clock_);
  EXPECT_EQ(*feed.Checkpoint("effects", 2), 17);
  EXPECT_EQ(*feed.Checkpoint("effects", 1), 0);
  EXPECT_EQ(*feed.Checkpoints("effects"), (std::map<int, int64_t>{{0, 3}, {2, 17}}));
  EXPECT_EQ(*feed.Checkpoint("other", 2), 1);
  ASSERT_OK(feed.ResetCheckpoints("effects"));
  EXPECT_TRUE(feed.Checkpoints("effects")->empty());
  EXPECT_EQ(*feed.Checkpoint("other", 2), 1);
}

TEST_P(ChangeFeedTest, StatsReportLatestCheckpointLagAndAge) {
  ChangeFeed feed(db(), &clock_);
  const int shard = ShardOf(*db(), "s", 0);
  for (int num = 0; num < 3; ++num) {
    ASSERT_OK(Insert(*db(), "s", 0, num));
    clock_.AdvanceSeconds(10);
  }
  ASSERT_OK(feed.SaveCheckpoint("effects", shard, 1));
  auto stats = feed.Stats();
  ASSERT_OK(stats);
  ASSERT_EQ(stats->size(), 4u);
  for (const ShardStats& s : *stats) {
    ASSERT_EQ(s.consumers.size(), 1u);
    EXPECT_EQ(s.consumers[0].consumer, "effects");
    if (s.shard != shard) {
      EXPECT_EQ(s.latest_sequence, 0);
      EXPECT_EQ(s.consumers[0].lag_records, 0);
      continue;
    }
    EXPECT_EQ(s.latest_sequence, 3);
    EXPECT_EQ(s.oldest_sequence, 1);
    EXPECT_EQ(s.retained_records, 3);
    EXPECT_EQ(s.consumers[0].checkpoint, 1);
    EXPECT_EQ(s.consumers[0].lag_records, 2);
    // Record 2 was written 10 s after the start; now is 30 s after.
    EXPECT_EQ(s.consumers[0].oldest_unprocessed_age_micros, 20 * 1000000);
  }
}

TEST_P(ChangeFeedTest, CommitsWakeWaitersAndSubscribers) {
  ChangeFeed feed(db(), &clock_);
  std::atomic<int> calls{0};
  int id = feed.Subscribe([&] { calls.fetch_add(1); });

  const uint64_t seen = feed.ChangeVersion();
  std::atomic<bool> woke{false};
  std::thread waiter([&] { woke = feed.WaitForChange(seen, INT64_MAX); });
  ASSERT_OK(Insert(*db(), "s", 0, 0));
  waiter.join();  // returns only because the commit woke it (no deadline)
  EXPECT_TRUE(woke);
  EXPECT_GT(feed.ChangeVersion(), seen);
  EXPECT_GE(calls.load(), 1);

  feed.Unsubscribe(id);
  const int before = calls.load();
  ASSERT_OK(Insert(*db(), "s", 0, 1));
  EXPECT_EQ(calls.load(), before);

  // WakeWaiters releases a waiter with nothing new; a passed deadline returns false.
  const uint64_t now_seen = feed.ChangeVersion();
  std::atomic<bool> released_done{false};
  std::thread released([&] {
    EXPECT_FALSE(feed.WaitForChange(now_seen, INT64_MAX));
    released_done = true;
  });
  // A wake that comes before the waiter blocks is not remembered: repeat until it ran.
  while (!released_done) {
    feed.WakeWaiters();
    std::this_thread::yield();
  }
  released.join();
  EXPECT_FALSE(feed.WaitForChange(feed.ChangeVersion(), clock_.NowMicros()));
}

TEST_P(ChangeFeedTest, AnotherTableCanBeAttached) {
  ASSERT_OK(
      WriteSql(*db(), GetParam() == Backend::kSqlite
                          ? "CREATE TABLE job (owner TEXT NOT NULL, id INTEGER NOT "
                            "NULL, payload BLOB, note TEXT, PRIMARY KEY (owner, id))"
                          : "CREATE TABLE job (owner text COLLATE \"C\" NOT NULL, "
                            "id bigint NOT NULL, payload bytea, note text, "
                            "PRIMARY KEY (owner, id))"));
  StreamSource source{"job", {"owner"}, {"id"}, {}};
  StreamSettings settings;
  settings.shard_count = 1;
  ASSERT_OK(
      db()->Write([&](Connection& c) { return AttachStream(c, source, settings); }));
  // Attaching twice is a no-op: still one record per change.
  ASSERT_OK(
      db()->Write([&](Connection& c) { return AttachStream(c, source, settings); }));
  ASSERT_OK(db()->Write([](Connection& c) -> Status {
    RETURN_IF_ERROR(c.RunSql("INSERT INTO job VALUES (?1, ?2, ?3, NULL)",
                             {"ann", 1, Value::Bytes(std::string("\x00\xff", 2))})
                        .status());
    RETURN_IF_ERROR(c.RunSql("UPDATE job SET note = 'hi' WHERE id = 1", {}).status());
    return c.RunSql("DELETE FROM job", {}).status();
  }));
  ChangeFeed feed(db(), &clock_, "job");
  EXPECT_EQ(feed.Config()->shard_count, 1);
  std::vector<StreamRecord> records = ReadAll(feed, 0);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].stream, "job");
  EXPECT_EQ(records[0].keys, (nlohmann::json{{"owner", "ann"}, {"id", 1}}));
  EXPECT_EQ(records[0].new_image,
            (nlohmann::json{{"owner", "ann"}, {"id", 1}, {"payload", "00FF"}}));
  EXPECT_EQ(records[1].event_name, StreamEventName::kModify);
  EXPECT_EQ(records[1].new_image["note"], "hi");
  EXPECT_EQ(records[2].event_name, StreamEventName::kRemove);
  // The entry stream is separate.
  ChangeFeed entries(db(), &clock_);
  EXPECT_TRUE(ReadAll(entries, 0).empty());

  Status bad = db()->Write([](Connection& c) {
    return AttachStream(c, StreamSource{"job", {"nope"}, {}, {}});
  });
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  Status missing = db()->Write([](Connection& c) {
    return AttachStream(c, StreamSource{"no_table", {"id"}, {}, {}});
  });
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);

  ASSERT_OK(db()->Write([](Connection& c) { return DetachStream(c, "job"); }));
  ASSERT_OK(WriteSql(*db(), "INSERT INTO job VALUES ('bob', 2, NULL, NULL)"));
  EXPECT_EQ(ReadAll(feed, 0).size(), 3u);
}

TEST_P(ChangeFeedTest, ShardCountComesFromTheConfigRow) {
  ChangeFeed feed(db(), &clock_);
  EXPECT_EQ(feed.Config()->shard_count, 4);
  EXPECT_EQ(feed.Config()->retention_micros, 24 * kHour);
  ASSERT_OK(feed.Configure({1, 24 * kHour}));
  for (int s = 0; s < 8; ++s)
    ASSERT_OK(Insert(*db(), "sheet-" + std::to_string(s), 0, 0));
  EXPECT_EQ(ReadAll(feed, 0).size(), 8u);
  EXPECT_EQ(feed.Configure({0, kHour}).code(), StatusCode::kInvalidArgument);
  ChangeFeed none(db(), &clock_, "missing");
  EXPECT_TRUE(none.Config().status().IsNotFound());
  EXPECT_EQ(feed.Read(0, 0, 0).status().code(), StatusCode::kInvalidArgument);
}

// SQLite only: databases created before the application attached `entry` with
// AttachStream keep the
// hand-written triggers of the old schema/007 (tests/data/legacy_entry_triggers.sql):
// both must write the same records, or old and new data directories would feed the
// snapshot pipeline and the live updates differently.
TEST(ChangeFeedSqliteTest, AttachedEntryTriggersWriteWhatTheLegacyOnesWrote) {
  auto records_of = [](bool legacy) {
    testing::TempDir dir;
    ManualClock clock;
    auto db = OpenDb(dir, &clock);
    if (legacy) {
      std::ifstream file(std::string(SHEETLOG_SOURCE_DIR) +
                         "/tests/data/legacy_entry_triggers.sql");
      const std::string sql((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
      EXPECT_NE(sql.find("CREATE TRIGGER"), std::string::npos);
      EXPECT_OK(db->Write([&](SqliteConnection& c) -> Status {
        for (const char* event : {"insert", "update", "delete"}) {
          RETURN_IF_ERROR(c.Exec(std::string("DROP TRIGGER stream_entry_") + event));
        }
        return c.Exec(sql);
      }));
    }
    EXPECT_OK(Insert(*db, "sheet-a", 0, 0, "Snapshot"));
    EXPECT_OK(db->Write([](SqliteConnection& c) {
      return InsertEntry(c, "sheet-a", 0, 1, "SetCell", std::string("entries/x"));
    }));
    EXPECT_OK(db->Write([](SqliteConnection& c) -> Status {
      RETURN_IF_ERROR(c.Exec("UPDATE entry SET snapshot_root = 'r' WHERE num = 0"));
      RETURN_IF_ERROR(c.Exec(R"(UPDATE entry SET metadata = '{"snapshot":"s"}')"));
      RETURN_IF_ERROR(c.Exec("UPDATE entry SET type = type"));  // no change: no record
      return c.Exec("DELETE FROM entry WHERE num = 1");
    }));
    ChangeFeed feed(db.get(), &clock);
    std::vector<StreamRecord> all = ReadAll(feed, ShardOf(*db, "sheet-a", 0));
    nlohmann::json out = nlohmann::json::array();
    for (const StreamRecord& r : all) {
      out.push_back({static_cast<int>(r.event_name), r.sequence, r.keys, r.new_image,
                     r.old_image, r.created_micros});
    }
    return out;
  };
  const nlohmann::json attached = records_of(false);
  ASSERT_EQ(attached.size(), 6u);  // 2 inserts, 3 modifies (root, 2 metadata), 1 remove
  EXPECT_EQ(attached[3][3]["metadata"], R"({"snapshot":"s"})");
  EXPECT_EQ(records_of(true), attached);
}

INSTANTIATE_TEST_SUITE_P(Sqlite, ChangeFeedTest, ::testing::Values(Backend::kSqlite));
INSTANTIATE_TEST_SUITE_P(Postgres, ChangeFeedTest, ::testing::Values(Backend::kPostgres));

// sheetlog_hash as database.cc defines it: FNV-1a over the bytes of each argument's
// text, each followed by 0xff, from database.cc's offset basis, top bit cleared.
int64_t ExpectedHash(const std::vector<std::optional<std::string>>& texts) {
  uint64_t h = 1469598103934665603ULL;
  for (const std::optional<std::string>& text : texts) {
    for (unsigned char c : text.value_or("")) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    h ^= 0xff;
    h *= 1099511628211ULL;
  }
  return static_cast<int64_t>(h & 0x7fffffffffffffffULL);
}

// The shard of a key is the same whichever backend wrote it: sheetlog_hash gives SQLite's
// values on PostgreSQL (text, integers as their digits, NULL as nothing).
TEST_P(ChangeFeedTest, SheetlogHashGivesTheSameValuesOnEveryBackend) {
  struct Sample {
    std::vector<Value> args;
    std::vector<std::optional<std::string>> texts;
  };
  const std::vector<Sample> samples = {
      {{"sheet-a", 0}, {"sheet-a", "0"}},
      {{"0b6a7c2e-4d1f-4e8a-9c3b-5f2d1e0a9b8c", 17},
       {"0b6a7c2e-4d1f-4e8a-9c3b-5f2d1e0a9b8c", "17"}},
      {{"", -5}, {"", "-5"}},
      {{"\xc3\xa9t\xc3\xa9 \xe2\x98\x83", int64_t{9007199254740993}},
       {"\xc3\xa9t\xc3\xa9 \xe2\x98\x83", "9007199254740993"}},
      {{"ab", "c"}, {"ab", "c"}},
      {{"a", "bc"}, {"a", "bc"}},
      {{Value::Null(), "x"}, {std::nullopt, "x"}},
  };
  for (const Sample& sample : samples) {
    std::string sql = "SELECT sheetlog_hash(";
    for (size_t i = 0; i < sample.args.size(); ++i) {
      sql += (i > 0 ? ", ?" : "?") + std::to_string(i + 1);
    }
    sql += ")";
    int64_t hash = -1;
    ASSERT_OK(db()->Read([&](Connection& c) -> Status {
      return c
          .RunSql(sql, sample.args,
                  [&](const SqlRow& row) {
                    hash = row.Int(0);
                    return false;
                  })
          .status();
    }));
    EXPECT_EQ(hash, ExpectedHash(sample.texts)) << sample.texts[0].value_or("NULL");
  }
  EXPECT_NE(ExpectedHash({"ab", "c"}), ExpectedHash({"a", "bc"}));
}

// Several nodes on one PostgreSQL database (a promise every service keeps there).
class PostgresChangeFeedNodesTest : public ::testing::Test {
 protected:
  PostgresChangeFeedNodesTest()
      : node1_(OpenEntryDb(Backend::kPostgres, dir_, &clock_)) {}

  void SetUp() override {
    ASSERT_NE(node1_->get(), nullptr);
    PostgresDatabase::Options options;
    options.conninfo = node1_->conninfo();
    options.clock = &clock_;
    Result<std::unique_ptr<PostgresDatabase>> node2 = PostgresDatabase::Open(options);
    ASSERT_OK(node2);
    node2_ = std::move(node2).value();
    ASSERT_OK(node2_->Write(AttachEntryStream));  // a no-op: attached by node 1
    // One shard: every record of the test meets every other in one order.
    ChangeFeed feed(node1(), &clock_);
    ASSERT_OK(feed.Configure({1, 24 * kHour}));
  }

  Transactions* node1() { return node1_->get(); }
  Transactions* node2() { return node2_.get(); }

  // Backends of this database waiting for a lock (a transaction waiting for another
  // to end), as PostgreSQL reports them.
  int64_t LockWaiters() {
    int64_t waiting = -1;
    EXPECT_OK(node1()->Read([&](Connection& c) -> Status {
      return c
          .RunSql(
              "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = "
              "current_database() AND wait_event_type = 'Lock'",
              {},
              [&](const SqlRow& row) {
                waiting = row.Int(0);
                return false;
              })
          .status();
    }));
    return waiting;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<testing::BackendTestDatabase> node1_;
  std::unique_ptr<PostgresDatabase> node2_;
};

// A reader on node 2 wakes when node 1 commits a record (LISTEN/NOTIFY), with no
// commit of its own and no deadline.
TEST_F(PostgresChangeFeedNodesTest, AReaderOnOneNodeWakesWhenAnotherNodeCommits) {
  ChangeFeed feed2(node2(), &clock_);
  for (int num = 0; num < 3; ++num) {
    const uint64_t seen = feed2.ChangeVersion();
    std::future<bool> woken = std::async(
        std::launch::async, [&] { return feed2.WaitForChange(seen, INT64_MAX); });
    ASSERT_OK(Insert(*node1(), "s", 0, num));
    const bool in_time =
        woken.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
    if (!in_time) feed2.WakeWaiters();  // end the wait, then fail
    ASSERT_TRUE(in_time) << "record " << num << ": node 1's commit woke nobody on node 2";
    EXPECT_TRUE(woken.get());
    auto records = feed2.Read(0, num, 10);
    ASSERT_OK(records);
    EXPECT_EQ(records->size(), 1u);
  }
}

// No writer waits for another's commit, and a record committed after a consumer read
// never takes a number at or below what it read. Node 1 writes a record and holds its
// transaction open; node 2 writes the same shard meanwhile and commits without waiting
// (the shard's counter is no longer locked by writers: schema 012). A consumer reading
// then sees node 2's record as number 1 and checkpoints it; node 1's record, committed
// afterwards, is number 2, and the consumer reads it after its checkpoint.
TEST_F(PostgresChangeFeedNodesTest, AWriterNeverWaitsAndALaterCommitTakesALaterNumber) {
  ChangeFeed consumer(node2(), &clock_);
  std::mutex mu;
  std::condition_variable cv;
  bool first_wrote = false;
  bool release_first = false;
  std::thread first([&] {
    EXPECT_OK(node1()->Write([&](Connection& c) -> Status {
      RETURN_IF_ERROR(InsertEntry(c, "first", 0, 0));
      std::unique_lock<std::mutex> lock(mu);
      first_wrote = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release_first; });
      return Status::OK();
    }));
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return first_wrote; });
  }
  // Commits while the first transaction is open (a lock across the first's commit would
  // hold it here until the release below: the test would hang, and fail at ctest's
  // timeout).
  ASSERT_OK(Insert(*node2(), "second", 0, 0));
  EXPECT_EQ(LockWaiters(), 0);
  std::vector<StreamRecord> seen = ReadAll(consumer, 0);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].sequence, 1);
  EXPECT_EQ(seen[0].keys["sheet_id"], "second");
  {
    std::lock_guard<std::mutex> lock(mu);
    release_first = true;
    cv.notify_all();
  }
  first.join();
  std::vector<StreamRecord> later = ReadAll(consumer, 0, seen.back().sequence);
  ASSERT_EQ(later.size(), 1u) << "a record committed after the consumer's read was lost";
  EXPECT_EQ(later[0].sequence, 2);
  EXPECT_EQ(later[0].keys["sheet_id"], "first");
}

// The ordering guarantee under many concurrent committers on three nodes, each
// transaction writing 1-3 records of random sheets and holding itself open for a
// random while (a few scheduler yields), some rolled back; a consumer on every node
// reads as the writes go on. At every read the numbers it gets continue its last one
// by one (nothing skipped, nothing twice), and in the end each consumer has seen every
// committed record exactly once and no rolled-back one.
TEST_F(PostgresChangeFeedNodesTest,
       ConsumersNeverSkipARecordCommittedAfterTheyReadPastIt) {
  PostgresDatabase::Options options;
  options.conninfo = node1_->conninfo();
  options.clock = &clock_;
  Result<std::unique_ptr<PostgresDatabase>> node3 = PostgresDatabase::Open(options);
  ASSERT_OK(node3);
  std::vector<Transactions*> nodes = {node1(), node2(), node3->get()};
  constexpr int kWriters = 6;
  constexpr int kTransactions = 30;
  std::atomic<int> writers_running{kWriters};
  std::mutex committed_mu;
  std::set<std::string> committed;  // "sheet/num" of every committed record
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937 rng(1000 + w);
      Transactions* node = nodes[w % nodes.size()];
      for (int t = 0; t < kTransactions; ++t) {
        const int records = 1 + static_cast<int>(rng() % 3);
        const bool roll_back = rng() % 8 == 0;
        const int hold = static_cast<int>(rng() % 200);
        std::vector<std::string> sheets;
        for (int r = 0; r < records; ++r) {
          sheets.push_back("w" + std::to_string(w) + "-" + std::to_string(rng() % 3));
        }
        std::vector<std::string> written;
        Status status = node->Write([&](Connection& c) -> Status {
          written.clear();
          for (int r = 0; r < records; ++r) {
            const int64_t num = t * 10 + r;
            RETURN_IF_ERROR(InsertEntry(c, sheets[r], 0, num));
            written.push_back(sheets[r] + "/" + std::to_string(num));
          }
          for (int i = 0; i < hold; ++i) std::this_thread::yield();
          // An error the database does not run again: the transaction rolls back.
          return roll_back ? InvalidArgument("rolled back by the test") : Status::OK();
        });
        if (!roll_back) {
          EXPECT_OK(status);
          std::lock_guard<std::mutex> lock(committed_mu);
          committed.insert(written.begin(), written.end());
        }
      }
      --writers_running;
    });
  }
  auto consume = [&](Transactions* node) {
    ChangeFeed feed(node, &clock_);
    std::vector<std::string> seen;
    int64_t last = 0;
    while (true) {
      const bool writing = writers_running > 0;
      for (const StreamRecord& r : ReadAll(feed, 0, last)) {
        EXPECT_EQ(r.sequence, last + 1) << "a record was skipped or seen twice";
        last = r.sequence;
        seen.push_back(r.keys["sheet_id"].get<std::string>() + "/" +
                       std::to_string(r.keys["num"].get<int64_t>()));
      }
      if (!writing) break;  // read once more after the last commit: all is there
      std::this_thread::yield();
    }
    return seen;
  };
  std::vector<std::vector<std::string>> seen(nodes.size());
  std::vector<std::thread> consumers;
  for (size_t n = 0; n < nodes.size(); ++n) {
    consumers.emplace_back([&, n] { seen[n] = consume(nodes[n]); });
  }
  for (auto& t : writers) t.join();
  for (auto& t : consumers) t.join();
  for (size_t n = 0; n < nodes.size(); ++n) {
    std::set<std::string> distinct(seen[n].begin(), seen[n].end());
    EXPECT_EQ(distinct.size(), seen[n].size())
        << "node " << n + 1 << " saw a record twice";
    EXPECT_EQ(distinct, committed) << "node " << n + 1;
  }
}

// Two nodes writing one shard at once, with several connections each; a consumer on
// either node, reading as the writes go on, sees every record once, in order, none
// skipped (sequences 1, 2, ... without a gap at every read), each key's entries in order.
TEST_F(PostgresChangeFeedNodesTest, ConsumersOnEitherNodeSeeEveryRecordOnceInOrder) {
  constexpr int kWritersPerNode = 2;
  constexpr int kEntries = 25;
  constexpr int kTotal = 2 * kWritersPerNode * kEntries;
  std::atomic<int> writers_running{2 * kWritersPerNode};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2 * kWritersPerNode; ++w) {
    Transactions* node = w % 2 == 0 ? node1() : node2();
    writers.emplace_back([&, node, w] {
      for (int num = 0; num < kEntries; ++num) {
        EXPECT_OK(Insert(*node, "writer-" + std::to_string(w), 0, num));
      }
      --writers_running;
    });
  }
  auto consume = [&](Transactions* node) {
    ChangeFeed feed(node, &clock_);
    std::vector<StreamRecord> seen;
    const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (static_cast<int>(seen.size()) < kTotal &&
           std::chrono::steady_clock::now() < bound) {
      const bool writing = writers_running > 0;
      const int64_t after = seen.empty() ? 0 : seen.back().sequence;
      for (StreamRecord& r : ReadAll(feed, 0, after)) {
        EXPECT_EQ(r.sequence, static_cast<int64_t>(seen.size()) + 1)
            << "a record was skipped or seen twice";
        seen.push_back(std::move(r));
      }
      if (!writing) break;  // read once more after the last write: all is there
      std::this_thread::yield();
    }
    return seen;
  };
  std::vector<StreamRecord> on_node1;
  std::vector<StreamRecord> on_node2;
  std::thread consumer1([&] { on_node1 = consume(node1()); });
  std::thread consumer2([&] { on_node2 = consume(node2()); });
  for (auto& t : writers) t.join();
  consumer1.join();
  consumer2.join();
  for (const std::vector<StreamRecord>* seen : {&on_node1, &on_node2}) {
    ASSERT_EQ(seen->size(), static_cast<size_t>(kTotal));
    std::map<std::string, int64_t> next_num;
    for (size_t i = 0; i < seen->size(); ++i) {
      const StreamRecord& r = (*seen)[i];
      EXPECT_EQ(r.sequence, static_cast<int64_t>(i + 1));
      EXPECT_EQ(r.keys["num"].get<int64_t>(),
                next_num[r.keys["sheet_id"].get<std::string>()]++)
          << "a writer's entries out of order";
    }
  }
}

}  // namespace
}  // namespace sheetlog
