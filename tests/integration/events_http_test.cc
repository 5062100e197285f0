// GET /v1/sheets/{id}/events over the real binary: committed entries from a seq on,
// then live, as Server-Sent Events; Last-Event-ID resumes exactly (also across a
// kill -9, and over the URL's `from`); metadata, snapshots, truncation, deletion and
// `from` before first_seq have their events, and a resume sends the current state of
// the id-less ones; heartbeats on the injected clock; 200 open streams do not take the
// request threads from ordinary requests. GET /v1/admin/events: outcomes, dead
// letters, and ids that stay unique across a restart.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

struct SseEvent {
  std::string id;
  std::string event;
  std::string data;
};

// A raw-socket SSE client: the test reads exactly what the server wrote.
class SseClient {
 public:
  SseClient(int port, const std::string& path, const std::string& extra_headers = "") {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    // A small receive window, so a client that stops reading is felt by the server
    // after a few MB rather than after the kernel's largest buffers.
    const int window = 16 * 1024;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &window, sizeof(window));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    const std::string request = "GET " + path +
                                " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                                "\r\n" + extra_headers + "\r\n";
    if (connected_) connected_ = ::send(fd_, request.data(), request.size(), 0) > 0;
  }
  ~SseClient() {
    if (fd_ >= 0) ::close(fd_);
  }

  bool connected() const { return connected_; }
  int status() const { return status_; }
  bool closed() const { return eof_; }

  // Reads until `done(events)` holds, the server closes, or `seconds` of real time.
  bool ReadUntil(const std::function<bool(const std::vector<SseEvent>&)>& done,
                 int seconds = 20) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!done(events_)) {
      if (eof_ || std::chrono::steady_clock::now() > deadline) return done(events_);
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      raw_.append(buf, static_cast<size_t>(n));
      Parse();
    }
    return true;
  }

  const std::vector<SseEvent>& events() const { return events_; }
  // Comment lines (": heartbeat"), in order.
  const std::vector<std::string>& comments() const { return comments_; }
  std::vector<SseEvent> Of(const std::string& event) const {
    std::vector<SseEvent> out;
    for (const SseEvent& e : events_) {
      if (e.event == event) out.push_back(e);
    }
    return out;
  }

 private:
  // Head, then chunked framing, then "field: value" lines ending in a blank line.
  void Parse() {
    if (status_ == 0) {
      const size_t end = raw_.find("\r\n\r\n");
      if (end == std::string::npos) return;
      status_ = std::stoi(raw_.substr(9, 3));
      raw_.erase(0, end + 4);
    }
    while (true) {
      const size_t line = raw_.find("\r\n");
      if (line == std::string::npos) break;
      const size_t size = std::stoul(raw_.substr(0, line), nullptr, 16);
      if (raw_.size() < line + 2 + size + 2) break;
      body_ += raw_.substr(line + 2, size);
      raw_.erase(0, line + 2 + size + 2);
      if (size == 0) eof_ = true;
    }
    size_t end;
    while ((end = body_.find("\n\n")) != std::string::npos) {
      const std::string block = body_.substr(0, end);
      body_.erase(0, end + 2);
      SseEvent event;
      size_t start = 0;
      while (start < block.size()) {
        size_t stop = block.find('\n', start);
        if (stop == std::string::npos) stop = block.size();
        const std::string field = block.substr(start, stop - start);
        start = stop + 1;
        if (field.rfind(':', 0) == 0) comments_.push_back(field);
        if (field.rfind("id: ", 0) == 0) event.id = field.substr(4);
        if (field.rfind("event: ", 0) == 0) event.event = field.substr(7);
        if (field.rfind("data: ", 0) == 0) event.data = field.substr(6);
      }
      if (!event.event.empty()) events_.push_back(std::move(event));
    }
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  int status_ = 0;
  std::string raw_, body_;
  std::vector<SseEvent> events_;
  std::vector<std::string> comments_;
};

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

std::string CreateSheet(httplib::Client& client) {
  JsonResponse r = Post(client, "/v1/sheets", json{{"snapshot_every", 0}});
  EXPECT_EQ(r.status, 201) << r.raw;
  return r.body.value("id", "");
}

int64_t Append(httplib::Client& client, const std::string& sheet, int value) {
  JsonResponse r =
      Post(client, "/v1/sheets/" + sheet + "/entries",
           json{{"type", "SetCell"}, {"body", {{"ref", "A1"}, {"value", value}}}});
  EXPECT_EQ(r.status, 201) << r.raw;
  return r.body.value("seq", int64_t{-1});
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

// Failed snapshot-worker messages so far (from /metrics).
int64_t SnapshotWorkerFailures(httplib::Client& client) {
  const std::string series = R"(sheetlog_function_failures{mapping="snapshot-worker"} )";
  const std::string text = Get(client, "/metrics").raw;
  const size_t at = text.find(series);
  return at == std::string::npos ? 0 : std::stoll(text.substr(at + series.size()));
}

bool AllSnapshotsComplete(httplib::Client& client, const std::string& sheet) {
  JsonResponse r = Get(client, "/v1/sheets/" + sheet + "/snapshots");
  if (r.status != 200) return false;
  for (const json& s : r.body["snapshots"]) {
    if (s["state"] != "completed") return false;
  }
  return true;
}

// A sheet whose Snapshot entry 0 stays pending (its first build fails, once) until
// CompleteSnapshots moves the clock past the message's visibility timeout.
std::string CreateSheetWithPendingSnapshot(httplib::Client& client) {
  const int64_t before = SnapshotWorkerFailures(client);
  EXPECT_EQ(Post(client, "/v1/admin/faults",
                 json{{"point", "snapshot.before_complete"}, {"kind", "error"}})
                .status,
            200);
  const std::string sheet = CreateSheet(client);
  EXPECT_TRUE(Eventually([&] { return SnapshotWorkerFailures(client) > before; }));
  EXPECT_FALSE(AllSnapshotsComplete(client, sheet));
  return sheet;
}

void CompleteSnapshots(httplib::Client& client, const std::string& sheet) {
  ASSERT_TRUE(Eventually([&] { return AdvanceClockWhenIdle(client, 61); }));
  ASSERT_TRUE(Eventually([&] { return AllSnapshotsComplete(client, sheet); }));
}

TEST(EventsHttpTest, BacklogThenLiveInSeqOrderWithTheEntryAsRead) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheet(client);
  for (int i = 1; i <= 3; ++i) Append(client, sheet, i);
  SseClient sse(server.port(), "/v1/sheets/" + sheet + "/events?from=0");
  ASSERT_TRUE(sse.connected());
  ASSERT_TRUE(sse.ReadUntil(EntriesThrough(3))) << "backlog 0..3";
  EXPECT_EQ(sse.status(), 200);
  Append(client, sheet, 4);
  Append(client, sheet, 5);
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
  for (int i = 1; i <= 4; ++i) Append(client, sheet, i);
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
  const int64_t fifth = Append(again, sheet, 5);
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
  for (int i = 1; i <= 6; ++i) Append(client, sheet, i);
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
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual"}));
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
    JsonResponse r =
        Post(client, "/v1/sheets/" + sheet + "/entries",
             json{{"type", "SetCell"}, {"body", {{"ref", "A1"}, {"value", text}}}});
    ASSERT_EQ(r.status, 201) << r.raw;
    last = r.body["seq"].get<int64_t>();
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
  ASSERT_EQ(Post(client, "/v1/admin/faults",
                 json{{"point", "snapshot.before_complete"}, {"kind", "error"}})
                .status,
            200);
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
  for (int i = 1; i <= 4; ++i) Append(client, sheet, i);
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
  for (int i = 1; i <= 3; ++i) Append(client, sheet, i);
  {
    SseClient first(server.port(), "/v1/sheets/" + sheet + "/events?from=0");
    ASSERT_TRUE(first.ReadUntil(EntriesThrough(3)));
    EXPECT_TRUE(first.Of("snapshot").empty()) << "no snapshot completed yet";
    EXPECT_TRUE(first.Of("truncated").empty()) << "nothing truncated yet";
  }
  // Away: entry 0's snapshot completes and 4 is appended.
  CompleteSnapshots(client, sheet);
  const int64_t fourth = Append(client, sheet, 4);
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
  CompleteSnapshots(client, sheet);
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
  ASSERT_EQ(
      Post(client, "/v1/admin/faults",
           json{{"point", "snapshot.before_complete"}, {"kind", "error"}, {"count", -1}})
          .status,
      200);
  CreateSheet(client);
  // Each receive fails; past the visibility timeout the next one tries again, until
  // the tenth receive moves the message to the dead-letter queue.
  for (int64_t failures = 1; failures <= 10; ++failures) {
    ASSERT_TRUE(
        Eventually([&] { return SnapshotWorkerFailures(client) >= before + failures; }));
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
