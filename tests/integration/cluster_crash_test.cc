// The multi-node crash test (docs/cluster.md). Three `sheetlog serve` nodes on one
// PostgreSQL database and one S3 bucket (tests/support/test_cluster.h) take, through all
// three at once, contended appends to one sheet (with and without expect_seq), uploads
// (presigned PUT straight to the store, complete on another node), CSV imports and the
// snapshot builds they cause (snapshot_every is small), while a random node is killed
// with SIGKILL and started again on the same data directory, store and bucket, round
// after round. After each round, with no operator action (no reprocess, redrive or
// replay):
//   - every acknowledged append is present exactly once, at the seq it was given; seq
//     has no gaps; an append without an answer is wholly present or absent; one refused
//     (409, expect_seq) is absent;
//   - every acknowledged upload reads back byte for byte, every acknowledged import's
//     cells are there; an upload without an answer is wholly present or absent;
//   - every Snapshot entry completes, and none that was due is missing;
//   - nothing is dead-lettered;
//   - `sheetlog verify` passes.
// Real time throughout (each node's own clock, as in production): waits are bounded by
// the pipeline's own timeouts, never fixed sleeps.
//
// The seed (printed) picks when and which node dies; SHEETLOG_CLUSTER_CRASH_SEED=<n>
// replays one (the clients' interleaving is the machine's).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_cluster.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

constexpr int kNodes = 3;
constexpr int kRounds = 3;
constexpr int kAppenders = 6;  // two per node; odd ones send expect_seq
constexpr int kUploaders = 3;  // one per node; attachments and imports in turn
constexpr int kSnapshotEvery = 10;
// How long the cluster may take to finish a dead node's work by itself, with the
// production timeouts (docs/cluster.md). The killed node restarts on the same data
// directory, so its restart releases its predecessor's lease at once, and with it the
// snapshot messages it held (QueueService::ReleaseReceivedBy) and the builds it left
// Active (their claimant's lease is gone: src/snapshot/worker.h); its change-feed
// shards are taken when its restart takes its lease. The bound still allows for what
// happens if those releases are missed: a message's visibility timeout (60 s,
// src/app/app.cc), a build's stale timeout (60 s after its last checkpoint), a lease
// (30 s) plus a claim round (10 s); plus a margin for ASan on two cores. A bound on a
// hang, not a measurement: the wait ends as soon as it holds.
constexpr int kRecoverySeconds = 60 + 60 + 30 + 60;

// What the clients sent and what they were told, shared by their threads.
struct Ledger {
  struct Upload {
    bool import = false;
    std::string key;             // the key the upload was created with
    std::string payload;         // what was PUT to its URL
    int64_t row = 0;             // an import's row (its CSV writes A:C of it)
    std::optional<int64_t> seq;  // set once complete answered 201
  };

  std::mutex mu;
  std::condition_variable changed;
  std::set<std::string> attempted;        // every append marker sent
  std::map<std::string, int64_t> acked;   // marker -> seq answered 201
  std::set<std::string> refused;          // markers answered 409
  std::map<std::string, Upload> uploads;  // upload_id -> what was sent
  std::vector<std::string> unexpected;    // answers no healthy cluster gives
  int64_t unanswered = 0;                 // requests cut off (a node died)
  std::vector<std::string> unavailable;   // 503 answers (safe to retry)

  // Records a write `what` sent to `node` that got no acknowledgement: cut off (the
  // node died), 503 (safe to retry), or an answer no healthy cluster gives.
  // REQUIRES: mu held.
  void NotDone(const std::string& what, int node, const JsonResponse& answer) {
    if (answer.status == -1) {
      ++unanswered;
    } else if (answer.status == 503) {
      unavailable.push_back(answer.body.is_object() && answer.body.contains("error")
                                ? answer.body["error"].value("message", answer.raw)
                                : answer.raw);
    } else {
      unexpected.push_back(what + " on node " + std::to_string(node) + ": " +
                           std::to_string(answer.status) + " " + answer.raw);
    }
  }
  void Unexpected(const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    unexpected.push_back(what);
  }
};

// The nodes' ports as the clients see them: 0 while a node is down. The clients
// connect by port, so a restarted node (on a new port) is found again.
class Ports {
 public:
  void Set(int node, int port) { ports_[node].store(port); }
  int Get(int node) const { return ports_[node].load(); }
  // The first node from `preferred` on that is up (a load balancer's choice); -1 if none.
  int Pick(int preferred) const {
    for (int k = 0; k < kNodes; ++k) {
      const int node = (preferred + k) % kNodes;
      if (Get(node) != 0) return node;
    }
    return -1;
  }

 private:
  std::atomic<int> ports_[kNodes] = {};
};

httplib::Client NodeClient(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(2);
  client.set_read_timeout(60);
  client.set_write_timeout(60);
  return client;
}

JsonResponse NoAnswer() {
  JsonResponse none;
  none.status = -1;
  return none;
}

// A request on the node the client prefers, or the next one up. Returns the answer
// (status -1: no answer, the node died or was down) and the node asked.
JsonResponse OnNode(const Ports& ports, int preferred, const std::string& method,
                    const std::string& path, const json& body, int* asked = nullptr) {
  const int node = ports.Pick(preferred);
  if (asked != nullptr) *asked = node;
  const int port = node < 0 ? 0 : ports.Get(node);
  if (port == 0) return NoAnswer();  // none up, or it went down just now
  httplib::Client client = NodeClient(port);
  return Request(client, method, path, body.is_null() ? "" : body.dump());
}

// Appender `c`: Note entries with a unique marker, to its node (c % kNodes) or the next
// one up, until `stop`. With `expect`, each names the seq it expects (the next seq the
// last answer gave) and a 409 is a refusal: nothing was written.
void Appender(int c, bool expect, const std::string& sheet, const Ports& ports,
              const std::atomic<bool>& stop, Ledger& ledger, int round) {
  int64_t expected_seq = 1;
  for (int i = 0; !stop.load(); ++i) {
    const std::string marker =
        "a" + std::to_string(round) + "." + std::to_string(c) + "." + std::to_string(i);
    json entry{{"type", "Note"}, {"body", {{"m", marker}}}};
    if (expect) entry["expect_seq"] = expected_seq;
    {
      std::lock_guard<std::mutex> lock(ledger.mu);
      ledger.attempted.insert(marker);
    }
    int node = -1;
    JsonResponse r = OnNode(ports, c % kNodes, "POST", "/v1/sheets/" + sheet + "/entries",
                            entry, &node);
    std::lock_guard<std::mutex> lock(ledger.mu);
    if (r.status == 201) {
      const int64_t seq = r.body.value("seq", int64_t{-1});
      ledger.acked[marker] = seq;
      if (expect && seq != expected_seq) {
        ledger.unexpected.push_back(marker + " sent with expect_seq " +
                                    std::to_string(expected_seq) + " was written at " +
                                    std::to_string(seq));
      }
      expected_seq = r.body.value("next_seq", seq + 1);
      ledger.changed.notify_all();
    } else if (r.status == 409 && expect) {
      ledger.refused.insert(marker);
      expected_seq = r.body["error"].value("next_seq", expected_seq);
    } else {
      ledger.NotDone("append " + marker, node, r);
    }
  }
}

// An attachment's payload: its marker over and over, 10-60 KB.
std::string AttachmentPayload(const std::string& marker, size_t size) {
  std::string payload;
  while (payload.size() < size) payload += marker + "|";
  payload.resize(size);
  return payload;
}

// Uploader `u`: attachments and CSV imports in turn, each created on one node, its
// payload PUT to the store's presigned URL, and completed on the next node (again on
// the one after if that one gave no answer: complete is idempotent), until `stop`.
// Import k writes row `row` (A: its marker, B: the row, C: TRUE), a row of its own.
void Uploader(int u, const std::string& sheet, const Ports& ports,
              const std::atomic<bool>& stop, std::atomic<int64_t>& next_row,
              Ledger& ledger, int round) {
  for (int i = 0; !stop.load(); ++i) {
    const std::string marker =
        "u" + std::to_string(round) + "." + std::to_string(u) + "." + std::to_string(i);
    const bool import = i % 2 == 1;
    Ledger::Upload upload;
    upload.import = import;
    json create;
    if (import) {
      upload.row = next_row.fetch_add(1);
      upload.payload = "\"" + marker + "\"," + std::to_string(upload.row) + ",TRUE\r\n";
      create = {{"type", "Import"},
                {"body",
                 {{"format", "csv"},
                  {"at", "A" + std::to_string(upload.row)},
                  {"mode", "merge"}}}};
    } else {
      upload.payload = AttachmentPayload(marker, 10000 + 10000 * (i % 6));
      create = {{"type", "Attachment"}, {"body", {{"m", marker}}}};
    }
    const int first = (u + i) % kNodes;
    int node = -1;
    JsonResponse created =
        OnNode(ports, first, "POST", "/v1/sheets/" + sheet + "/uploads", create, &node);
    if (created.status != 201) {
      std::lock_guard<std::mutex> lock(ledger.mu);
      ledger.NotDone("create upload " + marker, node, created);
      continue;
    }
    const std::string upload_id = created.body.value("upload_id", "");
    upload.key = created.body.value("key", "");
    {
      std::lock_guard<std::mutex> lock(ledger.mu);
      ledger.uploads[upload_id] = upload;
    }
    // Straight to the store (an absolute URL: no node is involved).
    httplib::Client creator = NodeClient(ports.Get(node));
    JsonResponse put =
        RequestUrl(creator, "PUT", created.body.value("url", ""), upload.payload);
    if (put.status != 200) {
      ledger.Unexpected("PUT of " + marker +
                        " to the store: " + std::to_string(put.status) + " " + put.raw);
      continue;
    }
    const std::string complete =
        "/v1/sheets/" + sheet + "/uploads/" + upload_id + "/complete";
    JsonResponse done = NoAnswer();
    for (int attempt = 1; attempt <= 2 && done.status == -1; ++attempt) {
      done = OnNode(ports, first + attempt, "POST", complete, json::object(), &node);
    }
    std::lock_guard<std::mutex> lock(ledger.mu);
    if (done.status == 201) {
      ledger.uploads[upload_id].seq = done.body.value("seq", int64_t{-1});
    } else {
      ledger.NotDone("complete " + marker, node, done);
    }
  }
}

// The upload an entry carries (its external key names the upload), or "".
std::string UploadOf(const json& entry,
                     const std::map<std::string, Ledger::Upload>& all) {
  if (!entry["external"].is_object()) return "";
  const std::string key = entry["external"].value("key", "");
  const size_t slash = key.find_last_of('/');
  const std::string last = slash == std::string::npos ? key : key.substr(slash + 1);
  if (all.count(last)) return last;
  for (const auto& [id, upload] : all) {
    if (upload.key == key) return id;
  }
  return "";
}

class ClusterCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = TestClusterUnavailableReason();
    if (!why.empty()) GTEST_SKIP() << why;
  }

  void TearDown() override {
    if (!HasFailure() || cluster_ == nullptr) return;
    for (int node = 0; node < kNodes; ++node) {
      std::printf("--- node %d's log:\n%s\n", node, cluster_->node(node).Log().c_str());
    }
  }

  // A client of a node that is up (the first from `preferred`).
  httplib::Client Client(int preferred = 0) {
    const int node = ports_.Pick(preferred);
    return NodeClient(node < 0 ? 1 : ports_.Get(node));
  }

  // What the pipeline looks like from `client`'s node: the sheet's snapshots by state
  // and those not completed, the queues, the change feed, the jobs.
  std::string Diagnostics(httplib::Client& client) {
    std::map<std::string, int> states;
    json unfinished = json::array();
    JsonResponse list = Get(client, "/v1/sheets/" + sheet_ + "/snapshots");
    for (const json& s : list.body.value("snapshots", json::array())) {
      ++states[s.value("state", "?")];
      if (s.value("state", "") != "completed") {
        unfinished.push_back(
            {{"seq", s["seq"]}, {"state", s["state"]}, {"pending", s["pending"]}});
      }
    }
    return "snapshots by state: " + json(states).dump() +
           "\nnot completed: " + unfinished.dump() +
           "\npending snapshots: " + Get(client, "/v1/admin/pending-snapshots").raw +
           "\nqueues: " + Get(client, "/v1/admin/queues").raw +
           "\nfeed: " + Get(client, "/v1/admin/feed").raw +
           "\nfailed jobs: " + Get(client, "/v1/admin/jobs?status=failed").raw +
           "\nabandoned jobs: " + Get(client, "/v1/admin/jobs?status=abandoned").raw;
  }

  void RunRound(int round, std::mt19937& rng);
  void CheckLog(int round, std::mt19937& rng);
  void CheckPipeline(int round, std::mt19937& rng);

  TempDir scratch_;  // the command line's output
  std::unique_ptr<TestCluster> cluster_;
  Ports ports_;
  std::string sheet_;
  Ledger ledger_;
  std::atomic<int64_t> next_import_row_{1};
};

// One round: the workload through every node; after a random number of acknowledged
// appends a random node is killed; the others keep serving (a few more appends are
// acknowledged); the dead node starts again and serves too; the workload stops.
void ClusterCrashTest::RunRound(int round, std::mt19937& rng) {
  const int64_t kill_after = std::uniform_int_distribution<int64_t>(20, 150)(rng);
  const int victim = std::uniform_int_distribution<int>(0, kNodes - 1)(rng);
  std::printf("round %d: node %d is killed after %lld more acknowledged appends\n", round,
              victim, static_cast<long long>(kill_after));
  std::fflush(stdout);

  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < kAppenders; ++c) {
    clients.emplace_back(Appender, c, c % 2 == 1, sheet_, std::cref(ports_),
                         std::cref(stop), std::ref(ledger_), round);
  }
  for (int u = 0; u < kUploaders; ++u) {
    clients.emplace_back(Uploader, u, sheet_, std::cref(ports_), std::cref(stop),
                         std::ref(next_import_row_), std::ref(ledger_), round);
  }
  // Waits until `more` appends beyond those acknowledged now are acknowledged
  // (bounded: clients that stall end it, and the round fails).
  auto await_appends = [&](int64_t more, const char* when) {
    std::unique_lock<std::mutex> lock(ledger_.mu);
    const int64_t target = static_cast<int64_t>(ledger_.acked.size()) + more;
    const bool reached = ledger_.changed.wait_for(lock, std::chrono::seconds(120), [&] {
      return static_cast<int64_t>(ledger_.acked.size()) >= target;
    });
    EXPECT_TRUE(reached) << "only " << ledger_.acked.size() << " of " << target
                         << " appends acknowledged " << when;
    return reached;
  };
  bool ok = await_appends(kill_after, "before the kill");
  // Taken out of the clients' choice first (as a load balancer's health check would):
  // those with a request on it in flight lose their answer.
  ports_.Set(victim, 0);
  cluster_->Kill(victim);
  ok = ok && await_appends(10, "by the other nodes after the kill");
  const ::testing::AssertionResult restarted = cluster_->Restart(victim);
  if (restarted) ports_.Set(victim, cluster_->node(victim).port());
  EXPECT_TRUE(restarted);
  ok = ok && restarted && await_appends(10, "after the restart");
  stop = true;
  for (std::thread& t : clients) t.join();
  ASSERT_TRUE(ok);
}

// The log: seq 0.. without gaps; each marker and each upload at most once; every
// acknowledged append and upload at its seq; refused appends absent; uploads present
// read back whole (attachments byte for byte, imports' rows in the cells).
void ClusterCrashTest::CheckLog(int round, std::mt19937& rng) {
  const int reader = std::uniform_int_distribution<int>(0, kNodes - 1)(rng);
  httplib::Client client = Client(reader);
  std::vector<json> entries = ReadAllEntries(client, sheet_);
  ASSERT_FALSE(HasFatalFailure());
  std::lock_guard<std::mutex> lock(ledger_.mu);
  std::map<std::string, int64_t> markers;      // marker -> seq
  std::map<std::string, const json*> uploads;  // upload_id -> entry
  int64_t last_snapshot = -1;
  for (size_t i = 0; i < entries.size(); ++i) {
    const json& e = entries[i];
    ASSERT_EQ(e["seq"].get<int64_t>(), static_cast<int64_t>(i)) << "gap at " << i;
    const std::string type = e["type"];
    if (type == "Snapshot") last_snapshot = static_cast<int64_t>(i);
    if (type == "Note") {
      const std::string marker = e["body"]["m"];
      EXPECT_EQ(e["body"], json({{"m", marker}})) << "not wholly there: " << e.dump();
      EXPECT_TRUE(ledger_.attempted.count(marker)) << "entry nobody sent: " << e.dump();
      EXPECT_FALSE(ledger_.refused.count(marker))
          << "an append refused with 409 was written: " << e.dump();
      EXPECT_TRUE(markers.emplace(marker, i).second)
          << "duplicate " << marker << " at " << markers[marker] << " and " << i;
    }
    if (type == "Attachment" || type == "Import") {
      const std::string id = UploadOf(e, ledger_.uploads);
      ASSERT_FALSE(id.empty()) << "upload nobody made: " << e.dump();
      EXPECT_TRUE(uploads.emplace(id, &e).second) << "upload " << id << " twice";
    }
  }
  for (const auto& [marker, seq] : ledger_.acked) {
    auto it = markers.find(marker);
    ASSERT_NE(it, markers.end()) << "acknowledged append lost: " << marker;
    EXPECT_EQ(it->second, seq) << "acknowledged append moved: " << marker;
  }
  int64_t rows = 0;
  for (const auto& [id, upload] : ledger_.uploads) {
    rows = std::max(rows, upload.row);
    auto it = uploads.find(id);
    if (upload.seq) {
      ASSERT_NE(it, uploads.end()) << "acknowledged upload lost: " << id;
      EXPECT_EQ((*it->second)["seq"], *upload.seq) << "acknowledged upload moved: " << id;
    }
    if (it == uploads.end() || upload.import) continue;
    const json& external = (*it->second)["external"];
    EXPECT_EQ(external["size"], upload.payload.size()) << external.dump();
    JsonResponse fetched = RequestUrl(client, "GET", external.value("url", ""));
    EXPECT_EQ(fetched.status, 200) << external.dump();
    EXPECT_TRUE(fetched.raw == upload.payload)
        << "upload " << id << " reads back " << fetched.raw.size() << " bytes, not the "
        << upload.payload.size() << " sent";
  }
  // Every import row: its three cells if its entry is there, empty if not.
  if (rows > 0) {
    const std::string range = "A1:C" + std::to_string(rows);
    JsonResponse cells = Get(client, "/v1/sheets/" + sheet_ + "/cells?range=" + range);
    ASSERT_EQ(cells.status, 200) << cells.raw;
    std::map<int64_t, const Ledger::Upload*> by_row;
    std::map<int64_t, bool> present;
    for (const auto& [id, upload] : ledger_.uploads) {
      if (!upload.import) continue;
      by_row[upload.row] = &upload;
      present[upload.row] = uploads.count(id) > 0;
    }
    for (int64_t row = 1; row <= rows; ++row) {
      const json& got = cells.body["rows"][row - 1];
      json want = json::array({nullptr, nullptr, nullptr});
      if (present[row]) {
        const std::string payload = by_row[row]->payload;
        want = json::array({payload.substr(1, payload.find('"', 1) - 1), row, true});
      }
      EXPECT_EQ(got, want) << "import row " << row;
    }
  }
  // Every node reads the same head: the log is the shared database's, whichever node
  // wrote each entry.
  for (int node = 0; node < kNodes; ++node) {
    httplib::Client on_node = NodeClient(ports_.Get(node));
    JsonResponse info = Get(on_node, "/v1/sheets/" + sheet_);
    EXPECT_EQ(info.body.value("next_seq", int64_t{-1}),
              static_cast<int64_t>(entries.size()))
        << "node " << node << ": " << info.raw;
  }
  // The snapshot policy held: the last append (made after the workload) added the
  // Snapshot entry that was due.
  EXPECT_LT(static_cast<int64_t>(entries.size()) - 1 - last_snapshot, kSnapshotEvery)
      << "entries after the last Snapshot entry (seq " << last_snapshot << ")";
  std::printf(
      "round %d: %zu entries; %zu appends acknowledged, %zu refused (409), %zu "
      "attempted; %zu uploads made, %zu present; %lld requests unanswered, %zu "
      "answered 503\n",
      round, entries.size(), ledger_.acked.size(), ledger_.refused.size(),
      ledger_.attempted.size(), ledger_.uploads.size(), uploads.size(),
      static_cast<long long>(ledger_.unanswered), ledger_.unavailable.size());
  for (const std::string& message : ledger_.unavailable) {
    std::printf("  503: %s\n", message.c_str());
  }
  ledger_.unavailable.clear();
  std::fflush(stdout);
}

// The pipeline finishes by itself: every Snapshot entry completed, nothing
// dead-lettered, verify (the API until the change feed's untags are done, then the
// command line against another node) clean.
void ClusterCrashTest::CheckPipeline(int round, std::mt19937& rng) {
  const auto start = std::chrono::steady_clock::now();
  const int watcher = std::uniform_int_distribution<int>(0, kNodes - 1)(rng);
  httplib::Client client = Client(watcher);
  EXPECT_TRUE(Eventually([&] { return AllSnapshotsComplete(client, sheet_); },
                         [&] { return Diagnostics(client); }, kRecoverySeconds));
  const auto snapshots_done = std::chrono::steady_clock::now();
  const json snapshots = Snapshots(client, sheet_);
  for (const json& s : snapshots) {
    EXPECT_TRUE(s["root"].is_string()) << "a completed snapshot without its root: " << s;
  }
  for (int node = 0; node < kNodes; ++node) {
    httplib::Client on_node = NodeClient(ports_.Get(node));
    JsonResponse queues = Get(on_node, "/v1/admin/queues");
    ASSERT_EQ(queues.status, 200) << queues.raw;
    for (const json& q : queues.body["queues"]) {
      if (q["dead_letter_depth"].is_number()) {
        EXPECT_EQ(q["dead_letter_depth"], 0) << "node " << node << ": " << queues.raw;
      }
      if (q["dead_letter_queue"].is_null()) {  // a dead-letter queue itself
        EXPECT_EQ(q["visible"].get<int64_t>() + q["in_flight"].get<int64_t>() +
                      q["delayed"].get<int64_t>(),
                  0)
            << "node " << node << ": " << queues.raw;
      }
    }
  }
  JsonResponse verified;
  EXPECT_TRUE(Eventually(
      [&] {
        verified = Get(client, "/v1/admin/verify");
        return verified.status == 200 && verified.body.value("ok", false) &&
               verified.body.value("pending", json::array()).empty();
      },
      [&] { return verified.raw + "\n" + Diagnostics(client); }, kRecoverySeconds));
  const int other = (watcher + 1) % kNodes;
  const std::string out_file = scratch_.File("verify.out");
  const std::string command =
      std::string(SHEETLOG_BINARY) +
      " verify --server http://127.0.0.1:" + std::to_string(ports_.Get(other)) + " > '" +
      out_file + "'";
  const int status = std::system(command.c_str());
  std::stringstream out;
  out << std::ifstream(out_file).rdbuf();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out.str();
  EXPECT_NE(out.str().find(": 0 violations"), std::string::npos) << out.str();
  const auto ms = [](auto d) {
    return static_cast<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
  };
  std::printf(
      "round %d: %zu snapshots complete after %lld ms, verify clean after %lld ms; "
      "failed jobs: %s\n",
      round, snapshots.size(), ms(snapshots_done - start),
      ms(std::chrono::steady_clock::now() - start),
      Get(client, "/v1/admin/jobs?status=failed").raw.c_str());
  std::fflush(stdout);
}

TEST_F(ClusterCrashTest, NodesKilledAtRandomLoseNothingAndFinishTheirWork) {
  uint32_t seed = std::random_device()();
  if (const char* replay = std::getenv("SHEETLOG_CLUSTER_CRASH_SEED")) {
    seed = static_cast<uint32_t>(std::strtoul(replay, nullptr, 10));
  }
  std::printf("seed %u (replay: SHEETLOG_CLUSTER_CRASH_SEED=%u)\n", seed, seed);
  std::fflush(stdout);
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (replay: SHEETLOG_CLUSTER_CRASH_SEED=" + std::to_string(seed) + ")");
  std::mt19937 rng(seed);

  cluster_ = std::make_unique<TestCluster>(kNodes);
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(cluster_->StartAll());
  for (int node = 0; node < kNodes; ++node) ports_.Set(node, cluster_->node(node).port());
  {
    httplib::Client client = Client();
    sheet_ = CreateSheet(client, kSnapshotEvery);
    ASSERT_FALSE(HasFatalFailure());
  }
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_NO_FATAL_FAILURE(RunRound(round, rng));
    {
      std::lock_guard<std::mutex> lock(ledger_.mu);
      for (const std::string& what : ledger_.unexpected) ADD_FAILURE() << what;
      ledger_.unexpected.clear();
    }
    // One more append after the workload, to a random node: the snapshot policy
    // re-evaluates the log after a crash took a Snapshot entry's append with it.
    {
      httplib::Client client =
          Client(std::uniform_int_distribution<int>(0, kNodes - 1)(rng));
      const std::string marker = "after" + std::to_string(round);
      {
        std::lock_guard<std::mutex> lock(ledger_.mu);
        ledger_.attempted.insert(marker);
      }
      const int64_t seq = Append(client, sheet_, "Note", {{"m", marker}});
      ASSERT_FALSE(HasFatalFailure());
      std::lock_guard<std::mutex> lock(ledger_.mu);
      ledger_.acked[marker] = seq;
    }
    ASSERT_NO_FATAL_FAILURE(CheckLog(round, rng));
    ASSERT_NO_FATAL_FAILURE(CheckPipeline(round, rng));
    for (int node = 0; node < kNodes; ++node) {
      EXPECT_FALSE(cluster_->node(node).Exited()) << "node " << node << " died by itself";
    }
    if (HasFailure()) return;
  }
  // Each node shuts down cleanly (and, under ASan, reports no leak at exit).
  for (int node = 0; node < kNodes; ++node) {
    EXPECT_EQ(cluster_->node(node).Stop(), 0) << "node " << node;
  }
}

}  // namespace
}  // namespace sheetlog::testing
