// The routes beyond api.md that the console's views use, over real HTTP
// against the real binary: what they answer, that the destructive ones need the flags
// reset and faults need, that bad input is a 400 that changes nothing, and S3's
// conditional blob writes.
#include <gtest/gtest.h>

#include <set>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class InspectHttpTest : public ApiTest {
 protected:
  void Start(std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--clock", "manual"});
    StartServer(ServerOptions(dir_.path(), flags));
  }

  JsonResponse Put(const std::string& path, const std::string& body,
                   const httplib::Headers& headers) {
    httplib::Result r = client_->Put(path, headers, body, "application/json");
    JsonResponse out;
    if (!r) return out;
    out.status = r->status;
    out.raw = r->body;
    out.body = json::parse(r->body, nullptr, false);
    return out;
  }
};

TEST_F(InspectHttpTest, QueueMessagesArePeekedSentAndPurgedOnlyWithTheFlags) {
  Start({});
  const std::string path = "/v1/admin/queues/snapshots-dlq";
  JsonResponse send = Post(*client_, path + "/messages", {{"body", "x"}});
  EXPECT_EQ(send.status, 403) << send.raw;
  EXPECT_NE(send.raw.find("--enable-faults"), std::string::npos) << send.raw;
  JsonResponse purge = Post(*client_, path + "/purge", json::object());
  EXPECT_EQ(purge.status, 403) << purge.raw;
  EXPECT_NE(purge.raw.find("--allow-reset"), std::string::npos) << purge.raw;
  JsonResponse controls = Get(*client_, "/v1/admin/controls");
  ASSERT_EQ(controls.status, 200) << controls.raw;
  EXPECT_EQ(controls.body["faults"], false);
  EXPECT_EQ(controls.body["reset"], false);
  EXPECT_EQ(controls.body["clock"]["manual"], true);
  // The fault points the build knows, named for the console's chooser.
  ASSERT_TRUE(controls.body["points"].is_array()) << controls.raw;
  std::set<std::string> points;
  for (const json& point : controls.body["points"]) {
    EXPECT_FALSE(point["meaning"].get<std::string>().empty()) << point.dump();
    points.insert(point["name"].get<std::string>());
  }
  EXPECT_EQ(points.count("blob.put"), 1u) << controls.raw;
  EXPECT_EQ(Get(*client_, "/v1/admin/queues/nope/messages").status, 404);
}

TEST_F(InspectHttpTest, PeekingReceivesNothingAndPurgeEmptiesTheQueue) {
  Start({"--enable-faults", "--allow-reset"});
  const std::string path = "/v1/admin/queues/snapshots-dlq";
  for (int i = 0; i < 3; ++i) {
    JsonResponse sent =
        Post(*client_, path + "/messages", {{"body", "m" + std::to_string(i)}});
    ASSERT_EQ(sent.status, 201) << sent.raw;
  }
  EXPECT_EQ(Post(*client_, path + "/messages", {{"body", 7}}).status, 400);
  EXPECT_EQ(Post(*client_, path + "/messages", {{"body", "x"}, {"delay_s", 901}}).status,
            400);
  EXPECT_EQ(Post(*client_, path + "/messages", {{"body", "x"}, {"colour", 1}}).status,
            400);
  JsonResponse page = Get(*client_, path + "/messages?limit=2");
  ASSERT_EQ(page.status, 200) << page.raw;
  ASSERT_EQ(page.body["messages"].size(), 2u);
  EXPECT_EQ(page.body["messages"][0]["body"], "m0");
  EXPECT_EQ(page.body["messages"][0]["receive_count"], 0);
  JsonResponse rest =
      Get(*client_, path + "/messages?after=" + page.body["next"].get<std::string>());
  ASSERT_EQ(rest.body["messages"].size(), 1u);
  EXPECT_EQ(rest.body["messages"][0]["body"], "m2");
  EXPECT_EQ(Get(*client_, path + "/messages?limit=0").status, 400);
  // Peeking twice changes nothing.
  EXPECT_EQ(Get(*client_, path + "/messages").body["messages"][0]["receive_count"], 0);
  JsonResponse purged = Post(*client_, path + "/purge", json::object());
  ASSERT_EQ(purged.status, 200) << purged.raw;
  EXPECT_EQ(purged.body["purged"], 3);
  EXPECT_TRUE(Get(*client_, path + "/messages").body["messages"].empty());
}

TEST_F(InspectHttpTest, TablesAreBrowsedByKeyAndBadInputChangesNothing) {
  Start({});
  const std::string sheet = CreateSheet(*client_);
  for (int i = 1; i <= 4; ++i) {
    ASSERT_EQ(Post(*client_, "/v1/sheets/" + sheet + "/entries",
                   {{"type", i == 2 ? "Note" : "SetCell"},
                    {"body", {{"ref", "A" + std::to_string(i)}, {"value", i}}}})
                  .status,
              201);
  }
  JsonResponse tables = Get(*client_, "/v1/admin/tables");
  ASSERT_EQ(tables.status, 200) << tables.raw;
  EXPECT_EQ(tables.body["tables"][2]["name"], "entry");
  EXPECT_EQ(tables.body["tables"][2]["sort_key"], json({"num"}));

  const std::string items =
      "/v1/admin/tables/entry/items?partition=[\"" + sheet + "\",0]";
  JsonResponse page = Get(*client_, items + "&from=1&limit=2");
  ASSERT_EQ(page.status, 200) << page.raw;
  ASSERT_EQ(page.body["items"].size(), 2u);
  EXPECT_EQ(page.body["items"][0]["num"], 1);
  EXPECT_EQ(page.body["next"], json({sheet, 0, 2}));
  JsonResponse next =
      Get(*client_, items + "&from=1&limit=2&start=" + page.body["next"].dump());
  ASSERT_EQ(next.status, 200) << next.raw;
  EXPECT_EQ(next.body["items"][0]["num"], 3);
  JsonResponse backwards = Get(*client_, items + "&order=desc&limit=1");
  EXPECT_EQ(backwards.body["items"][0]["num"], 4);
  JsonResponse filtered = Get(*client_, items + "&filter=type&op=eq&value=Note");
  ASSERT_EQ(filtered.body["items"].size(), 1u);
  EXPECT_EQ(filtered.body["items"][0]["seq"], 2);
  EXPECT_EQ(filtered.body["scanned"], 5);
  JsonResponse scan = Get(*client_, "/v1/admin/tables/sheet/items");
  ASSERT_EQ(scan.status, 200) << scan.raw;
  EXPECT_EQ(scan.body["items"][0]["id"], sheet);

  for (const std::string& bad :
       {items + "&limit=1001", items + "&order=up", items + "&filter=type&op=like",
        std::string("/v1/admin/tables/entry/items?partition=[\"") + sheet + "\"]",
        std::string("/v1/admin/tables/entry/items?partition=[\"") + sheet + "\",\"x\"]",
        std::string("/v1/admin/tables/entry/items?partition=nope"),
        std::string("/v1/admin/tables/sheet/items?from=1"), items + "&start=[1]"}) {
    JsonResponse r = Get(*client_, bad);
    EXPECT_EQ(r.status, 400) << bad << ": " << r.raw;
    EXPECT_EQ(r.body["error"]["code"], "ValidationError") << bad;
  }
  EXPECT_EQ(Get(*client_, "/v1/admin/tables/nope/items").status, 404);
}

TEST_F(InspectHttpTest, InvocationsAreListedNewestFirstWithTheirOutcome) {
  Start({});
  CreateSheet(*client_);
  ASSERT_TRUE(Eventually([&] {
    JsonResponse r = Get(*client_, "/v1/admin/invocations?source=entry-effects");
    return r.status == 200 && !r.body["invocations"].empty();
  }));
  // Paging is checked against a listing no invocation changed meanwhile: the three
  // reads are taken again until they agree (the pipeline may still be working on the
  // new sheet's snapshot 0, whose deferrals come back later).
  JsonResponse all;
  JsonResponse one;
  JsonResponse rest;
  ASSERT_TRUE(Eventually([&] {
    all = Get(*client_, "/v1/admin/invocations?limit=1000");
    one = Get(*client_, "/v1/admin/invocations?limit=1");
    if (all.status != 200 || one.status != 200 || one.body["invocations"].size() != 1 ||
        !one.body["next"].is_string()) {
      return false;
    }
    rest = Get(*client_,
               "/v1/admin/invocations?before=" + one.body["next"].get<std::string>());
    return rest.status == 200 &&
           rest.body["invocations"].size() + 1 == all.body["invocations"].size() &&
           one.body["invocations"][0] == all.body["invocations"][0];
  })) << all.raw
      << "\n"
      << one.raw << "\n"
      << rest.raw;
  for (const json& inv : all.body["invocations"]) {
    EXPECT_TRUE(inv["status"] == "succeeded" || inv["status"] == "deferred" ||
                inv["status"] == "started")
        << inv.dump();
    if (inv["status"] != "started") {
      EXPECT_TRUE(inv["duration_ms"].is_number()) << inv.dump();
    }
  }
  EXPECT_EQ(Get(*client_, "/v1/admin/invocations?status=fine").status, 400);
  EXPECT_EQ(Get(*client_, "/v1/admin/invocations?before=yesterday").status, 400);
  EXPECT_EQ(Get(*client_, "/v1/admin/invocations?limit=0").status, 400);
}

TEST_F(InspectHttpTest, UsedRangeIsTheLastRowAndColumnHoldingACell) {
  Start({});
  const std::string sheet = CreateSheet(*client_);
  JsonResponse empty = Get(*client_, "/v1/sheets/" + sheet + "/used-range");
  ASSERT_EQ(empty.status, 200) << empty.raw;
  EXPECT_TRUE(empty.body["range"].is_null());
  EXPECT_EQ(empty.body["last_row"], 0);
  ASSERT_EQ(Post(*client_, "/v1/sheets/" + sheet + "/entries",
                 {{"type", "SetCells"}, {"body", {{"cells", {{"C7", 1}, {"F2", "x"}}}}}})
                .status,
            201);
  JsonResponse used = Get(*client_, "/v1/sheets/" + sheet + "/used-range");
  EXPECT_EQ(used.body["range"], "A1:F7");
  EXPECT_EQ(used.body["last_row"], 7);
  EXPECT_EQ(used.body["last_column"], 6);
  JsonResponse before = Get(*client_, "/v1/sheets/" + sheet + "/used-range?at=0");
  EXPECT_TRUE(before.body["range"].is_null()) << before.raw;
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet + "/used-range?at=x").status, 400);
}

// S3's conditional writes (If-None-Match: *, If-Match): what a client's claims and
// leases are built on (clients/typescript's worker host).
TEST_F(InspectHttpTest, ConditionalBlobPutsStoreOnlyWhenTheConditionHolds) {
  Start({});
  const std::string path = "/v1/blobs/claims/job-1";
  JsonResponse first = Put(path, "a", {{"If-None-Match", "*"}});
  ASSERT_EQ(first.status, 200) << first.raw;
  const std::string etag = first.body["etag"];
  JsonResponse again = Put(path, "b", {{"If-None-Match", "*"}});
  EXPECT_EQ(again.status, 412) << again.raw;
  EXPECT_EQ(again.body["error"]["code"], "PreconditionFailed");
  JsonResponse stale = Put(path, "c", {{"If-Match", "\"0123\""}});
  EXPECT_EQ(stale.status, 412) << stale.raw;
  JsonResponse matched = Put(path, "d", {{"If-Match", "\"" + etag + "\""}});
  ASSERT_EQ(matched.status, 200) << matched.raw;
  EXPECT_NE(matched.body["etag"], etag);
  EXPECT_EQ(Put(path, "e", {{"If-None-Match", "\"x\""}}).status, 400);
  EXPECT_EQ(Put(path, "e", {{"If-Match", "*"}}).status, 400);
  httplib::Result body = client_->Get(path);
  ASSERT_TRUE(body);
  EXPECT_EQ(body->body, "d") << "only the matched put stored";
  EXPECT_EQ(
      Put("/v1/blobs/claims/absent", "x", {{"If-Match", "\"" + etag + "\""}}).status,
      412);
  EXPECT_EQ(client_->Get("/v1/blobs/claims/absent")->status, 404);
}

}  // namespace
}  // namespace sheetlog::testing
