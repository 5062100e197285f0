// Seed 001's event log operations, each step's outcome checked against the tables.
#include "src/log/event_log.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/faults.h"
#include "emulator/json_text.h"
#include "emulator/stream/change_feed.h"
#include "src/log/pending_snapshots.h"
#include "src/log/tables.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

class EventLogTest : public ::testing::Test {
 protected:
  void SetUp() override { Open({}); }

  void Open(EventLog::Options options) {
    log_.reset();
    db_.reset();
    db_ = testing::OpenTestDatabase(dir_.File("sheetlog.db"), &clock_);
    ASSERT_NE(db_, nullptr);
    log_ = std::make_unique<EventLog>(db_.get(), &clock_, &faults_, options);
  }

  std::string NewSheet(int64_t snapshot_every = 0, int64_t segment_entries = 10000) {
    auto sheet = log_->CreateLog("test", snapshot_every, segment_entries, nullptr);
    EXPECT_OK(sheet);
    return sheet->id;
  }

  Result<AppendResult> Append(const std::string& sheet, const std::string& body,
                              std::optional<int64_t> expect = std::nullopt,
                              int64_t* next_seq = nullptr) {
    AppendRequest request;
    request.sheet_id = sheet;
    request.type = "Note";
    request.body = body;
    request.expect_seq = expect;
    return log_->AddEntry(request, nullptr, next_seq);
  }

  std::vector<EntryRecord> ReadAll(const std::string& sheet) {
    auto range = log_->Read(sheet, 0, std::nullopt, 1000000, nullptr);
    EXPECT_OK(range);
    return range.ok() ? range->entries : std::vector<EntryRecord>{};
  }

  testing::TempDir dir_;
  ManualClock clock_;
  FaultInjector faults_{&clock_};
  std::unique_ptr<Database> db_;
  std::unique_ptr<EventLog> log_;
};

TEST_F(EventLogTest, CreateLogWritesSegmentZeroAndSnapshotEntryZero) {
  std::string sheet = NewSheet();
  auto segments = log_->ListSegments(sheet, nullptr);
  ASSERT_OK(segments);
  ASSERT_EQ(segments->size(), 1u);
  EXPECT_EQ((*segments)[0].num, 0);
  EXPECT_FALSE((*segments)[0].last_snapshot.has_value());
  std::vector<EntryRecord> entries = ReadAll(sheet);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].type, kSnapshotType);
  EXPECT_EQ(entries[0].seq, 0);
  EXPECT_FALSE(entries[0].body.has_value());
  EXPECT_EQ(entries[0].created, clock_.NowSeconds());
  EXPECT_EQ(*log_->NextSeq(sheet, nullptr), 1);
}

TEST_F(EventLogTest, AddEntryAssignsConsecutiveSeqAndNum) {
  std::string sheet = NewSheet();
  for (int i = 1; i <= 5; ++i) {
    auto r = Append(sheet, std::to_string(i));
    ASSERT_OK(r);
    EXPECT_EQ(r->entry.seq, i);
    EXPECT_EQ(r->entry.num, i);
    EXPECT_EQ(r->entry.segment, 0);
  }
  std::vector<EntryRecord> entries = ReadAll(sheet);
  ASSERT_EQ(entries.size(), 6u);
  for (int i = 1; i <= 5; ++i) EXPECT_EQ(*entries[i].body, std::to_string(i));
}

TEST_F(EventLogTest, ExpectSeqMismatchIsConditionFailedWithNextSeq) {
  std::string sheet = NewSheet();
  ASSERT_OK(Append(sheet, "1", 1));
  int64_t next = -1;
  auto r = Append(sheet, "x", 1, &next);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsConditionFailed());
  EXPECT_EQ(next, 2);
  EXPECT_EQ(ReadAll(sheet).size(), 2u);  // nothing written
}

TEST_F(EventLogTest, ReservedTypesAreRefused) {
  std::string sheet = NewSheet();
  AppendRequest request;
  request.sheet_id = sheet;
  request.type = kEndSegmentType;
  EXPECT_EQ(log_->AddEntry(request, nullptr).status().code(),
            StatusCode::kInvalidArgument);
  request.type = kSnapshotType;
  EXPECT_EQ(log_->AddEntry(request, nullptr).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadAll(sheet).size(), 1u);
}

TEST_F(EventLogTest, UnknownSheetIsNotFound) {
  EXPECT_TRUE(Append("00000000-0000-0000-0000-000000000000", "1").status().IsNotFound());
}

TEST_F(EventLogTest, SeedLiteralAddEntryRetriesLostConditionsWithoutGaps) {
  // The seed's form: eventually consistent reads, then a conditional put. Concurrent
  // appenders lose conditions to each other and retry with backoff.
  EventLog::Options options;
  options.reads_in_write_transaction = false;
  options.max_attempts = 1000;
  Open(options);
  std::string sheet = NewSheet();
  constexpr int kThreads = 6, kPerThread = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        if (!Append(sheet, std::to_string(t * 1000 + i)).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  std::vector<EntryRecord> entries = ReadAll(sheet);
  ASSERT_EQ(entries.size(), 1u + kThreads * kPerThread);
  std::set<std::string> bodies;
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].seq, static_cast<int64_t>(i));
    if (i > 0) bodies.insert(*entries[i].body);
  }
  EXPECT_EQ(bodies.size(), static_cast<size_t>(kThreads * kPerThread));
  // Whether threads interleave between read and put is up to the scheduler; the next
  // test forces the interleaving.
}

TEST_F(EventLogTest,
       SeedLiteralAddEntryLosesTheConditionToAnInterleavedWriterAndRetries) {
  EventLog::Options options;
  options.reads_in_write_transaction = false;
  int interleaved = 0;
  std::string sheet;
  options.test_between_read_and_put = [&] {
    if (interleaved++ > 0) return;  // only the first attempt is overtaken
    // Another client appends between our read of the head and our conditional put.
    AppendRequest other;
    other.sheet_id = sheet;
    other.type = "Other";
    ASSERT_OK(log_->AddEntry(other, nullptr));
  };
  Open(options);
  sheet = NewSheet();
  auto r = Append(sheet, "mine");
  ASSERT_OK(r);
  EXPECT_EQ(log_->retries(), 1);  // step 4: the put lost, back to step 1
  EXPECT_EQ(r->entry.seq, 2);     // after the interleaved writer's entry
  std::vector<EntryRecord> entries = ReadAll(sheet);
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[1].type, "Other");
  EXPECT_EQ(*entries[2].body, "mine");
}

TEST_F(EventLogTest, AddEntryGivesUpWithUnavailableAfterMaxAttempts) {
  EventLog::Options options;
  options.reads_in_write_transaction = false;
  options.max_attempts = 3;
  Open(options);
  std::string sheet = NewSheet();
  // Every put fails: an armed error fault is not a lost race, so it surfaces at once.
  faults_.Arm(FaultPoint::kLogAddEntryBeforePut, FaultSpec{FaultKind::kError, -1});
  auto r = Append(sheet, "1");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  faults_.DisarmAll();
  EXPECT_EQ(ReadAll(sheet).size(), 1u);
}

TEST_F(EventLogTest, CreateNewSegmentRequiresCompletedSnapshot) {
  std::string sheet = NewSheet();
  ASSERT_OK(Append(sheet, "1"));
  auto refused = log_->CreateNewSegment(sheet, nullptr);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);

  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "root-0", nullptr));
  auto created = log_->CreateNewSegment(sheet, nullptr);
  ASSERT_OK(created);
  EXPECT_EQ(created->num, 1);
  EXPECT_EQ(created->first_seq, 3);  // 0 Snapshot, 1 Note, 2 EndSegment, 3 Snapshot
  // The head read of one index query sees the new segment's Snapshot entry.
  Result<int64_t> next_seq = log_->NextSeq(sheet, nullptr);
  ASSERT_OK(next_seq);
  EXPECT_EQ(*next_seq, 4);

  std::vector<EntryRecord> entries = ReadAll(sheet);
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[2].type, kEndSegmentType);
  EXPECT_EQ(entries[2].segment, 0);
  EXPECT_EQ(entries[3].type, kSnapshotType);
  EXPECT_EQ(entries[3].segment, 1);
  EXPECT_EQ(entries[3].num, 0);

  // Add Entry after the segment change lands in segment 1 with num 1.
  auto r = Append(sheet, "after");
  ASSERT_OK(r);
  EXPECT_EQ(r->entry.segment, 1);
  EXPECT_EQ(r->entry.num, 1);
  EXPECT_EQ(r->entry.seq, 4);
  next_seq = log_->NextSeq(sheet, nullptr);
  ASSERT_OK(next_seq);
  EXPECT_EQ(*next_seq, 5);
}

TEST_F(EventLogTest, SnapshotPolicyAppendsSnapshotEntryEveryN) {
  std::string sheet = NewSheet(/*snapshot_every=*/3);
  int snapshots = 0;
  for (int i = 0; i < 9; ++i) {
    auto r = Append(sheet, std::to_string(i));
    ASSERT_OK(r);
    snapshots += r->snapshot_appended;
  }
  std::vector<EntryRecord> entries = ReadAll(sheet);
  std::vector<int64_t> snapshot_seqs;
  for (const auto& e : entries) {
    if (e.type == kSnapshotType) snapshot_seqs.push_back(e.seq);
  }
  // seq 0 from creation; then after 3 entries since the last Snapshot entry.
  EXPECT_EQ(snapshot_seqs, (std::vector<int64_t>{0, 4, 8, 12}));
  EXPECT_EQ(snapshots, 3);
}

// AddEntryAsync through its outcomes: what AddEntry returns, told to `done`.
class AsyncAppendTest : public EventLogTest {
 protected:
  struct Outcome {
    Result<AppendResult> result = Internal("done never ran");
    int64_t next_seq = -2;
  };
  Outcome AppendAsync(const std::string& sheet, const std::string& type,
                      std::optional<int64_t> expect = std::nullopt) {
    AppendRequest request;
    request.sheet_id = sheet;
    request.type = type;
    request.body = "1";
    request.expect_seq = expect;
    request.read_last_snapshot = true;
    std::promise<Outcome> outcome;
    log_->AddEntryAsync(std::move(request), nullptr,
                        [&](Result<AppendResult> result, int64_t next_seq) {
                          outcome.set_value(Outcome{std::move(result), next_seq});
                        });
    return outcome.get_future().get();
  }
};

// Appends queued while the database's writer is held commit as one batch
// (EventLog::Options::batch_appends): one statement for all of them.
class BatchedAppendTest : public AsyncAppendTest {
 protected:
  static AppendRequest Note(const std::string& sheet, const std::string& marker,
                            std::optional<int64_t> expect = std::nullopt) {
    AppendRequest request;
    request.sheet_id = sheet;
    request.type = "Note";
    request.body = "\"" + marker + "\"";
    request.expect_seq = expect;
    request.read_last_snapshot = true;
    return request;
  }

  // Holds the writer with a write of its own, queues `requests` behind it, lets it go,
  // and returns each append's outcome, in order.
  std::vector<Outcome> AppendBehindAHeldWriter(std::vector<AppendRequest> requests,
                                               const std::function<void()>& then = {}) {
    std::promise<void> holding, release;
    std::future<void> held = holding.get_future();
    std::shared_future<void> released = release.get_future().share();
    std::thread holder([&] {
      db_->WriteAsync(
          [&](Connection&) {
            holding.set_value();
            released.wait();
            return Status::OK();
          },
          [](Status) {});
    });
    held.wait();
    if (then) then();
    std::vector<std::promise<Outcome>> promised(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      log_->AddEntryAsync(std::move(requests[i]), nullptr,
                          [&promised, i](Result<AppendResult> result, int64_t next_seq) {
                            promised[i].set_value(Outcome{std::move(result), next_seq});
                          });
    }
    release.set_value();
    holder.join();
    std::vector<Outcome> outcomes;
    for (auto& p : promised) outcomes.push_back(p.get_future().get());
    return outcomes;
  }

  // The bodies stored after entry 0, in seq order.
  std::vector<std::string> Bodies(const std::string& sheet) {
    std::vector<std::string> bodies;
    for (const EntryRecord& e : ReadAll(sheet)) {
      if (e.seq > 0) bodies.push_back(e.body.value_or(""));
    }
    return bodies;
  }
};

TEST_F(BatchedAppendTest, QueuedAppendsCommitInOneStatementInTheOrderTheyQueued) {
  const std::string a = NewSheet(), b = NewSheet();
  std::vector<AppendRequest> requests;
  for (int i = 0; i < 6; ++i) {
    // The third on `a` chains on the two before it (the seq they will take).
    requests.push_back(Note(a, "a" + std::to_string(i),
                            i == 2 ? std::optional<int64_t>(3) : std::nullopt));
    requests.push_back(Note(b, "b" + std::to_string(i)));
  }
  std::vector<Outcome> outcomes = AppendBehindAHeldWriter(std::move(requests));
  for (size_t i = 0; i < outcomes.size(); ++i) {
    ASSERT_OK(outcomes[i].result) << "append " << i;
    EXPECT_EQ(outcomes[i].result->entry.seq, static_cast<int64_t>(i / 2 + 1));
    EXPECT_TRUE(outcomes[i].result->last_snapshot_read);
  }
  EXPECT_EQ(Bodies(a), (std::vector<std::string>{"\"a0\"", "\"a1\"", "\"a2\"", "\"a3\"",
                                                 "\"a4\"", "\"a5\""}));
  EXPECT_EQ(Bodies(b).size(), 6u);
  EXPECT_EQ(log_->append_batches(), 1);
  EXPECT_EQ(log_->batched_appends(), 12);
  EXPECT_EQ(log_->retries(), 0);
}

TEST_F(BatchedAppendTest, AnAppendThatFailsInABatchFailsAloneAndLeavesNoGap) {
  const std::string a = NewSheet(), b = NewSheet();
  std::vector<Outcome> outcomes = AppendBehindAHeldWriter(
      {Note(a, "refused"), Note(a, "first"), Note("no-such-sheet", "lost"),
       Note(a, "late", /*expect=*/9), Note(a, "second"), Note(b, "other")},
      [&] {
        // The first append of the batch meets a failure at its put.
        faults_.Arm(FaultPoint::kLogAddEntryBeforePut, FaultSpec{FaultKind::kError, 1});
      });
  EXPECT_EQ(outcomes[0].result.status().code(), StatusCode::kUnavailable);
  ASSERT_OK(outcomes[1].result);
  EXPECT_EQ(outcomes[1].result->entry.seq, 1);
  EXPECT_TRUE(outcomes[2].result.status().IsNotFound());
  // expect_seq judged against the batch's own head: the next seq was 2.
  EXPECT_TRUE(outcomes[3].result.status().IsConditionFailed());
  EXPECT_EQ(outcomes[3].next_seq, 2);
  ASSERT_OK(outcomes[4].result);
  EXPECT_EQ(outcomes[4].result->entry.seq, 2);
  ASSERT_OK(outcomes[5].result);
  EXPECT_EQ(outcomes[5].result->entry.seq, 1);
  EXPECT_EQ(Bodies(a), (std::vector<std::string>{"\"first\"", "\"second\""}));
  EXPECT_EQ(Bodies(b), (std::vector<std::string>{"\"other\""}));
  EXPECT_EQ(log_->batched_appends(), 3);
}

TEST_F(BatchedAppendTest, AppendsThatWriteMoreThanTheEntryRunOnTheirOwn) {
  const std::string a = NewSheet();
  AppendRequest with_client_snapshot = Note(a, "snap");
  with_client_snapshot.metadata = R"({"snapshot":"client-root"})";
  std::vector<Outcome> outcomes = AppendBehindAHeldWriter(
      {Note(a, "one"), std::move(with_client_snapshot), Note(a, "two")});
  for (const Outcome& outcome : outcomes) ASSERT_OK(outcome.result);
  EXPECT_EQ(Bodies(a), (std::vector<std::string>{"\"one\"", "\"two\"", "\"snap\""}));
  // The sheet remembers the client's snapshot, which only the entry's own write sets.
  Result<std::optional<SnapshotRef>> last = log_->LastSnapshot(a, nullptr);
  ASSERT_OK(last);
  ASSERT_TRUE(last->has_value());
  EXPECT_EQ((*last)->seq, 3);
  EXPECT_EQ(log_->batched_appends(), 2);
}

TEST_F(AsyncAppendTest, WritesTheNextEntryAndReadsTheLastSnapshotInItsTransaction) {
  std::string sheet = NewSheet();
  for (int i = 1; i <= 3; ++i) {
    Outcome appended = AppendAsync(sheet, "Note");
    ASSERT_OK(appended.result);
    EXPECT_EQ(appended.result->entry.seq, i);
    EXPECT_EQ(appended.next_seq, -1);
    EXPECT_TRUE(appended.result->last_snapshot_read);
  }
  EXPECT_EQ(ReadAll(sheet).size(), 4u);
}

TEST_F(AsyncAppendTest, ExpectSeqMismatchTellsTheNextSeqAndWritesNothing) {
  std::string sheet = NewSheet();
  ASSERT_OK(AppendAsync(sheet, "Note", 1).result);
  Outcome refused = AppendAsync(sheet, "Note", 1);
  EXPECT_TRUE(refused.result.status().IsConditionFailed());
  EXPECT_EQ(refused.next_seq, 2);
  EXPECT_EQ(ReadAll(sheet).size(), 2u);
}

TEST_F(AsyncAppendTest, RefusalsAreTheSameAsAddEntrys) {
  std::string sheet = NewSheet();
  EXPECT_EQ(AppendAsync(sheet, kSnapshotType).result.status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(AppendAsync("00000000-0000-0000-0000-000000000000", "Note")
                  .result.status()
                  .IsNotFound());
  EXPECT_EQ(ReadAll(sheet).size(), 1u);
}

TEST_F(AsyncAppendTest, PoliciesRunBeforeDoneIsCalled) {
  std::string sheet = NewSheet(/*snapshot_every=*/2);
  int snapshots = 0;
  for (int i = 0; i < 4; ++i) {
    Outcome appended = AppendAsync(sheet, "Note");
    ASSERT_OK(appended.result);
    snapshots += appended.result->snapshot_appended;
  }
  EXPECT_EQ(snapshots, 2);
  std::vector<int64_t> snapshot_seqs;
  for (const EntryRecord& e : ReadAll(sheet)) {
    if (e.type == kSnapshotType) snapshot_seqs.push_back(e.seq);
  }
  EXPECT_EQ(snapshot_seqs, (std::vector<int64_t>{0, 3, 6}));
}

TEST_F(AsyncAppendTest, ConcurrentAppendsGetConsecutiveSeqsWithoutRetries) {
  std::string sheet = NewSheet();
  constexpr int kThreads = 4, kPerThread = 50;
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<int64_t> seqs;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        Outcome appended = AppendAsync(sheet, "Note");
        ASSERT_OK(appended.result);
        std::lock_guard lock(mu);
        seqs.insert(appended.result->entry.seq);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(seqs.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(*seqs.begin(), 1);
  EXPECT_EQ(*seqs.rbegin(), kThreads * kPerThread);
  EXPECT_EQ(log_->retries(), 0);
}

TEST_F(EventLogTest, SegmentPolicyStartsNewSegmentOnceFullAndSnapshotted) {
  // (With snapshot_every 0 the server inserts no entries at all: see
  // SnapshotEveryZeroNeverInsertsEntries.)
  std::string sheet = NewSheet(/*snapshot_every=*/1000, /*segment_entries=*/4);
  for (int i = 0; i < 5; ++i) ASSERT_OK(Append(sheet, std::to_string(i)));
  // No completed snapshot yet: the segment just grows.
  EXPECT_EQ(log_->ListSegments(sheet, nullptr)->size(), 1u);
  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "root", nullptr));
  auto r = Append(sheet, "x");
  ASSERT_OK(r);
  EXPECT_TRUE(r->segment_created);
  EXPECT_EQ(log_->ListSegments(sheet, nullptr)->size(), 2u);
}

TEST_F(EventLogTest, ReadPagesAcrossSegmentsAndValidatesRange) {
  std::string sheet = NewSheet();
  for (int i = 0; i < 5; ++i) ASSERT_OK(Append(sheet, std::to_string(i)));
  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "r0", nullptr));
  ASSERT_OK(log_->CreateNewSegment(sheet, nullptr));  // seq 6 End, 7 Snapshot
  for (int i = 0; i < 5; ++i) ASSERT_OK(Append(sheet, std::to_string(i)));  // 8..12

  std::vector<int64_t> seen;
  int64_t from = 0;
  while (true) {
    auto page = log_->Read(sheet, from, std::nullopt, 3, nullptr);
    ASSERT_OK(page);
    for (const auto& e : page->entries) seen.push_back(e.seq);
    if (page->complete) break;
    from = page->entries.back().seq + 1;
  }
  ASSERT_EQ(seen.size(), 13u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int64_t>(i));

  auto bounded = log_->Read(sheet, 5, 9, 100, nullptr);
  ASSERT_OK(bounded);
  ASSERT_EQ(bounded->entries.size(), 4u);
  EXPECT_EQ(bounded->entries.front().seq, 5);
  EXPECT_TRUE(bounded->complete);

  EXPECT_EQ(log_->Read(sheet, 14, std::nullopt, 10, nullptr).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(log_->Read(sheet, -1, std::nullopt, 10, nullptr).status().code(),
            StatusCode::kOutOfRange);
  auto at_head = log_->Read(sheet, 13, std::nullopt, 10, nullptr);
  ASSERT_OK(at_head);
  EXPECT_TRUE(at_head->entries.empty());
  EXPECT_TRUE(at_head->complete);
}

TEST_F(EventLogTest, LoadFollowsTheSeedsFiveSteps) {
  std::string sheet = NewSheet();
  // New sheet: no snapshot yet, entry 0 is the empty sheet: replay from seq 1.
  ASSERT_OK(Append(sheet, "a"));
  auto fresh = log_->Load(sheet, nullptr);
  ASSERT_OK(fresh);
  EXPECT_FALSE(fresh->snapshot.has_value());
  ASSERT_EQ(fresh->entries.size(), 1u);
  EXPECT_EQ(fresh->next_seq, 2);

  // Step 2: current segment has a snapshot.
  ASSERT_OK(Append(sheet, "b"));  // seq 2
  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "root0", nullptr));
  auto loaded = log_->Load(sheet, nullptr);
  ASSERT_OK(loaded);
  ASSERT_TRUE(loaded->snapshot.has_value());
  EXPECT_EQ(*loaded->snapshot->snapshot_root, "root0");
  EXPECT_EQ(loaded->entries.size(), 2u);

  // Steps 4-5: new segment whose snapshot is pending: previous segment from its last
  // snapshot, then the current segment from entry 1.
  ASSERT_OK(log_->CreateNewSegment(sheet, nullptr));  // 3 End, 4 Snapshot
  ASSERT_OK(Append(sheet, "c"));                      // 5
  auto across = log_->Load(sheet, nullptr);
  ASSERT_OK(across);
  ASSERT_TRUE(across->snapshot.has_value());
  EXPECT_EQ(across->snapshot->seq, 0);
  std::vector<int64_t> seqs;
  for (const auto& e : across->entries) seqs.push_back(e.seq);
  EXPECT_EQ(seqs, (std::vector<int64_t>{1, 2, 3, 5}));
  EXPECT_EQ(across->next_seq, 6);

  // Step 3: neither of the two newest segments has a snapshot: corrupt.
  ASSERT_OK(log_->CompleteSnapshot(sheet, 1, 0, "root1", nullptr));
  ASSERT_OK(log_->CreateNewSegment(sheet, nullptr));  // segment 2
  ASSERT_OK(db_->Write([&](Connection& conn) {
    UpdateRequest u;
    u.key = Key{{sheet}, {1}};
    u.remove = {"last_snapshot"};
    return SegmentTable().Update(conn, u, nullptr).status();
  }));
  auto corrupt = log_->Load(sheet, nullptr);
  EXPECT_EQ(corrupt.status().code(), StatusCode::kInternal);
  EXPECT_NE(corrupt.status().message().find("corrupt"), std::string::npos);
}

TEST_F(EventLogTest, UpdateLoadedReadsOnlyNewEntriesOrAsksForReload) {
  std::string sheet = NewSheet();
  ASSERT_OK(Append(sheet, "a"));  // 1
  ASSERT_OK(Append(sheet, "b"));  // 2
  bool reload = true;
  auto update = log_->UpdateLoaded(sheet, 0, 1, &reload, nullptr);
  ASSERT_OK(update);
  EXPECT_FALSE(reload);
  ASSERT_EQ(update->size(), 1u);
  EXPECT_EQ(*(*update)[0].body, "b");

  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "r", nullptr));
  ASSERT_OK(log_->CreateNewSegment(sheet, nullptr));  // 3 End, 4 Snapshot (seg 1)
  ASSERT_OK(Append(sheet, "c"));                      // seg 1 num 1
  auto across = log_->UpdateLoaded(sheet, 0, 2, &reload, nullptr);
  ASSERT_OK(across);
  EXPECT_FALSE(reload);
  std::vector<std::string> types;
  for (const auto& e : *across) types.push_back(e.type);
  EXPECT_EQ(types, (std::vector<std::string>{kEndSegmentType, "Note"}));

  ASSERT_OK(log_->CompleteSnapshot(sheet, 1, 0, "r1", nullptr));
  ASSERT_OK(log_->CreateNewSegment(sheet, nullptr));  // seg 2
  ASSERT_OK(log_->UpdateLoaded(sheet, 0, 2, &reload, nullptr));
  EXPECT_TRUE(reload);  // fell behind both newest segments
}

TEST_F(EventLogTest, CompleteSnapshotNeverMovesBackwards) {
  std::string sheet = NewSheet(/*snapshot_every=*/1);
  ASSERT_OK(Append(sheet, "a"));  // 1, then Snapshot at 2
  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 2, "late", nullptr));
  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "early", nullptr));
  auto segments = log_->ListSegments(sheet, nullptr);
  EXPECT_EQ(*(*segments)[0].last_snapshot, 2);
  auto last = log_->LastCompletedSnapshot(sheet, nullptr);
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ(*(*last)->snapshot_root, "late");
}

TEST_F(EventLogTest, DeleteSheetRemovesEverythingAndReturnsBlobs) {
  std::string sheet = NewSheet();
  AppendRequest request;
  request.sheet_id = sheet;
  request.type = "Big";
  request.external = "uploads/x";
  ASSERT_OK(log_->AddEntry(request, nullptr));
  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "snap/root", nullptr));
  auto blobs = log_->DeleteSheet(sheet, nullptr);
  ASSERT_OK(blobs);
  EXPECT_EQ(std::set<std::string>(blobs->begin(), blobs->end()),
            (std::set<std::string>{"uploads/x", "snap/root"}));
  EXPECT_TRUE(log_->GetSheet(sheet, nullptr).status().IsNotFound());
  EXPECT_TRUE(log_->ListSegments(sheet, nullptr).status().IsNotFound());
  EXPECT_TRUE(log_->NextSeq(sheet, nullptr).status().IsNotFound());
}

// The Pending Snapshots owner (src/log/pending_snapshots.h): the conditions seed 000's
// orchestration relies on.
class PendingSnapshotsTest : public EventLogTest {
 protected:
  static PendingSnapshot Started(const std::string& sheet, int64_t segment,
                                 int64_t entry) {
    PendingSnapshot p;
    p.sheet_id = sheet;
    p.segment = segment;
    p.entry = entry;
    p.created = 100;
    p.modified = 100;
    p.active = true;
    p.increment = 1;
    return p;
  }

  Status Write(const Transactions::Work& work) { return db_->Write(work); }

  std::optional<PendingSnapshot> Get(const PendingSnapshotKey& key) {
    std::optional<PendingSnapshot> out;
    EXPECT_OK(db_->Read([&](Connection& conn) -> Status {
      ASSIGN_OR_RETURN(out, GetPendingSnapshot(conn, key, nullptr));
      return Status::OK();
    }));
    return out;
  }

  std::vector<std::pair<int64_t, int64_t>> List(const std::string& sheet) {
    std::vector<std::pair<int64_t, int64_t>> out;
    EXPECT_OK(db_->Read([&](Connection& conn) -> Status {
      ASSIGN_OR_RETURN(std::vector<PendingSnapshot> all,
                       ListPendingSnapshots(conn, sheet, nullptr));
      for (const PendingSnapshot& p : all) {
        EXPECT_EQ(p.sheet_id, sheet);
        out.emplace_back(p.segment, p.entry);
      }
      return Status::OK();
    }));
    return out;
  }
};

TEST_F(PendingSnapshotsTest, CreateIsConditionalAndReadsBackTheRecord) {
  const PendingSnapshot started = Started("s1", 0, 4);
  ASSERT_OK(
      Write([&](Connection& c) { return CreatePendingSnapshot(c, started, nullptr); }));
  PendingSnapshot again = started;
  again.increment = 9;
  EXPECT_TRUE(Write([&](Connection& c) {
                return CreatePendingSnapshot(c, again, nullptr);
              }).IsConditionFailed());
  std::optional<PendingSnapshot> read = Get(started.key());
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->sheet_id, "s1");
  EXPECT_EQ(read->segment, 0);
  EXPECT_EQ(read->entry, 4);
  EXPECT_EQ(read->created, 100);
  EXPECT_EQ(read->modified, 100);
  EXPECT_TRUE(read->active);
  EXPECT_EQ(read->increment, 1) << "the failed create changed nothing";
  EXPECT_FALSE(read->state.has_value());
  EXPECT_FALSE(Get({"s1", 0, 5}).has_value());
}

TEST_F(PendingSnapshotsTest, UpdateMovesIncrementOnlyFromTheExpectedValue) {
  const PendingSnapshot started = Started("s1", 1, 2);
  const PendingSnapshotKey key = started.key();
  ASSERT_OK(
      Write([&](Connection& c) { return CreatePendingSnapshot(c, started, nullptr); }));
  PendingSnapshotChanges checkpoint;
  checkpoint.state = R"({"chunk":1})";
  checkpoint.modified = 130;
  ASSERT_OK(Write([&](Connection& c) {
    return UpdatePendingSnapshot(c, key, 1, checkpoint, nullptr);
  }));
  std::optional<PendingSnapshot> read = Get(key);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->increment, 2);
  EXPECT_EQ(read->state, R"({"chunk":1})");
  EXPECT_EQ(read->modified, 130);
  EXPECT_TRUE(read->active) << "unset fields are left as they are";
  EXPECT_EQ(read->created, 100);

  // A stale increment (another invocation moved on) writes nothing.
  PendingSnapshotChanges clear;
  clear.active = false;
  EXPECT_TRUE(Write([&](Connection& c) {
                return UpdatePendingSnapshot(c, key, 1, clear, nullptr);
              }).IsConditionFailed());
  EXPECT_TRUE(Get(key)->active);
  ASSERT_OK(Write(
      [&](Connection& c) { return UpdatePendingSnapshot(c, key, 2, clear, nullptr); }));
  EXPECT_FALSE(Get(key)->active);
  EXPECT_EQ(Get(key)->increment, 3);

  // A missing item is never created by an update.
  EXPECT_TRUE(Write([&](Connection& c) {
                return UpdatePendingSnapshot(c, {"s1", 9, 9}, 0, clear, nullptr);
              }).IsConditionFailed());
  EXPECT_FALSE(Get({"s1", 9, 9}).has_value());
}

// The owner (migration 015): written by a create and by an update that sets it, left
// as it is by one that does not, and read back by every read.
TEST_F(PendingSnapshotsTest, OwnerRoundTripsAndIsLeftAsItIsUnlessSet) {
  PendingSnapshot started = Started("s1", 0, 6);
  started.owner = "owner-a";
  const PendingSnapshotKey key = started.key();
  ASSERT_OK(
      Write([&](Connection& c) { return CreatePendingSnapshot(c, started, nullptr); }));
  EXPECT_EQ(Get(key)->owner, "owner-a");

  PendingSnapshotChanges claim;
  claim.active = true;
  claim.owner = "owner-b";
  ASSERT_OK(Write(
      [&](Connection& c) { return UpdatePendingSnapshot(c, key, 1, claim, nullptr); }));
  EXPECT_EQ(Get(key)->owner, "owner-b");

  PendingSnapshotChanges checkpoint;
  checkpoint.state = R"({"chunk":1})";
  ASSERT_OK(Write([&](Connection& c) {
    return UpdatePendingSnapshot(c, key, 2, checkpoint, nullptr);
  }));
  std::optional<PendingSnapshot> read = Get(key);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->owner, "owner-b") << "an update without an owner leaves it";
  EXPECT_EQ(read->state, R"({"chunk":1})");
  EXPECT_EQ(read->increment, 3);

  // The list and the scan read it too; an item created without one has none.
  ASSERT_OK(Write([&](Connection& c) {
    return CreatePendingSnapshot(c, Started("s1", 0, 7), nullptr);
  }));
  std::vector<PendingSnapshot> listed;
  std::vector<PendingSnapshot> scanned;
  ASSERT_OK(db_->Read([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(listed, ListPendingSnapshots(c, "s1", nullptr));
    ASSIGN_OR_RETURN(scanned, ScanPendingSnapshots(c, 0, nullptr));
    return Status::OK();
  }));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].owner, "owner-b");
  EXPECT_FALSE(listed[1].owner.has_value());
  ASSERT_EQ(scanned.size(), 2u);
  EXPECT_EQ(scanned[0].owner, "owner-b");
  EXPECT_FALSE(scanned[1].owner.has_value());
  EXPECT_FALSE(Get({"s1", 0, 7})->owner.has_value());
}

TEST_F(PendingSnapshotsTest, DeleteWithAnIncrementIsConditional) {
  const PendingSnapshot started = Started("s1", 0, 3);
  const PendingSnapshotKey key = started.key();
  ASSERT_OK(
      Write([&](Connection& c) { return CreatePendingSnapshot(c, started, nullptr); }));
  EXPECT_TRUE(Write([&](Connection& c) {
                return DeletePendingSnapshot(c, key, 2, nullptr);
              }).IsConditionFailed());
  EXPECT_TRUE(Get(key).has_value());
  ASSERT_OK(
      Write([&](Connection& c) { return DeletePendingSnapshot(c, key, 1, nullptr); }));
  EXPECT_FALSE(Get(key).has_value());
  EXPECT_TRUE(Write([&](Connection& c) {
                return DeletePendingSnapshot(c, key, 1, nullptr);
              }).IsConditionFailed())
      << "a missing item fails the increment condition";
  EXPECT_OK(Write([&](Connection& c) {
    return DeletePendingSnapshot(c, key, std::nullopt, nullptr);
  })) << "an unconditional delete of a missing item is OK";
}

TEST_F(PendingSnapshotsTest, ListsInSnapshotOrderAndDeletesBeforeAPosition) {
  ASSERT_OK(Write([&](Connection& c) -> Status {
    for (auto [segment, entry] : std::vector<std::pair<int64_t, int64_t>>{
             {2, 0}, {0, 7}, {1, 5}, {1, 2}, {0, 3}}) {
      RETURN_IF_ERROR(CreatePendingSnapshot(c, Started("s1", segment, entry), nullptr));
    }
    return CreatePendingSnapshot(c, Started("s2", 0, 0), nullptr);
  }));
  using Pairs = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(List("s1"), (Pairs{{0, 3}, {0, 7}, {1, 2}, {1, 5}, {2, 0}}));
  std::optional<PendingSnapshot> first;
  std::vector<PendingSnapshot> scanned;
  ASSERT_OK(db_->Read([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(first, FirstPendingSnapshot(c, "s1", nullptr));
    ASSIGN_OR_RETURN(scanned, ScanPendingSnapshots(c, 3, nullptr));
    return Status::OK();
  }));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(std::make_pair(first->segment, first->entry),
            (std::pair<int64_t, int64_t>(0, 3)));
  ASSERT_EQ(scanned.size(), 3u);
  EXPECT_EQ(scanned[0].sheet_id, "s1");
  EXPECT_EQ(std::make_pair(scanned[2].segment, scanned[2].entry),
            (std::pair<int64_t, int64_t>(1, 2)));

  ASSERT_OK(Write([&](Connection& c) {
    return DeletePendingSnapshotsBefore(c, "s1", 1, 5, nullptr);
  }));
  EXPECT_EQ(List("s1"), (Pairs{{1, 5}, {2, 0}}));
  EXPECT_EQ(List("s2"), (Pairs{{0, 0}})) << "other sheets untouched";
  ASSERT_OK(
      Write([&](Connection& c) { return DeleteAllPendingSnapshots(c, "s1", nullptr); }));
  EXPECT_TRUE(List("s1").empty());
  EXPECT_EQ(List("s2"), (Pairs{{0, 0}}));
  ASSERT_OK(db_->Read([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(first, FirstPendingSnapshot(c, "s1", nullptr));
    return Status::OK();
  }));
  EXPECT_FALSE(first.has_value());
}

TEST_F(EventLogTest, DeleteSheetRemovesItsPendingSnapshotsOnly) {
  std::string sheet = NewSheet();
  std::string other = NewSheet();
  ASSERT_OK(db_->Write([&](Connection& conn) -> Status {
    for (const std::string& id : {sheet, other}) {
      PendingSnapshot pending;
      pending.sheet_id = id;
      pending.increment = 1;
      RETURN_IF_ERROR(CreatePendingSnapshot(conn, pending, nullptr));
    }
    return Status::OK();
  }));
  ASSERT_OK(log_->DeleteSheet(sheet, nullptr));
  ASSERT_OK(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(std::vector<PendingSnapshot> gone,
                     ListPendingSnapshots(conn, sheet, nullptr));
    ASSIGN_OR_RETURN(std::vector<PendingSnapshot> kept,
                     ListPendingSnapshots(conn, other, nullptr));
    EXPECT_TRUE(gone.empty());
    EXPECT_EQ(kept.size(), 1u);
    return Status::OK();
  }));
}

// Two segments: 0 = seq 0..4 (Snapshot, a, b, c, EndSegment), 1 = seq 5.. (Snapshot,
// d, e, f). Segment 0's snapshot is complete; segment 1's only if `complete_second`.
class TruncateTest : public EventLogTest {
 protected:
  std::string TwoSegments(bool complete_second) {
    std::string sheet = NewSheet();
    for (const char* body : {"\"a\"", "\"b\"", "\"c\""}) EXPECT_OK(Append(sheet, body));
    EXPECT_OK(log_->CompleteSnapshot(sheet, 0, 0, "snapshots/r0", nullptr));
    auto segment = log_->CreateNewSegment(sheet, nullptr);
    EXPECT_OK(segment);
    EXPECT_EQ(segment->first_seq, 5);
    for (const char* body : {"\"d\"", "\"e\"", "\"f\""}) EXPECT_OK(Append(sheet, body));
    if (complete_second) {
      EXPECT_OK(log_->CompleteSnapshot(sheet, 1, 0, "snapshots/r1", nullptr));
    }
    return sheet;
  }
};

TEST_F(TruncateTest, KeepsSegmentsNotBehindACompletedSnapshot) {
  std::string sheet = TwoSegments(/*complete_second=*/false);
  auto result = log_->Truncate(sheet, 100, nullptr, nullptr);
  ASSERT_OK(result);
  EXPECT_EQ(result->first_seq, 0);
  EXPECT_TRUE(result->dropped_segments.empty());
  EXPECT_EQ(ReadAll(sheet).size(), 9u);
}

TEST_F(TruncateTest, DropsOnlyWholeSegmentsEndingBeforeTheSeq) {
  std::string sheet = TwoSegments(/*complete_second=*/true);
  auto partial = log_->Truncate(sheet, 4, nullptr, nullptr);  // segment 0 ends at 4
  ASSERT_OK(partial);
  EXPECT_TRUE(partial->dropped_segments.empty()) << "never part of a segment";
  EXPECT_EQ(ReadAll(sheet).size(), 9u);

  auto result = log_->Truncate(sheet, 5, nullptr, nullptr);
  ASSERT_OK(result);
  EXPECT_EQ(result->first_seq, 5);
  EXPECT_EQ(result->dropped_segments, std::vector<int64_t>{0});
  EXPECT_EQ(result->dropped_entries, 5);
  EXPECT_EQ(result->released_blobs, std::vector<std::string>{"snapshots/r0"});
  EXPECT_EQ(log_->GetSheet(sheet, nullptr)->first_seq, 5);
  auto gone = log_->Read(sheet, 0, std::nullopt, 100, nullptr);
  EXPECT_EQ(gone.status().code(), StatusCode::kGone);
  auto kept = log_->Read(sheet, 5, std::nullopt, 100, nullptr);
  ASSERT_OK(kept);
  ASSERT_EQ(kept->entries.size(), 4u);
  EXPECT_EQ(kept->entries.front().seq, 5);
  auto load = log_->Load(sheet, nullptr);
  ASSERT_OK(load);
  EXPECT_EQ(load->snapshot->seq, 5);
  EXPECT_EQ(load->entries.size(), 3u);
  // The newest segment is never dropped, and a repeat changes nothing.
  auto again = log_->Truncate(sheet, 1000, nullptr, nullptr);
  ASSERT_OK(again);
  EXPECT_EQ(again->first_seq, 5);
  EXPECT_TRUE(again->dropped_segments.empty());
  EXPECT_EQ(*log_->NextSeq(sheet, nullptr), 9);
}

TEST_F(TruncateTest, ArchivesEachDroppedSegmentFirstAndRecordsTheKey) {
  std::string sheet = TwoSegments(/*complete_second=*/true);
  BlobStoreOptions options;
  options.root = dir_.File("blobs");
  options.sync = false;
  auto blobs = DirectoryBlobStore::Open(options, &clock_);
  ASSERT_OK(blobs);
  faults_.Arm(FaultPoint::kLogTruncateBeforeDrop, {});
  auto crashed = log_->Truncate(sheet, 5, blobs->get(), nullptr);
  EXPECT_FALSE(crashed.ok()) << "the fault stops it after the archive, before the drop";
  EXPECT_EQ(ReadAll(sheet).size(), 9u);

  auto result = log_->Truncate(sheet, 5, blobs->get(), nullptr);
  ASSERT_OK(result);
  const std::string key = EventLog::ArchiveKey(sheet, 0);
  EXPECT_EQ(result->archives, std::vector<std::string>{key});
  auto text = (*blobs)->Get(key);
  ASSERT_OK(text);
  std::vector<nlohmann::json> lines;
  size_t start = 0;
  for (size_t nl; (nl = text->find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(ParseJson(text->substr(start, nl - start)));
  }
  ASSERT_EQ(lines.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(lines[i]["seq"], i);
  EXPECT_EQ(lines[1]["body"], "a");
  EXPECT_EQ(lines[4]["type"], kEndSegmentType);
  auto segments = log_->ListSegments(sheet, nullptr);
  ASSERT_OK(segments);
  EXPECT_EQ((*segments)[0].archive, key);
  EXPECT_FALSE((*segments)[1].archive.has_value());
}

TEST_F(TruncateTest, RemovesPendingSnapshotsOfDroppedSegments) {
  std::string sheet = TwoSegments(/*complete_second=*/true);
  ASSERT_TRUE(db_->Write([&](Connection& conn) {
                   for (int64_t segment : {0, 1}) {
                     PendingSnapshot pending;
                     pending.sheet_id = sheet;
                     pending.segment = segment;
                     pending.entry = 3;
                     pending.increment = 1;
                     RETURN_IF_ERROR(CreatePendingSnapshot(conn, pending, nullptr));
                   }
                   return Status::OK();
                 })
                  .ok());
  ASSERT_OK(log_->Truncate(sheet, 5, nullptr, nullptr));
  std::vector<int64_t> left;
  ASSERT_TRUE(db_->Read([&](Connection& conn) -> Status {
                   ASSIGN_OR_RETURN(std::vector<PendingSnapshot> pending,
                                    ListPendingSnapshots(conn, sheet, nullptr));
                   for (const PendingSnapshot& p : pending) left.push_back(p.segment);
                   return Status::OK();
                 })
                  .ok());
  EXPECT_EQ(left, std::vector<int64_t>{1});
}

TEST_F(TruncateTest, RefusesANegativeSeqAndAnUnknownSheet) {
  std::string sheet = TwoSegments(true);
  EXPECT_EQ(log_->Truncate(sheet, -1, nullptr, nullptr).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_TRUE(log_->Truncate("no-such-sheet", 5, nullptr, nullptr).status().IsNotFound());
}

// --- infinisheet's EventLog contract. ---

TEST_F(EventLogTest, ReadIsCompleteWhenNothingMoreExistsAndSaysWhereTheNextPageStarts) {
  std::string sheet = NewSheet();
  auto empty = log_->Read(sheet, 1, 6, 100, nullptr);  // `to` beyond the head
  ASSERT_OK(empty);
  EXPECT_TRUE(empty->entries.empty());
  EXPECT_TRUE(empty->complete);
  EXPECT_EQ(empty->next, 1);
  for (int i = 0; i < 15; ++i) ASSERT_OK(Append(sheet, "1"));
  auto tail = log_->Read(sheet, 11, 21, 100, nullptr);
  ASSERT_OK(tail);
  EXPECT_EQ(tail->entries.size(), 5u);
  EXPECT_TRUE(tail->complete);
  EXPECT_EQ(tail->next, 16);
  EXPECT_EQ(tail->to, 21);
  auto page = log_->Read(sheet, 1, std::nullopt, 10, nullptr);
  ASSERT_OK(page);
  EXPECT_EQ(page->entries.size(), 10u);
  EXPECT_FALSE(page->complete);
  EXPECT_EQ(page->next, 11);
  auto exact = log_->Read(sheet, 11, 16, 5, nullptr);  // a full page that reaches `to`
  ASSERT_OK(exact);
  EXPECT_TRUE(exact->complete);
}

TEST_F(EventLogTest, MetadataMergesClearsAndNeverMovesSeqs) {
  std::string sheet = NewSheet();
  for (int i = 0; i < 3; ++i) ASSERT_OK(Append(sheet, "1"));
  EXPECT_EQ(log_->SetMetadata(sheet, 4, "{}", nullptr).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(log_->SetMetadata(sheet, 1, R"({"colour": "red"})", nullptr).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(log_->SetMetadata(sheet, 1, R"({"history": 3})", nullptr).status().code(),
            StatusCode::kInvalidArgument);
  auto none = log_->SetMetadata(sheet, 1, "{}", nullptr);
  ASSERT_OK(none);
  EXPECT_FALSE(none->metadata.has_value()) << "an empty patch sets nothing";
  ASSERT_OK(log_->SetMetadata(sheet, 1, R"({"snapshot": "snap"})", nullptr));
  ASSERT_OK(log_->SetMetadata(sheet, 1, R"({"history": "h", "pending": "p"})", nullptr));
  auto cleared = log_->SetMetadata(sheet, 1, R"({"pending": null})", nullptr);
  ASSERT_OK(cleared);
  EXPECT_EQ(ParseJson(*cleared->metadata),
            ParseJson(R"({"snapshot": "snap", "history": "h", "pending": null})"));
  EXPECT_EQ(*log_->NextSeq(sheet, nullptr), 4);
  EXPECT_EQ(ReadAll(sheet)[1].metadata, cleared->metadata);

  // The newest client snapshot is what LastSnapshot names, until it is cleared.
  ASSERT_OK(log_->SetMetadata(sheet, 3, R"({"snapshot": "later"})", nullptr));
  auto last = log_->LastSnapshot(sheet, nullptr);
  ASSERT_OK(last);
  ASSERT_TRUE(last->has_value());
  EXPECT_EQ((*last)->seq, 3);
  EXPECT_EQ((*last)->snapshot, "later");
  ASSERT_OK(log_->SetMetadata(sheet, 3, R"({"snapshot": null})", nullptr));
  last = log_->LastSnapshot(sheet, nullptr);
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->seq, 1);
  ASSERT_OK(log_->SetMetadata(sheet, 1, R"({"snapshot": null})", nullptr));
  last = log_->LastSnapshot(sheet, nullptr);
  ASSERT_OK(last);
  EXPECT_FALSE(last->has_value());
  // A server snapshot counts too; the newer of the two wins.
  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "snapshots/r0", nullptr));
  last = log_->LastSnapshot(sheet, nullptr);
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->seq, 0);
  EXPECT_EQ((*last)->root, "snapshots/r0");

  // An append may carry metadata.
  AppendRequest request;
  request.sheet_id = sheet;
  request.type = "Note";
  request.metadata = R"({"snapshot":"with-entry"})";
  auto appended = log_->AddEntry(request, nullptr);
  ASSERT_OK(appended);
  last = log_->LastSnapshot(sheet, nullptr);
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->seq, appended->entry.seq);
}

// Subscribers of the entry stream see metadata: a PATCH is a MODIFY record whose new
// image carries it (schema 007's triggers).
TEST_F(EventLogTest, MetadataTravelsThroughTheChangeFeed) {
  std::string sheet = NewSheet();
  ASSERT_OK(Append(sheet, "1"));
  ASSERT_OK(log_->SetMetadata(sheet, 1, R"({"pending": "wf-1"})", nullptr));
  ChangeFeed feed(db_.get(), &clock_);
  auto config = feed.Config();
  ASSERT_OK(config);
  std::vector<StreamRecord> modified;
  for (int shard = 0; shard < config->shard_count; ++shard) {
    auto records = feed.Read(shard, 0, ChangeFeed::kMaxReadLimit);
    ASSERT_OK(records);
    for (const StreamRecord& r : *records) {
      if (r.event_name == StreamEventName::kModify) modified.push_back(r);
    }
  }
  ASSERT_EQ(modified.size(), 1u);
  EXPECT_EQ(modified[0].new_image.value("seq", -1), 1);
  EXPECT_EQ(ParseJson(modified[0].new_image.value("metadata", "{}")),
            ParseJson(R"({"pending": "wf-1"})"));
  EXPECT_FALSE(modified[0].old_image.contains("metadata"));
}

TEST_F(EventLogTest, SnapshotEveryZeroNeverInsertsEntries) {
  std::string sheet = NewSheet(/*snapshot_every=*/0, /*segment_entries=*/3);
  ASSERT_OK(log_->CompleteSnapshot(sheet, 0, 0, "snapshots/r0", nullptr));
  for (int i = 1; i <= 10; ++i) {
    auto appended = Append(sheet, "1", /*expect=*/i);
    ASSERT_OK(appended);
    EXPECT_FALSE(appended->segment_created);
    EXPECT_FALSE(appended->snapshot_appended);
  }
  std::vector<EntryRecord> entries = ReadAll(sheet);
  ASSERT_EQ(entries.size(), 11u);
  for (size_t i = 1; i < entries.size(); ++i) EXPECT_EQ(entries[i].type, "Note");
  EXPECT_EQ(log_->ListSegments(sheet, nullptr)->size(), 1u);
}

TEST_F(TruncateTest, ExactTruncationCutsInsideASegmentAndRecordsTheBase) {
  std::string sheet = TwoSegments(/*complete_second=*/false);  // seqs 0..8
  EXPECT_EQ(log_->TruncateExact(sheet, 10, "b", nullptr, nullptr).status().code(),
            StatusCode::kOutOfRange);
  auto cut = log_->TruncateExact(sheet, 3, "snapshots/base3", nullptr, nullptr);
  ASSERT_OK(cut);
  EXPECT_EQ(cut->first_seq, 3);
  EXPECT_EQ(cut->dropped_entries, 3);
  EXPECT_TRUE(cut->dropped_segments.empty());
  EXPECT_EQ(cut->released_blobs, std::vector<std::string>{"snapshots/r0"});
  EXPECT_EQ(log_->GetSheet(sheet, nullptr)->base_root, "snapshots/base3");
  EXPECT_EQ(log_->Read(sheet, 2, std::nullopt, 10, nullptr).status().code(),
            StatusCode::kGone);
  auto kept = log_->Read(sheet, 3, std::nullopt, 100, nullptr);
  ASSERT_OK(kept);
  ASSERT_EQ(kept->entries.size(), 6u);
  EXPECT_EQ(kept->entries.front().seq, 3);
  EXPECT_EQ(log_->TruncateExact(sheet, 2, "b", nullptr, nullptr).status().code(),
            StatusCode::kOutOfRange)
      << "below first_seq";
  auto same = log_->TruncateExact(sheet, 3, "other", nullptr, nullptr);
  ASSERT_OK(same);
  EXPECT_EQ(same->dropped_entries, 0);
  EXPECT_EQ(log_->GetSheet(sheet, nullptr)->base_root, "snapshots/base3");

  // A cut across the segment boundary drops the rest of segment 0; the old base goes.
  auto next = log_->TruncateExact(sheet, 6, "snapshots/base6", nullptr, nullptr);
  ASSERT_OK(next);
  EXPECT_EQ(next->dropped_segments, std::vector<int64_t>{0});
  EXPECT_EQ(next->dropped_entries, 3);
  EXPECT_EQ(next->released_blobs, std::vector<std::string>{"snapshots/base3"});
}

TEST_F(TruncateTest, ExactTruncationAtTheNextSeqKeepsAppendsWorking) {
  std::string sheet = NewSheet();
  for (int i = 0; i < 4; ++i) ASSERT_OK(Append(sheet, "1"));  // seqs 0..4
  auto all = log_->TruncateExact(sheet, 5, "snapshots/all", nullptr, nullptr);
  ASSERT_OK(all);
  EXPECT_EQ(all->first_seq, 5);
  auto empty = log_->Read(sheet, 5, std::nullopt, 10, nullptr);
  ASSERT_OK(empty);
  EXPECT_TRUE(empty->entries.empty());
  EXPECT_TRUE(empty->complete);
  EXPECT_EQ(log_->GetEntry(sheet, 4, nullptr).status().code(), StatusCode::kGone);
  EXPECT_EQ(*log_->NextSeq(sheet, nullptr), 5);
  auto again = log_->TruncateExact(sheet, 5, "x", nullptr, nullptr);
  ASSERT_OK(again);
  auto appended = Append(sheet, "2", /*expect=*/5);
  ASSERT_OK(appended);
  EXPECT_EQ(appended->entry.seq, 5);
  ASSERT_OK(Append(sheet, "3", /*expect=*/6));
  // The entry kept for the head goes with the next cut.
  BlobStoreOptions options;
  options.root = dir_.File("blobs");
  options.sync = false;
  auto blobs = DirectoryBlobStore::Open(options, &clock_);
  ASSERT_OK(blobs);
  auto later = log_->TruncateExact(sheet, 6, "snapshots/six", blobs->get(), nullptr);
  ASSERT_OK(later);
  EXPECT_EQ(later->dropped_entries, 2);
  auto text = (*blobs)->Get(EventLog::ArchiveKey(sheet, 0));
  ASSERT_OK(text);
  EXPECT_EQ(std::count(text->begin(), text->end(), '\n'), 2);
  auto rest = log_->Read(sheet, 6, std::nullopt, 10, nullptr);
  ASSERT_OK(rest);
  ASSERT_EQ(rest->entries.size(), 1u);
  EXPECT_EQ(rest->entries[0].seq, 6);
}

}  // namespace
}  // namespace sheetlog
