#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <thread>

#include "emulator/env/clock.h"
#include "emulator/stream/change_feed.h"
#include "emulator/stream/stream_triggers.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

constexpr int64_t kHour = 3600LL * 1000000;

std::unique_ptr<Database> OpenDb(const testing::TempDir& dir, Clock* clock) {
  return testing::OpenTestDatabase(dir.File("sheetlog.db"), clock);
}

Status InsertEntry(SqliteConnection& c, const std::string& sheet, int64_t segment,
                   int64_t num, const std::string& type = "SetCell",
                   std::optional<std::string> external = std::nullopt) {
  ASSIGN_OR_RETURN(
      Statement s,
      c.Prepare("INSERT INTO entry (sheet_id, segment, num, seq, created, "
                "external, type, version, body) VALUES (?, ?, ?, ?, 1, ?, ?, "
                "1, ?)"));
  s.Bind(1, sheet).Bind(2, segment).Bind(3, num).Bind(4, segment * 1000 + num);
  if (external) {
    s.Bind(5, *external).BindNull(7);
  } else {
    s.BindNull(5).Bind(7, R"({"ref":"A1","value":1})");
  }
  s.Bind(6, type);
  return s.Run();
}

Status Insert(Database& db, const std::string& sheet, int64_t segment, int64_t num,
              const std::string& type = "SetCell") {
  return db.Write(
      [&](SqliteConnection& c) { return InsertEntry(c, sheet, segment, num, type); });
}

// The shard the triggers must pick: sheetlog_hash(partition key) % shard_count.
int ShardOf(Database& db, const std::string& sheet, int64_t segment,
            int shard_count = 4) {
  int shard = -1;
  EXPECT_TRUE(db.Read([&](SqliteConnection& c) -> Status {
                  ASSIGN_OR_RETURN(Statement s,
                                   c.Prepare("SELECT sheetlog_hash(?, ?) % ?"));
                  s.Bind(1, sheet).Bind(2, segment).Bind(3, shard_count);
                  ASSIGN_OR_RETURN(bool row, s.Step());
                  shard = row ? static_cast<int>(s.ColumnInt(0)) : -1;
                  return Status::OK();
                }).ok());
  return shard;
}

std::vector<StreamRecord> ReadAll(ChangeFeed& feed, int shard, int64_t after = 0) {
  auto records = feed.Read(shard, after, ChangeFeed::kMaxReadLimit);
  EXPECT_OK(records);
  return records.ok() ? *records : std::vector<StreamRecord>{};
}

TEST(ChangeFeedTest, InsertModifyRemoveCarryTheirImagesInCommitOrder) {
  testing::TempDir dir;
  ManualClock clock;
  auto db = OpenDb(dir, &clock);
  ChangeFeed feed(db.get(), &clock);
  const int64_t t0 = clock.NowMicros();

  ASSERT_OK(Insert(*db, "sheet-a", 0, 0, "Snapshot"));
  clock.AdvanceSeconds(1);
  ASSERT_OK(db->Write([](SqliteConnection& c) {
    return c.Exec(
        "UPDATE entry SET snapshot_root = 'root-1' WHERE "
        "sheet_id = 'sheet-a'");
  }));
  clock.AdvanceSeconds(1);
  ASSERT_OK(db->Write([](SqliteConnection& c) {
    return c.Exec("DELETE FROM entry WHERE sheet_id = 'sheet-a'");
  }));

  const int shard = ShardOf(*db, "sheet-a", 0);
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

TEST(ChangeFeedTest, UpdateThatChangesNothingWritesNoRecord) {
  testing::TempDir dir;
  ManualClock clock;
  auto db = OpenDb(dir, &clock);
  ChangeFeed feed(db.get(), &clock);
  ASSERT_OK(Insert(*db, "s", 0, 0));
  ASSERT_OK(db->Write([](SqliteConnection& c) {
    return c.Exec("UPDATE entry SET type = type WHERE sheet_id = 's'");
  }));
  EXPECT_EQ(ReadAll(feed, ShardOf(*db, "s", 0)).size(), 1u);
}

TEST(ChangeFeedTest, RolledBackWriteLeavesNoRecordAndNoGap) {
  testing::TempDir dir;
  ManualClock clock;
  auto db = OpenDb(dir, &clock);
  ChangeFeed feed(db.get(), &clock);
  Status failed = db->Write([](SqliteConnection& c) {
    RETURN_IF_ERROR(InsertEntry(c, "s", 0, 0));
    return ConditionFailed("lost the race after writing");
  });
  ASSERT_TRUE(failed.IsConditionFailed());
  const int shard = ShardOf(*db, "s", 0);
  EXPECT_TRUE(ReadAll(feed, shard).empty());

  // A failing statement (duplicate key) inside an otherwise committed batch.
  ASSERT_OK(Insert(*db, "s", 0, 0));
  EXPECT_FALSE(Insert(*db, "s", 0, 0).ok());
  ASSERT_OK(Insert(*db, "s", 0, 1));
  std::vector<StreamRecord> records = ReadAll(feed, shard);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].sequence, 1);
  EXPECT_EQ(records[0].keys["num"], 0);
  EXPECT_EQ(records[1].sequence, 2);
  EXPECT_EQ(records[1].keys["num"], 1);
}

TEST(ChangeFeedTest, ShardsFollowThePartitionKeyAndKeepEachKeyInOrder) {
  testing::TempDir dir;
  ManualClock clock;
  auto db = OpenDb(dir, &clock);
  ChangeFeed feed(db.get(), &clock);
  // Interleave appends of many segments, several writers at once.
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int num = 0; num < 10; ++num) {
        for (int s = w * 5; s < w * 5 + 5; ++s) {
          EXPECT_OK(Insert(*db, "sheet-" + std::to_string(s), s % 2, num));
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
      EXPECT_EQ(ShardOf(*db, sheet, segment), shard);
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

TEST(ChangeFeedTest, PruneDeletesRecordsOlderThanRetention) {
  testing::TempDir dir;
  ManualClock clock;
  auto db = OpenDb(dir, &clock);
  ChangeFeed feed(db.get(), &clock);
  ASSERT_OK(Insert(*db, "s", 0, 0));
  clock.Advance(23 * kHour);
  ASSERT_OK(Insert(*db, "s", 0, 1));
  clock.Advance(2 * kHour);  // the first is 25 h old, the second 2 h

  auto pruned = feed.Prune();
  ASSERT_OK(pruned);
  EXPECT_EQ(*pruned, 1);
  const int shard = ShardOf(*db, "s", 0);
  std::vector<StreamRecord> records = ReadAll(feed, shard);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].sequence, 2);

  // Sequences never repeat, even once a shard is empty.
  clock.Advance(48 * kHour);
  ASSERT_EQ(*feed.Prune(), 1);
  ASSERT_OK(Insert(*db, "s", 0, 2));
  records = ReadAll(feed, shard);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].sequence, 3);

  // A shorter retention window applies at once.
  ASSERT_OK(feed.Configure({4, kHour}));
  clock.Advance(kHour + 1);
  EXPECT_EQ(*feed.Prune(), 1);
}

TEST(ChangeFeedTest, CheckpointsSurviveReopenAndNeverMoveBackwards) {
  testing::TempDir dir;
  ManualClock clock;
  {
    auto db = OpenDb(dir, &clock);
    ChangeFeed feed(db.get(), &clock);
    ASSERT_OK(feed.SaveCheckpoint("effects", 2, 17));
    ASSERT_OK(feed.SaveCheckpoint("effects", 2, 9));  // ignored: older
    ASSERT_OK(feed.SaveCheckpoint("effects", 0, 3));
    ASSERT_OK(feed.SaveCheckpoint("other", 2, 1));
  }
  auto db = OpenDb(dir, &clock);
  ChangeFeed feed(db.get(), &clock);
  EXPECT_EQ(*feed.Checkpoint("effects", 2), 17);
  EXPECT_EQ(*feed.Checkpoint("effects", 1), 0);
  EXPECT_EQ(*feed.Checkpoints("effects"), (std::map<int, int64_t>{{0, 3}, {2, 17}}));
  EXPECT_EQ(*feed.Checkpoint("other", 2), 1);
  ASSERT_OK(feed.ResetCheckpoints("effects"));
  EXPECT_TRUE(feed.Checkpoints("effects")->empty());
  EXPECT_EQ(*feed.Checkpoint("other", 2), 1);
}

TEST(ChangeFeedTest, StatsReportLatestCheckpointLagAndAge) {
  testing::TempDir dir;
  ManualClock clock;
  auto db = OpenDb(dir, &clock);
  ChangeFeed feed(db.get(), &clock);
  const int shard = ShardOf(*db, "s", 0);
  for (int num = 0; num < 3; ++num) {
    ASSERT_OK(Insert(*db, "s", 0, num));
    clock.AdvanceSeconds(10);
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

TEST(ChangeFeedTest, CommitsWakeWaitersAndSubscribers) {
  testing::TempDir dir;
  ManualClock clock;
  auto db = OpenDb(dir, &clock);
  ChangeFeed feed(db.get(), &clock);
  std::atomic<int> calls{0};
  int id = feed.Subscribe([&] { calls.fetch_add(1); });

  const uint64_t seen = feed.ChangeVersion();
  std::atomic<bool> woke{false};
  std::thread waiter([&] { woke = feed.WaitForChange(seen, INT64_MAX); });
  ASSERT_OK(Insert(*db, "s", 0, 0));
  waiter.join();  // returns only because the commit woke it (no deadline)
  EXPECT_TRUE(woke);
  EXPECT_GT(feed.ChangeVersion(), seen);
  EXPECT_GE(calls.load(), 1);

  feed.Unsubscribe(id);
  const int before = calls.load();
  ASSERT_OK(Insert(*db, "s", 0, 1));
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
  EXPECT_FALSE(feed.WaitForChange(feed.ChangeVersion(), clock.NowMicros()));
}

TEST(ChangeFeedTest, AnotherTableCanBeAttached) {
  testing::TempDir dir;
  ManualClock clock;
  auto db = OpenDb(dir, &clock);
  ASSERT_TRUE(db->Write([](SqliteConnection& c) {
                  return c.Exec(
                      "CREATE TABLE job (owner TEXT NOT NULL, id INTEGER NOT NULL, "
                      "payload BLOB, note TEXT, PRIMARY KEY (owner, id))");
                }).ok());
  StreamSource source{"job", {"owner"}, {"id"}, {}};
  StreamSettings settings;
  settings.shard_count = 1;
  ASSERT_OK(
      db->Write([&](SqliteConnection& c) { return AttachStream(c, source, settings); }));
  // Attaching twice is a no-op: still one record per change.
  ASSERT_OK(
      db->Write([&](SqliteConnection& c) { return AttachStream(c, source, settings); }));
  ASSERT_TRUE(db->Write([](SqliteConnection& c) {
                  return c.Exec(
                      "INSERT INTO job VALUES ('ann', 1, x'00ff', NULL);"
                      "UPDATE job SET note = 'hi' WHERE id = 1;"
                      "DELETE FROM job;");
                }).ok());
  ChangeFeed feed(db.get(), &clock, "job");
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
  ChangeFeed entries(db.get(), &clock);
  EXPECT_TRUE(ReadAll(entries, 0).empty());

  Status bad = db->Write([](SqliteConnection& c) {
    return AttachStream(c, StreamSource{"job", {"nope"}, {}, {}});
  });
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  Status missing = db->Write([](SqliteConnection& c) {
    return AttachStream(c, StreamSource{"no_table", {"id"}, {}, {}});
  });
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);

  ASSERT_OK(db->Write([](SqliteConnection& c) { return DetachStream(c, "job"); }));
  ASSERT_TRUE(db->Write([](SqliteConnection& c) {
                  return c.Exec("INSERT INTO job VALUES ('bob', 2, NULL, NULL)");
                }).ok());
  EXPECT_EQ(ReadAll(feed, 0).size(), 3u);
}

TEST(ChangeFeedTest, ShardCountComesFromTheConfigRow) {
  testing::TempDir dir;
  ManualClock clock;
  auto db = OpenDb(dir, &clock);
  ChangeFeed feed(db.get(), &clock);
  EXPECT_EQ(feed.Config()->shard_count, 4);
  EXPECT_EQ(feed.Config()->retention_micros, 24 * kHour);
  ASSERT_OK(feed.Configure({1, 24 * kHour}));
  for (int s = 0; s < 8; ++s) ASSERT_OK(Insert(*db, "sheet-" + std::to_string(s), 0, 0));
  EXPECT_EQ(ReadAll(feed, 0).size(), 8u);
  EXPECT_EQ(feed.Configure({0, kHour}).code(), StatusCode::kInvalidArgument);
  ChangeFeed none(db.get(), &clock, "missing");
  EXPECT_TRUE(none.Config().status().IsNotFound());
  EXPECT_EQ(feed.Read(0, 0, 0).status().code(), StatusCode::kInvalidArgument);
}

// Databases created before the application attached `entry` with AttachStream keep the
// hand-written triggers of the old schema/007 (tests/data/legacy_entry_triggers.sql):
// both must write the same records, or old and new data directories would feed the
// snapshot pipeline and the live updates differently.
TEST(ChangeFeedTest, AttachedEntryTriggersWriteWhatTheLegacyOnesWrote) {
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

}  // namespace
}  // namespace sheetlog
