// GET /v1/sheets/{id}/events over the real binary: committed entries from a seq on,
// then live, as Server-Sent Events; Last-Event-ID resumes exactly (also across a
// kill -9); metadata, truncation and `from` before first_seq have their events; and
// 200 open streams do not take the request threads from ordinary requests.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
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
};

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

// 200 open streams and ordinary traffic at the same time: every ordinary request is
// answered, and every stream still gets the live entry.
TEST(EventsHttpTest, TwoHundredStreamsDoNotStarveOrdinaryRequests) {
  ServerProcess server(ServerOptions::InMemory({"--clock", "manual"}));
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();
  const std::string sheet = CreateSheet(client);
  std::vector<std::unique_ptr<SseClient>> streams;
  for (int i = 0; i < 200; ++i) {
    streams.push_back(std::make_unique<SseClient>(
        server.port(), "/v1/sheets/" + sheet + "/events?from=0"));
    ASSERT_TRUE(streams.back()->connected()) << i;
  }
  for (auto& s : streams) ASSERT_TRUE(s->ReadUntil(EntriesThrough(0)));
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(Get(client, "/v1/sheets/" + sheet).status, 200) << i;
  }
  const int64_t seq = Append(client, sheet, 1);
  EXPECT_EQ(Get(client, "/readyz").status, 200);
  for (auto& s : streams) EXPECT_TRUE(s->ReadUntil(EntriesThrough(seq)));
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
  SseClient resumed(server.port(), "/v1/sheets/" + sheet +
                                       "/events?from=" + std::to_string(resume_from));
  ASSERT_TRUE(resumed.ReadUntil(EntriesThrough(last), 60));
  for (int64_t id : EntryIds(resumed)) ids.push_back(id);
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
  // Ids increase: a reconnect after the last id sees only what came later.
  std::vector<int64_t> ids;
  for (const SseEvent& e : admin.events()) ids.push_back(std::stoll(e.id));
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  SseClient resumed(server.port(), "/v1/admin/events",
                    "Last-Event-ID: " + std::to_string(ids.back()) + "\r\n");
  // The failed message comes back after its visibility timeout (moved only while no
  // handler runs).
  ASSERT_TRUE(Eventually([&] { return AdvanceClockWhenIdle(client, 61); }));
  ASSERT_TRUE(resumed.ReadUntil(has("snapshot", "outcome", "completed")));
  for (const SseEvent& e : resumed.events()) EXPECT_GT(std::stoll(e.id), ids.back());
}

}  // namespace
}  // namespace sheetlog::testing
