// GET /v1/sheets/{id}/events over the real binary: committed entries from a seq on,
// then live, as Server-Sent Events; Last-Event-ID resumes exactly (also across a
// kill -9, and over the URL's `from`); metadata, snapshots, truncation, deletion and
// `from` before first_seq have their events, and a resume sends the current state of
// the id-less ones; heartbeats on the injected clock; 200 open streams do not take the
// request threads from ordinary requests. GET /v1/admin/events: outcomes, dead
// letters, and ids that stay unique across a restart.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/sse_client.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

// The number of an admin event id ("<epoch>-<n>").
int64_t AdminNumber(const std::string& id) {
  return std::stoll(id.substr(id.rfind('-') + 1));
}
std::string AdminEpoch(const std::string& id) { return id.substr(0, id.rfind('-')); }

auto HasEvent(const std::string& type) {
  return [type](const std::vector<SseEvent>& events) {
    for (const SseEvent& e : events) {
      if (e.event == type) return true;
    }
    return false;
  };
}

auto EntriesThrough(int64_t seq) {
  return [seq](const std::vector<SseEvent>& events) {
    for (const SseEvent& e : events) {
      if (e.event == "entry" && e.id == std::to_string(seq)) return true;
    }
    return false;
  };
}

std::vector<int64_t> EntryIds(const SseClient& sse) {
  std::vector<int64_t> ids;
  for (const SseEvent& e : sse.Of("entry")) ids.push_back(std::stoll(e.id));
  return ids;
}

// A sheet whose Snapshot entry 0 stays pending (its first build fails, once) until
// CompleteSnapshots moves the clock past the message's visibility timeout.
std::string CreateSheetWithPendingSnapshot(httplib::Client& client) {
  const int64_t before = SnapshotWorkerFailures(client);
  ArmFault(client, "snapshot.before_complete");
  const std::string sheet = CreateSheet(client);
  EXPECT_TRUE(Eventually([&] { return SnapshotWorkerFailures(client) > before; }));
  EXPECT_FALSE(AllSnapshotsComplete(client, sheet));
  return sheet;
}

void CompleteSnapshots(const ServerProcess& server, httplib::Client& client,
                       const std::string& sheet) {
  ASSERT_TRUE(Eventually([&] { return AdvanceClockWhenIdle(client, 61); }));
  ASSERT_TRUE(WaitForSnapshots(server, client, sheet));
}

TEST(EventsHttpTest, BacklogThenLiveInSeqOrderWithTheEntryAsRead) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheet(client);
  for (int i = 1; i <= 3; ++i) SetCell(client, sheet, "A1", i);
  SseClient sse(server.port(), "/v1/sheets/" + sheet + "/events?from=0");
  ASSERT_TRUE(sse.connected());
  ASSERT_TRUE(sse.ReadUntil(EntriesThrough(3))) << "backlog 0..3";
  EXPECT_EQ(sse.status(), 200);
  SetCell(client, sheet, "A1", 4);
  SetCell(client, sheet, "A1", 5);
  ASSERT_TRUE(sse.ReadUntil(EntriesThrough(5))) << "live 4..5";
  EXPECT_EQ(EntryIds(sse), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  // The data is the entry exactly as GET .../entries/{seq} returns it.
  JsonResponse four = Get(client, "/v1/sheets/" + sheet + "/entries/4");
  ASSERT_EQ(four.status, 200);
  EXPECT_EQ(json::parse(sse.Of("entry")[4].data), four.body);

  // Metadata changes of an entry already sent arrive as their own event.
  JsonResponse patched = Request(client, "PATCH", "/v1/sheets/" + sheet + "/entries/2",
                                 json{{"history", "h-2"}}.dump());
  ASSERT_EQ(patched.status, 200) << patched.raw;
  ASSERT_TRUE(sse.ReadUntil([](const std::vector<SseEvent>& events) {
    for (const SseEvent& e : events) {
      if (e.event == "metadata") return true;
    }
    return false;
  }));
  json metadata = json::parse(sse.Of("metadata")[0].data);
  EXPECT_EQ(metadata["seq"], 2);
  EXPECT_EQ(metadata["history"], "h-2") << metadata.dump();
}

TEST(EventsHttpTest, LastEventIdResumesExactlyAcrossAKill) {
  TempDir dir;
  auto server =
      std::make_unique<ServerProcess>(ServerOptions(dir.path(), {"--clock", "manual"}));
  ASSERT_TRUE(server->Start()) << server->error();
  httplib::Client client = server->Client();
  const std::string sheet = CreateSheet(client);
  for (int i = 1; i <= 4; ++i) SetCell(client, sheet, "A1", i);
  std::vector<int64_t> seen;
  {
    SseClient sse(server->port(), "/v1/sheets/" + sheet + "/events?from=0");
    ASSERT_TRUE(sse.ReadUntil(EntriesThrough(2)));
    for (int64_t id : EntryIds(sse)) {
      if (id <= 2) seen.push_back(id);  // the client stops after seq 2
    }
  }
  server->Kill();
  server =
      std::make_unique<ServerProcess>(ServerOptions(dir.path(), {"--clock", "manual"}));
  ASSERT_TRUE(server->Start()) << server->error();
  httplib::Client again = server->Client();
  const int64_t fifth = SetCell(again, sheet, "A1", 5);
  SseClient resumed(server->port(), "/v1/sheets/" + sheet + "/events",
                    "Last-Event-ID: " + std::to_string(seen.back()) + "\r\n");
  ASSERT_TRUE(resumed.ReadUntil(EntriesThrough(fifth)));
  for (int64_t id : EntryIds(resumed)) seen.push_back(id);
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}))
      << "nothing skipped or repeated";
}

TEST(EventsHttpTest, FromBeforeFirstSeqIsGoneAndPastTheHeadIsRefused) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheet(client);
  for (int i = 1; i <= 6; ++i) SetCell(client, sheet, "A1", i);
  EXPECT_EQ(Get(client, "/v1/sheets/" + sheet + "/events?from=99").status, 400);
  EXPECT_EQ(Get(client, "/v1/sheets/00000000-0000-4000-8000-000000000000/events").status,
            404);
  SseClient live(server.port(), "/v1/sheets/" + sheet + "/events");  // from the head
  ASSERT_TRUE(live.connected());
  // The head arrives once the stream is subscribed: only then is a change its news.
  ASSERT_TRUE(
      live.ReadUntil([&](const std::vector<SseEvent>&) { return live.status() == 200; }));
  JsonResponse truncated =
      Post(client, "/v1/sheets/" + sheet + "/truncate", json{{"before_seq", 4}});
  ASSERT_EQ(truncated.status, 200) << truncated.raw;
  ASSERT_TRUE(live.ReadUntil([](const std::vector<SseEvent>& events) {
    for (const SseEvent& e : events) {
      if (e.event == "truncated") return true;
    }
    return false;
  }));
  EXPECT_EQ(json::parse(live.Of("truncated")[0].data)["first_seq"], 4);

  SseClient gone(server.port(), "/v1/sheets/" + sheet + "/events?from=1");
  ASSERT_TRUE(
      gone.ReadUntil([&](const std::vector<SseEvent>&) { return gone.closed(); }));
  ASSERT_EQ(gone.Of("gone").size(), 1u);
  EXPECT_EQ(json::parse(gone.Of("gone")[0].data)["first_seq"], 4);
  EXPECT_TRUE(gone.Of("entry").empty());
}

// 200 open streams over several sheets while a few client threads append and read:
// every ordinary request succeeds, and every stream gets every entry of its sheet,
// once and in order.
TEST(EventsHttpTest, TwoHundredStreamsDoNotStarveOrdinaryRequests) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  constexpr int kSheets = 4, kStreams = 200, kThreads = 4, kRounds = 25;
  std::vector<std::string> sheets;
  for (int i = 0; i < kSheets; ++i) sheets.push_back(CreateSheet(client));
  std::vector<std::unique_ptr<SseClient>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<SseClient>(
        server.port(), "/v1/sheets/" + sheets[i % kSheets] + "/events?from=0"));
    ASSERT_TRUE(streams.back()->connected()) << i;
  }
  for (auto& s : streams) ASSERT_TRUE(s->ReadUntil(EntriesThrough(0)));

  // Each thread appends to the sheets in turn and reads between appends.
  std::atomic<int> ok{0}, failed{0};
  std::mutex mu;
  std::map<std::string, std::vector<int64_t>> appended;  // GUARDED_BY(mu)
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client c = server.Client();
      auto check = [&](int status, int want) { (status == want ? ok : failed)++; };
      for (int i = 0; i < kRounds; ++i) {
        const std::string& sheet = sheets[(t + i) % kSheets];
        JsonResponse r = Post(c, "/v1/sheets/" + sheet + "/entries",
                              json{{"type", "SetCell"},
                                   {"body", {{"ref", "B2"}, {"value", t * 1000 + i}}}});
        check(r.status, 201);
        if (r.status == 201) {
          std::lock_guard<std::mutex> lock(mu);
          appended[sheet].push_back(r.body["seq"].get<int64_t>());
        }
        check(Get(c, "/v1/sheets/" + sheet).status, 200);
        check(Get(c, "/v1/sheets/" + sheet + "/entries?from=0&limit=5").status, 200);
        check(Get(c, "/v1/sheets/" + sheet + "/cells?range=A1:C3").status, 200);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(ok.load(), kThreads * kRounds * 4);
  EXPECT_EQ(Get(client, "/readyz").status, 200);
  for (int i = 0; i < kStreams; ++i) {
    std::vector<int64_t> want = {0};
    for (int64_t seq : appended[sheets[i % kSheets]]) want.push_back(seq);
    std::sort(want.begin(), want.end());
    ASSERT_TRUE(streams[i]->ReadUntil(EntriesThrough(want.back()))) << "stream " << i;
    EXPECT_EQ(EntryIds(*streams[i]), want) << "stream " << i;
  }
}

// A consumer that stops reading is cut off with the seq to resume from, instead of
// the server buffering for it; resuming there loses and repeats nothing.
TEST(EventsHttpTest, SlowConsumerIsClosedWithAResumePoint) {
  // A write timeout longer than the run: a loaded machine can take more than the
  // default 30 s to append past what the socket buffers hold, and the front end would
  // then close the stalled connection for its timeout, before any overflow.
  ServerProcess server(
      ServerOptions::InMemory({"--clock", "manual", "--body-timeout", "600"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheet(client);
  SseClient stalled(server.port(), "/v1/sheets/" + sheet + "/events?from=0");
  ASSERT_TRUE(stalled.ReadUntil(EntriesThrough(0)));
  // ~12 MB of events while the client reads nothing: more than the socket buffers and
  // the stream's 256 KiB hold.
  const std::string text(12 * 1024, 'x');
  int64_t last = 0;
  for (int i = 0; i < 1000; ++i) {
    last = SetCell(client, sheet, "A1", text);
    ASSERT_FALSE(HasFatalFailure());
  }
  ASSERT_TRUE(stalled.ReadUntil(
      [&](const std::vector<SseEvent>&) { return stalled.closed(); }, 60))
      << "the stalled stream was never closed";
  ASSERT_EQ(stalled.Of("overflow").size(), 1u);
  const int64_t resume_from =
      json::parse(stalled.Of("overflow")[0].data)["resume_from"].get<int64_t>();
  std::vector<int64_t> ids = EntryIds(stalled);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(resume_from, ids.back() + 1) << "resume right after the last entry sent";
  EXPECT_LT(resume_from, last) << "it was cut off before the end";
  // Resume as a client would: a resumed stream that itself falls behind (a loaded
  // machine reads the 12 MB backlog slowly) is cut off again with its own resume
  // point, which must continue exactly where it stopped.
  int64_t from = resume_from;
  for (int attempt = 0; attempt < 100 && from <= last; ++attempt) {
    SseClient resumed(server.port(),
                      "/v1/sheets/" + sheet + "/events?from=" + std::to_string(from));
    auto done = EntriesThrough(last);
    ASSERT_TRUE(resumed.ReadUntil(
        [&](const std::vector<SseEvent>& events) {
          return done(events) || resumed.closed();
        },
        60));
    for (int64_t id : EntryIds(resumed)) ids.push_back(id);
    if (resumed.Of("overflow").empty()) break;
    from = json::parse(resumed.Of("overflow")[0].data)["resume_from"].get<int64_t>();
    ASSERT_EQ(from, ids.back() + 1) << "a resume point right after the last entry sent";
  }
  ASSERT_EQ(static_cast<int64_t>(ids.size()), last + 1);
  for (int64_t i = 0; i <= last; ++i) ASSERT_EQ(ids[static_cast<size_t>(i)], i);
}

// The operators' stream: snapshot outcomes, job failures and queue depth changes.
TEST(EventsHttpTest, AdminStreamShowsSnapshotOutcomesJobFailuresAndQueues) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual", "--enable-faults"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  SseClient admin(server.port(), "/v1/admin/events?after=0");
  ASSERT_TRUE(admin.connected());
  const std::string good = CreateSheet(client);
  auto has = [](const std::string& type, const std::string& field,
                const std::string& value) {
    return [=](const std::vector<SseEvent>& events) {
      for (const SseEvent& e : events) {
        if (e.event != type) continue;
        json data = json::parse(e.data, nullptr, false);
        if (data.is_object() && data.value(field, "") == value) return true;
      }
      return false;
    };
  };
  ASSERT_TRUE(admin.ReadUntil(has("snapshot", "outcome", "completed")));
  ASSERT_NO_FATAL_FAILURE(ArmFault(client, "snapshot.before_complete"));
  CreateSheet(client);
  ASSERT_TRUE(admin.ReadUntil(has("snapshot", "outcome", "failed")));
  ASSERT_TRUE(admin.ReadUntil(has("job", "what", "message_failed")));
  EXPECT_EQ(admin.Of("queues").empty(), false) << "depths at start";
  // Ids increase: a reconnect after the last id sees only what came later (the
  // header wins over the URL's `after`, as a browser's EventSource reconnects).
  std::vector<int64_t> ids;
  for (const SseEvent& e : admin.events()) ids.push_back(AdminNumber(e.id));
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "each event once";
  SseClient resumed(server.port(), "/v1/admin/events?after=0",
                    "Last-Event-ID: " + admin.events().back().id + "\r\n");
  // The failed message comes back after its visibility timeout (moved only while no
  // handler runs).
  ASSERT_TRUE(Eventually([&] { return AdvanceClockWhenIdle(client, 61); }));
  ASSERT_TRUE(resumed.ReadUntil(has("snapshot", "outcome", "completed")));
  for (const SseEvent& e : resumed.events()) EXPECT_GT(AdminNumber(e.id), ids.back());
  EXPECT_TRUE(resumed.Of("gap").empty());
}

// A browser's EventSource opened with ?from=N reconnects with the same URL plus
// Last-Event-ID: the header wins, so the reconnect resumes instead of repeating.
TEST(EventsHttpTest, LastEventIdWinsOverFrom) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheet(client);
  for (int i = 1; i <= 4; ++i) SetCell(client, sheet, "A1", i);
  SseClient sse(server.port(), "/v1/sheets/" + sheet + "/events?from=0",
                "Last-Event-ID: 2\r\n");
  ASSERT_TRUE(sse.ReadUntil(EntriesThrough(4)));
  EXPECT_EQ(EntryIds(sse), (std::vector<int64_t>{3, 4}));
}

// Metadata, snapshot and truncated events carry no id, so a resume cannot replay
// them: a stream sends, after the entries, the current state they convey — here a
// snapshot that completed and a truncation made while the reader was away.
TEST(EventsHttpTest, ResumeSendsTheStateOfTheIdLessEvents) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual", "--enable-faults"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheetWithPendingSnapshot(client);
  for (int i = 1; i <= 3; ++i) SetCell(client, sheet, "A1", i);
  {
    SseClient first(server.port(), "/v1/sheets/" + sheet + "/events?from=0");
    ASSERT_TRUE(first.ReadUntil(EntriesThrough(3)));
    EXPECT_TRUE(first.Of("snapshot").empty()) << "no snapshot completed yet";
    EXPECT_TRUE(first.Of("truncated").empty()) << "nothing truncated yet";
  }
  // Away: entry 0's snapshot completes and 4 is appended.
  CompleteSnapshots(server, client, sheet);
  const int64_t fourth = SetCell(client, sheet, "A1", 4);
  {
    SseClient resumed(server.port(), "/v1/sheets/" + sheet + "/events",
                      "Last-Event-ID: 3\r\n");
    ASSERT_TRUE(resumed.ReadUntil(HasEvent("snapshot")));
    EXPECT_EQ(EntryIds(resumed), (std::vector<int64_t>{fourth}));
    EXPECT_EQ(json::parse(resumed.Of("snapshot")[0].data)["seq"], 0);
    // The state comes after the entries that existed at the reconnect.
    EXPECT_EQ(resumed.events().front().event, "entry");
    EXPECT_TRUE(resumed.Of("truncated").empty());
  }
  // Away again: entries before 2 are truncated (the snapshot entry with them).
  JsonResponse truncated =
      Post(client, "/v1/sheets/" + sheet + "/truncate", json{{"before_seq", 2}});
  ASSERT_EQ(truncated.status, 200) << truncated.raw;
  SseClient again(server.port(), "/v1/sheets/" + sheet + "/events",
                  "Last-Event-ID: " + std::to_string(fourth) + "\r\n");
  ASSERT_TRUE(again.ReadUntil(HasEvent("truncated")));
  EXPECT_EQ(json::parse(again.Of("truncated")[0].data)["first_seq"], 2);
  EXPECT_TRUE(again.Of("entry").empty());
}

// A snapshot completing after its entry was sent is its own event; deleting the sheet
// ends the stream with `deleted`.
TEST(EventsHttpTest, SnapshotAndDeletedEvents) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual", "--enable-faults"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheetWithPendingSnapshot(client);
  SseClient sse(server.port(), "/v1/sheets/" + sheet + "/events?from=0");
  ASSERT_TRUE(sse.ReadUntil(EntriesThrough(0)));
  const json entry = json::parse(sse.Of("entry")[0].data);
  CompleteSnapshots(server, client, sheet);
  ASSERT_TRUE(sse.ReadUntil(HasEvent("snapshot")));
  const json snapshot = json::parse(sse.Of("snapshot")[0].data);
  EXPECT_EQ(snapshot["seq"], 0);
  EXPECT_NE(snapshot, entry) << "the entry as read after its snapshot completed";
  EXPECT_EQ(snapshot, Get(client, "/v1/sheets/" + sheet + "/entries/0").body);

  EXPECT_EQ(Request(client, "DELETE", "/v1/sheets/" + sheet).status / 100, 2);
  ASSERT_TRUE(sse.ReadUntil([&](const std::vector<SseEvent>&) { return sse.closed(); }));
  EXPECT_EQ(sse.Of("deleted").size(), 1u);
}

// Heartbeat comments run on the injected clock: a test sees one by moving it.
TEST(EventsHttpTest, HeartbeatsOnTheClock) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheet(client);
  SseClient sse(server.port(), "/v1/sheets/" + sheet + "/events");
  SseClient admin(server.port(), "/v1/admin/events");
  ASSERT_TRUE(
      sse.ReadUntil([&](const std::vector<SseEvent>&) { return sse.status() == 200; }));
  ASSERT_TRUE(admin.ReadUntil(
      [&](const std::vector<SseEvent>&) { return admin.status() == 200; }));
  EXPECT_TRUE(sse.comments().empty());
  ASSERT_TRUE(Eventually([&] { return AdvanceClockWhenIdle(client, 15); }));
  auto heartbeat = [](const SseClient& c) {
    return [&c](const std::vector<SseEvent>&) {
      return std::count(c.comments().begin(), c.comments().end(), ": heartbeat") > 0;
    };
  };
  EXPECT_TRUE(sse.ReadUntil(heartbeat(sse)));
  EXPECT_TRUE(admin.ReadUntil(heartbeat(admin)));
  EXPECT_FALSE(sse.closed());
}

// A message that keeps failing is dead-lettered, and the operators' stream shows it
// (a `queues` event with the dead-letter depth).
TEST(EventsHttpTest, AdminStreamShowsADeadLetter) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual", "--enable-faults"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  SseClient admin(server.port(), "/v1/admin/events?after=0");
  ASSERT_TRUE(admin.ReadUntil(
      [&](const std::vector<SseEvent>&) { return admin.status() == 200; }));
  const int64_t before = SnapshotWorkerFailures(client);
  ASSERT_NO_FATAL_FAILURE(ArmFault(client, "snapshot.before_complete", "error", -1));
  CreateSheet(client);
  // Each receive fails; past the visibility timeout the next one tries again, until
  // the tenth receive moves the message to the dead-letter queue.
  PipelineWatch watch(server);
  for (int64_t failures = 1; failures <= 10; ++failures) {
    ASSERT_TRUE(
        watch.Until([&] { return SnapshotWorkerFailures(client) >= before + failures; }));
    ASSERT_TRUE(Eventually([&] { return AdvanceClockWhenIdle(client, 61); }));
  }
  auto dead_lettered = [](const std::vector<SseEvent>& events) {
    for (const SseEvent& e : events) {
      if (e.event != "queues") continue;
      json data = json::parse(e.data);
      if (data.contains("snapshots") && data["snapshots"]["dead_letters"] == 1)
        return true;
    }
    return false;
  };
  // Depths are checked every 5 s of the clock.
  ASSERT_TRUE(Eventually([&] {
    AdvanceClockWhenIdle(client, 5);
    return admin.ReadUntil(dead_lettered, 1);
  }));
  EXPECT_FALSE(admin.Of("snapshot").empty());
}

// The admin journal is in memory and starts over with the process: ids carry a
// per-start epoch, so an id from before a restart is recognized and answered with a
// `gap` and everything kept, instead of silently skipping the new start's events.
// `from` names the next id to read, as the overflow's resume_from does.
TEST(EventsHttpTest, AdminIdsStayUniqueAcrossARestart) {
  TempDir dir;
  auto server =
      std::make_unique<ServerProcess>(ServerOptions(dir.path(), {"--clock", "manual"}));
  ASSERT_TRUE(server->Start()) << server->error();
  std::string last_id;
  {
    httplib::Client client = server->Client();
    SseClient admin(server->port(), "/v1/admin/events?after=0");
    CreateSheet(client);
    ASSERT_TRUE(admin.ReadUntil(HasEvent("snapshot")));
    last_id = admin.events().back().id;
  }
  server->Kill();
  server =
      std::make_unique<ServerProcess>(ServerOptions(dir.path(), {"--clock", "manual"}));
  ASSERT_TRUE(server->Start()) << server->error();
  httplib::Client client = server->Client();
  CreateSheet(client);
  SseClient resumed(server->port(), "/v1/admin/events",
                    "Last-Event-ID: " + last_id + "\r\n");
  ASSERT_TRUE(resumed.ReadUntil(HasEvent("snapshot")));
  ASSERT_FALSE(resumed.events().empty());
  const SseEvent& gap = resumed.events().front();
  ASSERT_EQ(gap.event, "gap") << "the id is from before the restart";
  EXPECT_EQ(json::parse(gap.data)["reason"], "restart");
  EXPECT_EQ(json::parse(gap.data)["after"], last_id);
  const std::string first = resumed.events()[1].id;
  EXPECT_NE(AdminEpoch(first), AdminEpoch(last_id));
  EXPECT_EQ(AdminNumber(first), 1) << "everything kept since the restart";

  // from=<id>: that event on (the overflow's resume_from means the same), where
  // after=<id> would start past it.
  const std::string newest = resumed.events().back().id;
  SseClient from(server->port(), "/v1/admin/events?from=" + newest);
  ASSERT_TRUE(from.ReadUntil(HasEvent("snapshot")));
  EXPECT_EQ(from.events().front().id, newest);
}

}  // namespace
}  // namespace sheetlog::testing
