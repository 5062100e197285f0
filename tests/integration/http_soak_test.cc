// A bounded randomized soak of the HTTP front end against the real binary (the sanitizer
// build under ./scripts/test): several clients for a fixed time send a random mix of
// valid requests (appends, reads, exports, HEAD, HTTP/1.0, pipelined runs), malformed
// and smuggling-shaped ones, requests cut off at a random byte and then half-closed,
// reset or abandoned, event streams and large bodies read partly and dropped, and
// uploads that stop midway. Whatever the mix, the server must stay up, answer every
// valid request it did not shed, lose no acknowledged append, and exit cleanly on
// SIGTERM with no sanitizer report (ASan aborts on its first, LeakSanitizer fails the
// exit).
//
// SHEETLOG_SOAK_SECONDS sets the duration (default 30), SHEETLOG_SOAK_SEED the seed
// (printed, so a failure can be replayed).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/raw_http.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

constexpr char kSoakToken[] = "soak-token";
constexpr int kClients = 6;

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

// What every client shares: the server's port, the sheets, and the appends the server
// acknowledged (to be found in the log at the end).
struct SoakState {
  int port = 0;
  std::string sheet;     // appended to
  std::string big;       // a sheet with a few thousand cells: long exports
  std::string blob_key;  // a 2 MiB blob: long reads
  std::mutex mu;
  std::set<int64_t> acknowledged;  // seqs of 201 appends to `sheet`
  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> failures{0};
  std::vector<std::string> failure_notes;

  void Fail(const std::string& note) {
    failures.fetch_add(1);
    std::lock_guard lock(mu);
    if (failure_notes.size() < 20) failure_notes.push_back(note);
  }
};

class SoakClient {
 public:
  SoakClient(SoakState* state, uint64_t seed) : state_(state), random_(seed) {}

  void Run(std::chrono::steady_clock::time_point deadline) {
    while (std::chrono::steady_clock::now() < deadline) {
      const int pick = Uniform(0, 99);
      if (pick < 30) {
        ValidPipelined();
      } else if (pick < 50) {
        Malformed();
      } else if (pick < 65) {
        CutOff();
      } else if (pick < 75) {
        PartialRead();
      } else if (pick < 85) {
        EventStream();
      } else {
        Upload();
      }
      state_->requests.fetch_add(1);
    }
  }

 private:
  int Uniform(int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(random_);
  }
  bool Coin() { return Uniform(0, 1) == 0; }

  std::string Auth() const {
    return std::string("Authorization: Bearer ") + kSoakToken + "\r\n";
  }

  std::string AppendRequest(const std::string& version = "1.1") {
    const std::string body = json{{"type", "SetCell"},
                                  {"body",
                                   {{"ref", "B" + std::to_string(Uniform(1, 500))},
                                    {"value", Uniform(0, 1000000)}}}}
                                 .dump();
    return "POST /v1/sheets/" + state_->sheet + "/entries HTTP/" + version +
           "\r\nHost: 127.0.0.1\r\n" + Auth() +
           "Content-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }

  // A valid request and whether it is a HEAD; for HTTP/1.0 it asks for keep-alive.
  std::pair<std::string, bool> ValidRequest(bool http10) {
    const std::string version = http10 ? "1.0" : "1.1";
    const std::string common = "Host: 127.0.0.1\r\n" + Auth() +
                               (http10 ? "Connection: keep-alive\r\n" : "") + "\r\n";
    switch (Uniform(0, 8)) {
      case 0:
        return {"GET /healthz HTTP/" + version + "\r\n" + common, false};
      case 1:
        return {"GET /v1/sheets/" + state_->sheet + " HTTP/" + version + "\r\n" + common,
                false};
      case 2:
        return {"GET /v1/sheets/" + state_->sheet + "/cells?range=A1:C30 HTTP/" +
                    version + "\r\n" + common,
                false};
      case 3:
        return {"HEAD /v1/sheets/" + state_->big + "/export?format=csv HTTP/" + version +
                    "\r\n" + common,
                true};
      case 4:
        return {"GET /v1/sheets/" + state_->big + "/export?format=csv HTTP/" + version +
                    "\r\n" + common,
                false};
      case 5:
        return {"HEAD /v1/sheets/" + state_->sheet + "/events HTTP/" + version + "\r\n" +
                    common,
                true};
      case 6:
        return {"GET /v1/sheets/" + state_->sheet + "/entries?from=start&limit=20 HTTP/" +
                    version + "\r\n" + common,
                false};
      case 7:
        return {
            "HEAD /v1/blobs/" + state_->blob_key + " HTTP/" + version + "\r\n" + common,
            true};
      default:
        return {AppendRequest(version), false};
    }
  }

  // 1-5 valid requests in one write; every response must come back in order and
  // well-framed until the server sheds the connection (503) or closes it.
  void ValidPipelined() {
    RawConnection conn(state_->port, /*read_timeout_s=*/60);
    if (!conn.ok()) return state_->Fail("connect failed");
    const bool http10 = Uniform(0, 4) == 0;
    const int count = Uniform(1, 5);
    std::string wire;
    std::vector<std::pair<std::string, bool>> sent;
    for (int i = 0; i < count; ++i) {
      sent.push_back(ValidRequest(http10));
      wire += sent.back().first;
    }
    if (!conn.Send(wire)) return;
    if (Uniform(0, 3) == 0) conn.ShutdownWrite();  // still owed every response
    for (const auto& [request, head] : sent) {
      RawResponse response = conn.ReadResponse(head);
      if (response.status == 503) return;  // shed: the connection closes
      if (response.status == 0 || !response.complete) {
        return state_->Fail("no complete response to " + request.substr(0, 60) + ": " +
                            response.head.substr(0, 80));
      }
      if (response.status >= 500 || response.status == 400) {
        return state_->Fail(std::to_string(response.status) + " for a valid request " +
                            request.substr(0, 60) + ": " + response.body.substr(0, 200));
      }
      if (head && !response.body.empty()) return state_->Fail("content after HEAD");
      if (request.rfind("POST", 0) == 0 && response.status == 201) {
        json body = json::parse(response.body, nullptr, false);
        if (!body.is_object() || !body["seq"].is_number_integer()) {
          return state_->Fail("append without seq: " + response.body);
        }
        std::lock_guard lock(state_->mu);
        state_->acknowledged.insert(body["seq"].get<int64_t>());
      }
      if (response.header("connection") == "close") return;
    }
  }

  // A malformed request, alone or after a valid one: answered with a 4xx/5xx (or the
  // connection closed), never a crash, and never answered as if it were valid.
  void Malformed() {
    static const std::vector<std::string> kMalformed = {
        "POST /v1/sheets HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: "
        "chunked\r\n\r\nzz\r\n",
        "POST /v1/sheets HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: "
        "chunked\r\n\r\n 5\r\n",
        "POST /v1/sheets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "POST /v1/sheets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
        "3\r\nContent-Length: 4"
        "\r\n\r\nabcd",
        "GET / HTTP/1.1\nHost: x\n\n",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",
        "GET / HTTP/3.0\r\nHost: 127.0.0.1\r\n\r\n",
        "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + std::string(20000, 'v') + "\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad\x01Name: v\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n folded: v\r\n\r\n",
        "POST /v1/sheets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Encoding: gzip\r\n"
        "Content-Length: 10\r\n\r\nnotgzip!!!",
        "POST /v1/sheets HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: "
        "chunked\r\n\r\n"
        "3;x=\x01\r\nabc\r\n0\r\n\r\n",
        "POST /v1/sheets HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: "
        "chunked\r\n\r\n"
        "3\r\nabc\r\n0\r\nno colon\r\n\r\n",
        "POST /v1/sheets HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: "
        "chunked\r\n\r\n"
        "ffffffffffffffffff\r\n",
        "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  // a TLS ClientHello
        "GARBAGE\r\n\r\n",
    };
    RawConnection conn(state_->port, /*read_timeout_s=*/60);
    if (!conn.ok()) return state_->Fail("connect failed");
    const bool with_valid = Coin();
    std::string wire;
    if (with_valid) wire = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    wire += kMalformed[static_cast<size_t>(
        Uniform(0, static_cast<int>(kMalformed.size()) - 1))];
    if (!conn.Send(wire)) return;
    if (Coin()) conn.ShutdownWrite();
    if (with_valid) {
      RawResponse ok = conn.ReadResponse();
      if (ok.status != 200 && ok.status != 503) {
        return state_->Fail("healthz before a malformed request: " +
                            ok.head.substr(0, 80));
      }
    }
    if (Uniform(0, 2) == 0) return conn.Reset();
    RawResponse refused = conn.ReadResponse();
    if (refused.status != 0 && refused.status < 400) {
      state_->Fail("a malformed request got " + std::to_string(refused.status) + ": " +
                   wire.substr(0, 80));
    }
  }

  // A valid request cut at a random byte, then half-closed, reset or just closed.
  void CutOff() {
    RawConnection conn(state_->port, /*read_timeout_s=*/60);
    if (!conn.ok()) return state_->Fail("connect failed");
    std::string wire = Coin() ? AppendRequest() : ValidRequest(false).first;
    wire = wire.substr(0, static_cast<size_t>(Uniform(0, static_cast<int>(wire.size()))));
    if (!conn.Send(wire)) return;
    switch (Uniform(0, 2)) {
      case 0:
        conn.ShutdownWrite();
        conn.ReadToEnd();  // whatever it says, the server must end the connection
        return;
      case 1:
        return conn.Reset();
      default:
        return;  // closed by the destructor
    }
  }

  // A large body read partly, then dropped (reset or closed).
  void PartialRead() {
    RawConnection conn(state_->port, /*read_timeout_s=*/60);
    if (!conn.ok()) return state_->Fail("connect failed");
    const std::string target = Coin()
                                   ? "/v1/blobs/" + state_->blob_key
                                   : "/v1/sheets/" + state_->big + "/export?format=csv";
    if (!conn.Send("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + Auth() +
                   "\r\n"))
      return;
    const size_t want = static_cast<size_t>(Uniform(0, 256 << 10));
    while (conn.buffered().size() < want && conn.ReadMore()) {
    }
    if (Coin()) return conn.Reset();
  }

  // An event stream read to its first bytes, then half-closed or reset.
  void EventStream() {
    RawConnection conn(state_->port, /*read_timeout_s=*/60);
    if (!conn.ok()) return state_->Fail("connect failed");
    const std::string version = Uniform(0, 3) == 0 ? "1.0" : "1.1";
    if (!conn.Send("GET /v1/sheets/" + state_->sheet + "/events?from=1 HTTP/" + version +
                   "\r\nHost: 127.0.0.1\r\n" + Auth() + "\r\n")) {
      return;
    }
    if (Coin()) conn.ReadMore();
    if (Coin()) {
      conn.ShutdownWrite();
      return;
    }
    conn.Reset();
  }

  // A blob upload, chunked or not, that completes or stops midway.
  void Upload() {
    RawConnection conn(state_->port, /*read_timeout_s=*/60);
    if (!conn.ok()) return state_->Fail("connect failed");
    const std::string key = "soak/" + std::to_string(Uniform(0, 20));
    const std::string body(static_cast<size_t>(Uniform(1, 200000)), 'u');
    const bool chunked = Coin();
    std::string wire =
        "PUT /v1/blobs/" + key + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + Auth();
    if (chunked) {
      wire += "Transfer-Encoding: chunked\r\n\r\n";
      for (size_t at = 0; at < body.size(); at += 65536) {
        const std::string piece = body.substr(at, 65536);
        char size[32];
        std::snprintf(size, sizeof(size), "%zx\r\n", piece.size());
        wire += size + piece + "\r\n";
      }
      wire += "0\r\n\r\n";
    } else {
      wire += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    }
    const bool complete = Uniform(0, 2) != 0;
    if (!complete) {
      wire.resize(static_cast<size_t>(Uniform(0, static_cast<int>(wire.size()) - 1)));
    }
    if (!conn.Send(wire)) return;
    if (!complete) return Coin() ? conn.Reset() : conn.ShutdownWrite();
    RawResponse response = conn.ReadResponse();
    if (response.status != 200 && response.status != 503) {
      state_->Fail("upload of " + std::to_string(body.size()) + " bytes got " +
                   std::to_string(response.status) + ": " + response.body.substr(0, 200));
    }
  }

  SoakState* state_;
  std::mt19937_64 random_;
};

TEST(HttpSoakTest, MixedHostileTrafficLeavesTheServerUpCleanAndLossless) {
  const int seconds = EnvInt("SHEETLOG_SOAK_SECONDS", 30);
  const uint64_t seed = static_cast<uint64_t>(EnvInt(
      "SHEETLOG_SOAK_SEED", static_cast<int>(std::random_device{}() & 0x7fffffff)));
  std::cout << "soak: " << seconds << " s, SHEETLOG_SOAK_SEED=" << seed << std::endl;

  TempDir dir;
  ServerOptions options(dir.path(),
                        {"--threads", "8", "--max-request", "65536", "--header-timeout",
                         "2", "--body-timeout", "2", "--idle-timeout", "5"},
                        kSoakToken);
  options.env.push_back(
      {"ASAN_OPTIONS", "abort_on_error=1:detect_leaks=1:quarantine_size_mb=64"});
  ServerProcess server(options);
  ASSERT_TRUE(server.Start()) << server.error();
  httplib::Client client = server.Client();

  SoakState state;
  state.port = server.port();
  JsonResponse sheet = Post(client, "/v1/sheets", {{"name", "soak"}});
  ASSERT_EQ(sheet.status, 201) << sheet.raw;
  state.sheet = sheet.body["id"];
  JsonResponse big = Post(client, "/v1/sheets", {{"name", "big"}});
  ASSERT_EQ(big.status, 201) << big.raw;
  state.big = big.body["id"];
  for (int part = 0; part < 4; ++part) {
    json cells = json::object();
    for (int row = part * 100 + 1; row <= part * 100 + 100; ++row) {
      for (const char* column : {"A", "B", "C", "D", "E"}) {
        cells[column + std::to_string(row)] = {{"value", "cell " + std::to_string(row)}};
      }
    }
    JsonResponse filled = Post(client, "/v1/sheets/" + state.big + "/entries",
                               {{"type", "SetCells"}, {"body", {{"cells", cells}}}});
    ASSERT_EQ(filled.status, 201) << filled.raw;
  }
  state.blob_key = "soak/big";
  JsonResponse blob =
      Request(client, "PUT", "/v1/blobs/" + state.blob_key, std::string(2 << 20, 'b'));
  ASSERT_EQ(blob.status, 200) << blob.raw;

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&state, seed, i, deadline] {
      SoakClient(&state, seed * 1000 + static_cast<uint64_t>(i)).Run(deadline);
    });
  }
  for (std::thread& t : clients) t.join();
  std::cout << "soak: " << state.requests.load() << " client actions, "
            << state.acknowledged.size() << " acknowledged appends" << std::endl;

  ASSERT_FALSE(server.Exited()) << "the server died:\n" << server.Log();
  EXPECT_EQ(state.failures.load(), 0) << [&] {
    std::string notes;
    for (const std::string& note : state.failure_notes) notes += note + "\n";
    return notes;
  }();
  // Every acknowledged append is in the log, once.
  std::set<int64_t> logged;
  std::string after = "start";
  while (true) {
    JsonResponse page =
        Get(client, "/v1/sheets/" + state.sheet + "/entries?limit=1000&from=" + after);
    ASSERT_EQ(page.status, 200) << page.raw;
    for (const json& entry : page.body["entries"]) {
      EXPECT_TRUE(logged.insert(entry["seq"].get<int64_t>()).second);
    }
    if (page.body["complete"] == true) break;
    after = std::to_string(page.body["next"].get<int64_t>());
  }
  for (int64_t seq : state.acknowledged) {
    EXPECT_TRUE(logged.count(seq)) << "acknowledged append " << seq << " is missing";
  }
  JsonResponse verify = Post(client, "/v1/admin/verify", json::object());
  EXPECT_EQ(verify.status, 200) << verify.raw;
  EXPECT_EQ(verify.body["ok"], true) << verify.raw;

  const int status = server.Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "exit status " << status << "\n"
      << server.Log().substr(0, 20000);
  const std::string log = server.Log();
  for (const char* report : {"AddressSanitizer", "LeakSanitizer", "runtime error:"}) {
    EXPECT_EQ(log.find(report), std::string::npos) << log.substr(log.find(report), 4000);
  }
}

}  // namespace
}  // namespace sheetlog::testing
