// Seed 001 across writers on PostgreSQL: Add Entry is the conditional
// put at head + 1 with retries and full-jitter backoff, and on PostgreSQL several
// processes really race for the same slot. Three "nodes" (three PostgresDatabase
// handles and EventLogs on one database, the application's schema) with 16 appenders
// each on one sheet, with expect_seq and without: every acknowledged append is stored
// exactly once, and the seqs have no gaps.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emulator/env/faults.h"
#include "src/app/schema.h"
#include "src/log/event_log.h"
#include "tests/support/postgres_test_server.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

constexpr int kNodes = 3;
constexpr int kAppendersPerNode = 16;
constexpr int kAppendsPerAppender = 25;

class PostgresEventLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(database_.conninfo().empty());
    for (int n = 0; n < kNodes; ++n) {
      PostgresDatabase::Options options;
      options.conninfo = database_.conninfo();
      options.connections = kAppendersPerNode;
      Result<std::unique_ptr<PostgresDatabase>> db =
          OpenSheetlogPostgresDatabase(options);
      ASSERT_OK(db);
      dbs_.push_back(std::move(db).value());
      EventLog::Options log_options;
      log_options.serialize_appends_per_sheet = true;  // as App sets it on PostgreSQL
      logs_.push_back(std::make_unique<EventLog>(
          dbs_.back().get(), SystemClock::Default(), &faults_, log_options));
    }
  }

  void TearDown() override {
    logs_.clear();
    dbs_.clear();  // before the database is dropped
  }

  // Every node's appenders at once on `sheet`; with `expect_seq`, each appender sends
  // the next seq it last learned (from its own 201 or a 409's next_seq). Returns the
  // acknowledged seq -> marker, and counts the appends refused for contention.
  std::map<int64_t, std::string> AppendFromEveryNode(const std::string& sheet,
                                                     bool expect_seq, int* contended,
                                                     bool async = false) {
    std::mutex mu;
    std::map<int64_t, std::string> acknowledged;
    std::atomic<int> duplicates{0}, refused{0};
    std::vector<std::thread> threads;
    for (int n = 0; n < kNodes; ++n) {
      for (int a = 0; a < kAppendersPerNode; ++a) {
        threads.emplace_back([&, n, a] {
          int64_t next = 1;
          for (int i = 0; i < kAppendsPerAppender;) {
            const std::string marker =
                std::to_string(n) + "/" + std::to_string(a) + "/" + std::to_string(i);
            AppendRequest request;
            request.sheet_id = sheet;
            request.type = "Note";
            request.body = "\"" + marker + "\"";
            if (expect_seq) request.expect_seq = next;
            int64_t next_seq = -1;
            Result<AppendResult> appended = Internal("not appended");
            if (async) {
              // Group commit's batches (EventLog::Options::batch_appends).
              std::promise<void> done;
              logs_[n]->AddEntryAsync(request, nullptr,
                                      [&](Result<AppendResult> result, int64_t next) {
                                        appended = std::move(result);
                                        next_seq = next;
                                        done.set_value();
                                      });
              done.get_future().wait();
            } else {
              appended = logs_[n]->AddEntry(request, nullptr, &next_seq);
            }
            if (appended.ok()) {
              std::lock_guard<std::mutex> lock(mu);
              if (!acknowledged.emplace(appended->entry.seq, marker).second) ++duplicates;
              next = appended->entry.seq + 1;
              ++i;
            } else if (appended.status().IsConditionFailed() && expect_seq) {
              next = next_seq;  // another writer took it: learn the head, try again
            } else if (appended.status().code() == StatusCode::kUnavailable) {
              ++refused;  // contention: the caller was told to retry, nothing written
              ++i;
            } else {
              ADD_FAILURE() << appended.status().ToString();
              ++i;
            }
          }
        });
      }
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(duplicates.load(), 0) << "a seq acknowledged twice";
    *contended = refused.load();
    return acknowledged;
  }

  // The stored entries after entry 0 (the sheet's first Snapshot): seq -> body.
  std::map<int64_t, std::string> Stored(const std::string& sheet) {
    std::map<int64_t, std::string> out;
    for (int64_t from = 1;;) {
      Result<ReadRange> page = logs_[0]->Read(sheet, from, std::nullopt, 1000, nullptr);
      EXPECT_OK(page);
      if (!page.ok()) return out;
      for (const EntryRecord& e : page->entries) {
        EXPECT_TRUE(out.emplace(e.seq, e.body.value_or("")).second) << "seq " << e.seq;
      }
      if (page->complete || page->entries.empty()) return out;
      from = page->next;
    }
  }

  void ExpectEveryAcknowledgedAppendOnceWithoutGaps(
      const std::map<int64_t, std::string>& acknowledged,
      const std::map<int64_t, std::string>& stored) {
    // Seqs 1..N with no gap: the first is 1, the last is the count.
    ASSERT_FALSE(stored.empty());
    EXPECT_EQ(stored.begin()->first, 1);
    EXPECT_EQ(stored.rbegin()->first, static_cast<int64_t>(stored.size()));
    // Every acknowledged append is there, at its seq, and nothing else is.
    EXPECT_EQ(stored.size(), acknowledged.size());
    for (const auto& [seq, marker] : acknowledged) {
      auto it = stored.find(seq);
      ASSERT_NE(it, stored.end()) << "acknowledged seq " << seq << " is missing";
      EXPECT_EQ(it->second, "\"" + marker + "\"") << "seq " << seq;
    }
  }

  testing::PostgresTestDatabase database_{"event_log_nodes"};
  FaultInjector faults_{SystemClock::Default()};  // none armed
  std::vector<std::unique_ptr<PostgresDatabase>> dbs_;
  std::vector<std::unique_ptr<EventLog>> logs_;
};

TEST_F(PostgresEventLogTest, ThreeNodesRacingForTheHeadLoseNothingAndLeaveNoGaps) {
  Result<SheetInfo> sheet = logs_[0]->CreateLog("raced", 0, 1000000, nullptr);
  ASSERT_OK(sheet);
  int contended = 0;
  std::map<int64_t, std::string> acknowledged =
      AppendFromEveryNode(sheet->id, /*expect_seq=*/false, &contended);
  ExpectEveryAcknowledgedAppendOnceWithoutGaps(acknowledged, Stored(sheet->id));
  // Refusals for contention are allowed (the client retries) but not asserted on: how
  // often three nodes collide depends on scheduling. Reported for the record.
  std::printf("acknowledged %zu of %d; refused for contention: %d; retries: %lld\n",
              acknowledged.size(), kNodes * kAppendersPerNode * kAppendsPerAppender,
              contended,
              static_cast<long long>(logs_[0]->retries() + logs_[1]->retries() +
                                     logs_[2]->retries()));
}

TEST_F(PostgresEventLogTest, ThreeNodesAppendingWithExpectSeqLoseNothingAndLeaveNoGaps) {
  Result<SheetInfo> sheet = logs_[0]->CreateLog("expected", 0, 1000000, nullptr);
  ASSERT_OK(sheet);
  int contended = 0;
  std::map<int64_t, std::string> acknowledged =
      AppendFromEveryNode(sheet->id, /*expect_seq=*/true, &contended);
  ExpectEveryAcknowledgedAppendOnceWithoutGaps(acknowledged, Stored(sheet->id));
  std::printf("acknowledged %zu; refused for contention: %d\n", acknowledged.size(),
              contended);
}

// Every node batching its appends (AddEntryAsync, as the HTTP API appends): a batch
// that loses a seq to another node's is undone whole and planned again, so the log
// has no gap, nothing acknowledged is missing, and an expect_seq append lands at the
// seq it expected.
TEST_F(PostgresEventLogTest, ThreeNodesBatchingAppendsLoseNothingAndLeaveNoGaps) {
  for (int n = 0; n < kNodes; ++n) {
    logs_[n] = std::make_unique<EventLog>(dbs_[n].get(), SystemClock::Default(), &faults_,
                                          EventLog::Options{});
  }
  for (bool expect_seq : {false, true}) {
    Result<SheetInfo> sheet = logs_[0]->CreateLog("batched", 0, 1000000, nullptr);
    ASSERT_OK(sheet);
    int contended = 0;
    std::map<int64_t, std::string> acknowledged =
        AppendFromEveryNode(sheet->id, expect_seq, &contended, /*async=*/true);
    ExpectEveryAcknowledgedAppendOnceWithoutGaps(acknowledged, Stored(sheet->id));
    std::printf("expect_seq %d: acknowledged %zu; refused for contention: %d\n",
                expect_seq, acknowledged.size(), contended);
  }
  int64_t batched = 0;
  for (const auto& log : logs_) batched += log->batched_appends();
  // Sixteen appenders per node keep batches forming; how large depends on scheduling.
  EXPECT_GT(batched, 0);
}

TEST_F(PostgresEventLogTest, OneNodesAppendersToOneSheetQueueInsteadOfRacing) {
  Result<SheetInfo> sheet = logs_[0]->CreateLog("one node", 0, 1000000, nullptr);
  ASSERT_OK(sheet);
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int a = 0; a < kAppendersPerNode; ++a) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAppendsPerAppender; ++i) {
        AppendRequest request;
        request.sheet_id = sheet->id;
        request.type = "Note";
        if (!logs_[0]->AddEntry(request, nullptr).ok()) ++failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  // Serialized in the node, no attempt lost a race: no retries, no refusals.
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(logs_[0]->retries(), 0);
  EXPECT_EQ(Stored(sheet->id).size(),
            static_cast<size_t>(kAppendersPerNode * kAppendsPerAppender));
}

}  // namespace
}  // namespace sheetlog
