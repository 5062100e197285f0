#include "tests/support/api_client.h"

#include <algorithm>
#include <thread>

namespace sheetlog::testing {
namespace {

using nlohmann::json;

// A fatal failure from a function that returns a value (ASSERT_* and FAIL() return
// void): the lambda returns, the test is marked as failed fatally.
void FailFatally(const std::string& message) {
  [&] { FAIL() << message; }();
}

// True if `response` has `status`; else a fatal failure naming the request.
bool Expect(const JsonResponse& response, int status, const std::string& request) {
  if (response.status == status) return true;
  FailFatally(request + " answered " + std::to_string(response.status) + " (expected " +
              std::to_string(status) + "): " + response.raw);
  return false;
}

std::string Tail(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : text.substr(text.size() - bytes);
}

// The worker's outcomes and the runtime's counters, from /metrics.
std::string PipelineMetrics(httplib::Client& client) {
  auto response = client.Get("/metrics");
  if (!response) return "(no /metrics)";
  std::string out;
  size_t start = 0;
  const std::string& body = response->body;
  while (start < body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string::npos) end = body.size();
    const std::string line = body.substr(start, end - start);
    if (line.rfind("sheetlog_snapshot_messages_total", 0) == 0 ||
        line.rfind("sheetlog_function_", 0) == 0) {
      out += line + "\n";
    }
    start = end + 1;
  }
  return out;
}

// Waits (PipelineWatch) until `done`, moving a manual clock as `wait` says; a timeout
// shows the sheet's snapshots, the pending snapshots, the queues, the worker's outcomes
// and the end of the server's log.
::testing::AssertionResult WaitForSnapshotState(const ServerProcess& server,
                                                httplib::Client& client,
                                                const std::string& sheet,
                                                const SnapshotWait& wait,
                                                const std::function<bool()>& done) {
  PipelineWatch watch(server);
  return watch.Until(
      [&] {
        if (done()) return true;
        if (wait.advance_clock_s > 0) AdvanceClockWhenIdle(client, wait.advance_clock_s);
        return false;
      },
      [&] {
        return "snapshots of " + sheet + ": " +
               Get(client, "/v1/sheets/" + sheet + "/snapshots").raw +
               "\npending snapshots: " + Get(client, "/v1/admin/pending-snapshots").raw +
               "\nqueues: " + Get(client, "/v1/admin/queues").raw +
               "\npipeline metrics:\n" + PipelineMetrics(client) +
               "server log (last 8 KB):\n" + Tail(server.Log(), 8192);
      },
      wait.real_seconds);
}

}  // namespace

void ApiTest::StartServer(const ServerOptions& options) {
  client_.reset();
  server_.reset();
  server_ = std::make_unique<ServerProcess>(options);
  ASSERT_TRUE(server_->Start()) << server_->error();
  client_ = std::make_unique<httplib::Client>(server_->Client());
}

std::string PathOf(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t path = url.find('/', scheme + 3);
  return path == std::string::npos ? "/" : url.substr(path);
}

std::string CreateSheet(httplib::Client& client, const json& body) {
  JsonResponse r = Post(client, "/v1/sheets", body);
  if (!Expect(r, 201, "POST /v1/sheets " + body.dump())) return "";
  return r.body.value("id", "");
}

std::string CreateSheet(httplib::Client& client, int snapshot_every) {
  return CreateSheet(client, json{{"snapshot_every", snapshot_every}});
}

JsonResponse PostEntry(httplib::Client& client, const std::string& sheet,
                       const json& entry) {
  return Post(client, "/v1/sheets/" + sheet + "/entries", entry);
}

int64_t Append(httplib::Client& client, const std::string& sheet, const std::string& type,
               const json& body) {
  const json entry{{"type", type}, {"body", body}};
  JsonResponse r = PostEntry(client, sheet, entry);
  if (!Expect(r, 201, "POST /v1/sheets/" + sheet + "/entries " + entry.dump())) return -1;
  return r.body.value("seq", int64_t{-1});
}

int64_t SetCell(httplib::Client& client, const std::string& sheet, const std::string& ref,
                const json& value) {
  return Append(client, sheet, "SetCell", {{"ref", ref}, {"value", value}});
}

std::vector<json> ReadAllEntries(httplib::Client& client, const std::string& sheet,
                                 int page_size) {
  std::vector<json> out;
  std::string from = "start";
  while (true) {
    const std::string path = "/v1/sheets/" + sheet + "/entries?from=" + from +
                             "&limit=" + std::to_string(page_size);
    JsonResponse r = Get(client, path);
    if (!Expect(r, 200, "GET " + path)) break;
    for (const json& e : r.body["entries"]) out.push_back(e);
    if (r.body["complete"].get<bool>()) break;
    if (r.body["entries"].empty()) {
      FailFatally("GET " + path +
                  " answered an empty page that is not complete: " + r.raw);
      break;
    }
    from = std::to_string(out.back()["seq"].get<int64_t>() + 1);
  }
  return out;
}

json Snapshots(httplib::Client& client, const std::string& sheet) {
  JsonResponse r = Get(client, "/v1/sheets/" + sheet + "/snapshots");
  if (!Expect(r, 200, "GET /v1/sheets/" + sheet + "/snapshots")) return nullptr;
  return r.body["snapshots"];
}

bool AllSnapshotsComplete(httplib::Client& client, const std::string& sheet,
                          size_t at_least) {
  JsonResponse r = Get(client, "/v1/sheets/" + sheet + "/snapshots");
  if (r.status != 200) return false;
  const json& list = r.body["snapshots"];
  if (list.size() < at_least) return false;
  return std::all_of(list.begin(), list.end(),
                     [](const json& s) { return s["state"] == "completed"; });
}

json BlobTags(httplib::Client& client, const std::string& key) {
  JsonResponse r = Get(client, "/v1/blobs/" + key + "?tagging");
  return r.status == 200 ? r.body["tags"] : json(nullptr);
}

void AdvanceClock(httplib::Client& client, int64_t seconds) {
  Expect(Post(client, "/v1/admin/clock", {{"advance_s", seconds}}), 200,
         "POST /v1/admin/clock advance_s " + std::to_string(seconds));
}

void ArmFault(httplib::Client& client, const std::string& point, const std::string& kind,
              int count) {
  const json fault{{"point", point}, {"kind", kind}, {"count", count}};
  Expect(Post(client, "/v1/admin/faults", fault), 200,
         "POST /v1/admin/faults " + fault.dump());
}

int64_t MetricSample(httplib::Client& client, const std::string& series) {
  const std::string text = Get(client, "/metrics").raw;
  const size_t at = text.find("\n" + series + " ");
  return at == std::string::npos ? 0 : std::stoll(text.substr(at + series.size() + 2));
}

int64_t SnapshotWorkerFailures(httplib::Client& client) {
  return MetricSample(client, R"(sheetlog_function_failures{mapping="snapshot-worker"})");
}

int64_t TakeSnapshot(httplib::Client& client, const std::string& sheet) {
  JsonResponse r = Post(client, "/v1/sheets/" + sheet + "/snapshots", json::object());
  if (!Expect(r, 201, "POST /v1/sheets/" + sheet + "/snapshots")) return -1;
  return r.body.value("seq", int64_t{-1});
}

PipelineWatch::PipelineWatch(const ServerProcess& server) {
  if (!server.options().tls_ca_file.empty()) return;
  const std::string& token = server.options().token;
  stream_ = std::make_unique<SseClient>(
      server.port(), "/v1/admin/events",
      token.empty() ? "" : "Authorization: Bearer " + token + "\r\n");
  // Wait for the head: the server subscribes the stream as it answers. An event published
  // while it does may be missed; the backoff still checks again.
  stream_->ReadUntil(
      [&](const std::vector<SseEvent>&) { return stream_->status() != 0; });
}

::testing::AssertionResult PipelineWatch::Until(
    const std::function<bool()>& condition, const std::function<std::string()>& last_seen,
    int real_seconds) {
  return Eventually(condition, last_seen, real_seconds,
                    [&](std::chrono::milliseconds backoff) {
                      // A stream that is gone (or never came) has no news: only the
                      // backoff is left.
                      if (stream_ == nullptr || !stream_->connected() ||
                          stream_->closed() || stream_->status() != 200) {
                        std::this_thread::sleep_for(backoff);
                        return;
                      }
                      stream_->ReadSome(backoff);
                    });
}

::testing::AssertionResult WaitForSnapshots(const ServerProcess& server,
                                            httplib::Client& client,
                                            const std::string& sheet,
                                            const SnapshotWait& wait) {
  return WaitForSnapshotState(server, client, sheet, wait, [&] {
    return AllSnapshotsComplete(client, sheet, wait.at_least);
  });
}

::testing::AssertionResult WaitForSnapshot(const ServerProcess& server,
                                           httplib::Client& client,
                                           const std::string& sheet, int64_t seq,
                                           const SnapshotWait& wait) {
  return WaitForSnapshotState(server, client, sheet, wait, [&] {
    JsonResponse r = Get(client, "/v1/sheets/" + sheet + "/snapshots");
    for (const json& s : r.body.value("snapshots", json::array())) {
      if (s.value("seq", int64_t{-1}) == seq) return s.value("state", "") == "completed";
    }
    return false;
  });
}

}  // namespace sheetlog::testing
