// The event log over real HTTP against the real binary (api.md "Sheets" and "Entries").
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class EntriesHttpTest : public ApiTest {
 protected:
  void SetUp() override { StartServer(ServerOptions(dir_.path())); }
};

TEST_F(EntriesHttpTest, SixteenClientsAppendEightThousandEntriesWithoutGaps) {
  const std::string sheet = CreateSheet(*client_);
  constexpr int kClients = 16, kPerClient = 500;
  std::mutex mu;
  std::map<int64_t, std::string> acknowledged;  // seq -> body marker
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client = server_->Client();
      for (int i = 0; i < kPerClient; ++i) {
        std::string marker = std::to_string(c) + ":" + std::to_string(i);
        JsonResponse r = Post(client, "/v1/sheets/" + sheet + "/entries",
                              {{"type", "Note"}, {"body", {{"m", marker}}}});
        if (r.status != 201) {
          ++failures;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        acknowledged[r.body["seq"].get<int64_t>()] = marker;
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_EQ(acknowledged.size(), static_cast<size_t>(kClients * kPerClient));

  std::vector<json> entries = ReadAllEntries(*client_, sheet, 777);
  ASSERT_EQ(entries.size(), 1u + kClients * kPerClient);
  for (size_t i = 0; i < entries.size(); ++i) {
    ASSERT_EQ(entries[i]["seq"].get<int64_t>(), static_cast<int64_t>(i));
  }
  for (const auto& [seq, marker] : acknowledged) {
    EXPECT_EQ(entries[seq]["body"]["m"], marker) << "seq " << seq;
  }
}

TEST_F(EntriesHttpTest, TwoSheetsWrittenConcurrentlyDoNotInterfere) {
  const std::string a = CreateSheet(*client_);
  const std::string b = CreateSheet(*client_);
  constexpr int kPerSheet = 300;
  auto writer = [&](const std::string& sheet, const std::string& tag) {
    httplib::Client client = server_->Client();
    for (int i = 0; i < kPerSheet; ++i) {
      JsonResponse r = Post(client, "/v1/sheets/" + sheet + "/entries",
                            {{"type", "Note"}, {"body", tag + std::to_string(i)}});
      ASSERT_EQ(r.status, 201) << r.raw;
      ASSERT_EQ(r.body["seq"].get<int64_t>(), i + 1);  // each sheet has its own sequence
    }
  };
  std::thread ta(writer, a, "a"), tb(writer, b, "b");
  ta.join();
  tb.join();
  for (const auto& [sheet, tag] : {std::pair{a, "a"}, std::pair{b, "b"}}) {
    std::vector<json> entries = ReadAllEntries(*client_, sheet);
    ASSERT_EQ(entries.size(), static_cast<size_t>(kPerSheet + 1));
    for (int i = 1; i <= kPerSheet; ++i) {
      EXPECT_EQ(entries[i]["body"], std::string(tag) + std::to_string(i - 1));
    }
  }
}

TEST_F(EntriesHttpTest, ExpectSeqRaceHasExactlyOneWinner) {
  const std::string sheet = CreateSheet(*client_);
  for (int round = 0; round < 5; ++round) {
    const int64_t expected = 1 + round;
    constexpr int kClients = 12;
    std::atomic<int> winners{0}, conflicts{0}, other{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < kClients; ++c) {
      threads.emplace_back([&, c] {
        httplib::Client client = server_->Client();
        JsonResponse r = Post(client, "/v1/sheets/" + sheet + "/entries",
                              {{"type", "Note"}, {"body", c}, {"expect_seq", expected}});
        if (r.status == 201 && r.body["seq"] == expected) {
          ++winners;
        } else if (r.status == 409 && r.body["error"]["code"] == "ConflictError" &&
                   r.body["error"]["next_seq"] == expected + 1) {
          ++conflicts;
        } else {
          ++other;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(winners.load(), 1);
    EXPECT_EQ(conflicts.load(), kClients - 1);
    EXPECT_EQ(other.load(), 0);
  }
  EXPECT_EQ(ReadAllEntries(*client_, sheet).size(), 6u);
}

TEST_F(EntriesHttpTest, ReportsRequestUnits) {
  const std::string sheet = CreateSheet(*client_, json::object());
  httplib::Client client = server_->Client();
  JsonResponse r =
      Post(client, "/v1/sheets/" + sheet + "/entries", {{"type", "Note"}, {"body", "x"}});
  ASSERT_EQ(r.status, 201);
  auto it = r.headers.find("X-Request-Units");
  ASSERT_NE(it, r.headers.end());
  EXPECT_EQ(it->second.rfind("wru=", 0), 0u) << it->second;
  EXPECT_NE(it->second.find("wru=1"), std::string::npos) << it->second;  // 1 small item
}

// --- Bad input: each gets api.md's status and code and changes nothing. ---

struct BadRequest {
  std::string name;
  std::string method;
  std::string path;  // {sheet} is replaced
  std::string body;
  int status;
  std::string code;
};

TEST_F(EntriesHttpTest, BadInputIsRefusedAndChangesNothing) {
  // Snapshots never complete here, so "segment before snapshot" is a certain 409 and
  // not a race with the snapshot worker.
  server_->Stop();
  ASSERT_NO_FATAL_FAILURE(StartServer(ServerOptions(dir_.path(), {"--enable-faults"})));
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "snapshot.before_complete", "error", -1));
  const std::string sheet = CreateSheet(*client_);
  httplib::Client client = server_->Client();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(
        Post(client, "/v1/sheets/" + sheet + "/entries", {{"type", "Note"}, {"body", i}})
            .status,
        201);
  }
  const std::string entries = "/v1/sheets/{sheet}/entries";
  const std::string big_body = std::string(1100000, 'x');
  std::vector<BadRequest> cases = {
      {"malformed JSON", "POST", entries, "{\"type\": ", 400, "ValidationError"},
      {"not an object", "POST", entries, "[1,2]", 400, "ValidationError"},
      {"type missing", "POST", entries, R"({"body": 1})", 400, "ValidationError"},
      {"type wrong type", "POST", entries, R"({"type": 5, "body": 1})", 400,
       "ValidationError"},
      {"unknown field", "POST", entries, R"({"type": "Note", "bdy": 1})", 400,
       "ValidationError"},
      {"version not integer", "POST", entries, R"({"type": "Note", "version": "1"})", 400,
       "ValidationError"},
      {"version fraction", "POST", entries, R"({"type": "Note", "version": 1.5})", 400,
       "ValidationError"},
      {"reserved Snapshot", "POST", entries, R"({"type": "Snapshot"})", 400,
       "ValidationError"},
      {"reserved EndSegment", "POST", entries, R"({"type": "EndSegment"})", 400,
       "ValidationError"},
      {"expect_seq negative", "POST", entries, R"({"type": "Note", "expect_seq": -1})",
       400, "RangeError"},
      {"expect_seq huge", "POST", entries,
       R"({"type": "Note", "expect_seq": 99999999999999999999})", 400, "ValidationError"},
      {"expect_seq stale", "POST", entries, R"({"type": "Note", "expect_seq": 2})", 409,
       "ConflictError"},
      {"body over the request limit", "POST", entries,
       "{\"type\": \"Note\", \"body\": \"" + big_body + "\"}", 413, "PayloadTooLarge"},
      {"unknown sheet", "POST", "/v1/sheets/00000000-0000-0000-0000-000000000000/entries",
       R"({"type": "Note"})", 404, "NotFound"},
      {"not a uuid", "POST", "/v1/sheets/nope/entries", R"({"type": "Note"})", 404,
       "NotFound"},
      {"from negative", "GET", entries + "?from=-1", "", 400, "RangeError"},
      {"from beyond head", "GET", entries + "?from=99", "", 400, "RangeError"},
      {"from not a number", "GET", entries + "?from=abc", "", 400, "ValidationError"},
      {"from huge", "GET", entries + "?from=99999999999999999999", "", 400,
       "ValidationError"},
      {"limit zero", "GET", entries + "?limit=0", "", 400, "ValidationError"},
      {"limit too big", "GET", entries + "?limit=1001", "", 400, "ValidationError"},
      {"entry beyond head", "GET", entries + "/50", "", 404, "NotFound"},
      {"sheet create unknown field", "POST", "/v1/sheets", R"({"nmae": "x"})", 400,
       "ValidationError"},
      {"sheet create wrong type", "POST", "/v1/sheets", R"({"snapshot_every": "5"})", 400,
       "ValidationError"},
      {"segment before snapshot", "POST", "/v1/sheets/{sheet}/segments", "{}", 409,
       "ConflictError"},
  };
  std::vector<json> before = ReadAllEntries(*client_, sheet);
  JsonResponse sheets_before = Get(client, "/v1/sheets?limit=1000");
  for (const BadRequest& c : cases) {
    std::string path = c.path;
    size_t at = path.find("{sheet}");
    if (at != std::string::npos) path.replace(at, 7, sheet);
    JsonResponse r = Request(client, c.method, path, c.body);
    EXPECT_EQ(r.status, c.status) << c.name << ": " << r.raw.substr(0, 300);
    EXPECT_EQ(r.body["error"]["code"], c.code) << c.name << ": " << r.raw.substr(0, 300);
    EXPECT_TRUE(r.body["error"]["message"].is_string()) << c.name;
    EXPECT_FALSE(r.body["error"]["message"].get<std::string>().empty()) << c.name;
  }
  EXPECT_EQ(ReadAllEntries(*client_, sheet), before);
  EXPECT_EQ(Get(client, "/v1/sheets?limit=1000").body, sheets_before.body);
}

TEST_F(EntriesHttpTest, ConflictCarriesNextSeqAndTooLargeCarriesLimit) {
  const std::string sheet = CreateSheet(*client_, json::object());
  httplib::Client client = server_->Client();
  JsonResponse conflict = Post(client, "/v1/sheets/" + sheet + "/entries",
                               {{"type", "Note"}, {"expect_seq", 7}});
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(conflict.body["error"]["next_seq"], 1);
  JsonResponse big = Request(client, "POST", "/v1/sheets/" + sheet + "/entries",
                             std::string(2 << 20, ' '));
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(big.body["error"]["limit"], 1 << 20);
}

TEST_F(EntriesHttpTest, SheetLifecycleOverHttp) {
  httplib::Client client = server_->Client();
  const std::string sheet = CreateSheet(*client_, json{{"name", "budget"}});
  JsonResponse info = Get(client, "/v1/sheets/" + sheet);
  ASSERT_EQ(info.status, 200) << info.raw;
  EXPECT_EQ(info.body["name"], "budget");
  EXPECT_EQ(info.body["next_seq"], 1);
  EXPECT_EQ(info.body["first_seq"], 0);
  ASSERT_EQ(info.body["segments"].size(), 1u);
  EXPECT_TRUE(info.body["last_snapshot"].is_null());

  JsonResponse one = Get(client, "/v1/sheets/" + sheet + "/entries/0");
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(one.body["type"], "Snapshot");

  JsonResponse list = Get(client, "/v1/sheets?limit=1000");
  ASSERT_EQ(list.status, 200);
  bool found = false;
  for (const json& s : list.body["sheets"]) found |= s["id"] == sheet;
  EXPECT_TRUE(found);

  EXPECT_EQ(Request(client, "DELETE", "/v1/sheets/" + sheet).status, 204);
  EXPECT_EQ(Get(client, "/v1/sheets/" + sheet).status, 404);
  EXPECT_EQ(Request(client, "DELETE", "/v1/sheets/" + sheet).status, 404);
}

TEST_F(EntriesHttpTest, ListSheetsPagesWithAfter) {
  std::set<std::string> created;
  for (int i = 0; i < 7; ++i) created.insert(CreateSheet(*client_, json::object()));
  httplib::Client client = server_->Client();
  std::set<std::string> seen;
  std::string after;
  for (int guard = 0; guard < 20; ++guard) {
    JsonResponse r =
        Get(client, "/v1/sheets?limit=3" + (after.empty() ? "" : "&after=" + after));
    ASSERT_EQ(r.status, 200);
    for (const json& s : r.body["sheets"]) {
      EXPECT_TRUE(seen.insert(s["id"].get<std::string>()).second);
    }
    if (r.body["next"].is_null()) break;
    after = r.body["next"];
  }
  EXPECT_EQ(seen, created);
}

}  // namespace
}  // namespace sheetlog::testing
