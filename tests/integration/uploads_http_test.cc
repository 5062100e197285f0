// Large entries end to end over real HTTP with the manual clock (seed 000's three
// steps): discardable upload tagged auto-delete, the entry, the untag side effect, and
// the lifecycle sweep for what never got an entry.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "emulator/json_text.h"
#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

constexpr int64_t kOrphanTtl = 3 * 24 * 3600;

class UploadsHttpTest : public ApiTest {
 protected:
  void SetUp() override { Start(); }

  void Start() {
    StartServer(ServerOptions(dir_.path(), {"--clock", "manual", "--enable-faults"}));
  }

  json Sweep() {
    JsonResponse r = Post(*client_, "/v1/admin/sweep", json::object());
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body;
  }
};

TEST_F(UploadsHttpTest, HappyPathLeavesBlobUntaggedAndReadableThroughTheEntry) {
  std::string sheet = CreateSheet(*client_);
  JsonResponse created = Post(*client_, "/v1/sheets/" + sheet + "/uploads",
                              {{"type", "Attachment"}, {"body", {{"name", "a.bin"}}}});
  ASSERT_EQ(created.status, 201) << created.raw;
  std::string key = created.body["key"];

  // Step 2: the payload goes to the presigned URL (the server's, or its S3 store's own),
  // tagged for auto-delete.
  std::string payload = "payload-" + std::string(100000, 'p');
  JsonResponse put = RequestUrl(*client_, "PUT", created.body["url"], payload);
  ASSERT_EQ(put.status, 200) << put.raw;
  EXPECT_EQ(BlobTags(*client_, key), json({{"auto-delete", "true"}}));

  // Step 3: complete appends the entry; completing twice returns the same entry.
  std::string complete = "/v1/sheets/" + sheet + "/uploads/" +
                         created.body["upload_id"].get<std::string>() + "/complete";
  JsonResponse done = Post(*client_, complete, json::object());
  ASSERT_EQ(done.status, 201) << done.raw;
  // On S3 the entry references a sealed copy (no URL names its key); the directory
  // store's presigned PUTs pass through the server, which keeps the upload's own key.
  const std::string upload_key = key;
  if (BlobsOnS3()) {
    key = "entries/" + sheet + "/" + created.body["upload_id"].get<std::string>();
  }
  EXPECT_EQ(done.body["external"], key);
  JsonResponse again = Post(*client_, complete, json::object());
  ASSERT_EQ(again.status, 201);
  EXPECT_EQ(again.body["seq"], done.body["seq"]);
  EXPECT_TRUE(again.body["already_completed"].get<bool>());

  // The change feed removes the tag.
  EXPECT_TRUE(Eventually([&] { return BlobTags(*client_, key) == json::object(); }))
      << BlobTags(*client_, key);

  std::string seq = std::to_string(done.body["seq"].get<int64_t>());
  JsonResponse entry = Get(*client_, "/v1/sheets/" + sheet + "/entries/" + seq);
  ASSERT_EQ(entry.status, 200);
  EXPECT_EQ(entry.body["body"], json({{"name", "a.bin"}}));
  EXPECT_EQ(entry.body["external"]["key"], key);
  EXPECT_EQ(entry.body["external"]["size"], payload.size());
  httplib::Client anonymous("127.0.0.1", server_->port());
  JsonResponse fetched = RequestUrl(anonymous, "GET", entry.body["external"]["url"]);
  EXPECT_EQ(fetched.status, 200);
  EXPECT_EQ(fetched.raw, payload);

  // Swept long after: referenced and untagged, it stays.
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, kOrphanTtl + 10));
  Sweep();
  EXPECT_EQ(Get(*client_, "/v1/blobs/" + key + "?tagging").status, 200);
  if (upload_key != key) {  // the upload's own key went when its copy was sealed
    EXPECT_EQ(Get(*client_, "/v1/blobs/" + upload_key + "?tagging").status, 404);
  }
}

// The upload's URL stays valid for an hour after completion. On the directory store the
// server refuses a PUT to it then; an S3 store takes the PUT itself, so the entry must
// reference a copy no URL names. Either way the entry's payload never changes.
TEST_F(UploadsHttpTest, PutToTheUrlAfterCompleteNeverChangesTheEntrysPayload) {
  std::string sheet = CreateSheet(*client_);
  JsonResponse created =
      Post(*client_, "/v1/sheets/" + sheet + "/uploads", {{"type", "Attachment"}});
  ASSERT_EQ(created.status, 201) << created.raw;
  ASSERT_EQ(RequestUrl(*client_, "PUT", created.body["url"], "first payload").status,
            200);
  JsonResponse done = Post(*client_,
                           "/v1/sheets/" + sheet + "/uploads/" +
                               created.body["upload_id"].get<std::string>() + "/complete",
                           json::object());
  ASSERT_EQ(done.status, 201) << done.raw;

  JsonResponse again = RequestUrl(*client_, "PUT", created.body["url"], "replaced!");
  EXPECT_EQ(again.status, BlobsOnS3() ? 200 : 409) << again.raw;

  const std::string entry_path = "/v1/sheets/" + sheet + "/entries/" +
                                 std::to_string(done.body["seq"].get<int64_t>());
  JsonResponse inline_body = Get(*client_, entry_path + "?body=inline");
  ASSERT_EQ(inline_body.status, 200) << inline_body.raw;
  EXPECT_EQ(inline_body.body["body"], "first payload");
  JsonResponse entry = Get(*client_, entry_path);
  ASSERT_EQ(entry.status, 200) << entry.raw;
  httplib::Client anonymous("127.0.0.1", server_->port());
  JsonResponse fetched = RequestUrl(anonymous, "GET", entry.body["external"]["url"]);
  EXPECT_EQ(fetched.status, 200);
  EXPECT_EQ(fetched.raw, "first payload");
  // Long after, a sweep still keeps the entry's payload.
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, kOrphanTtl + 10));
  Sweep();
  EXPECT_EQ(Get(*client_, entry_path + "?body=inline").body["body"], "first payload");
}

TEST_F(UploadsHttpTest, UploadNeverCompletedIsSweptAfterTheTtlAndNotBefore) {
  std::string sheet = CreateSheet(*client_);
  JsonResponse created =
      Post(*client_, "/v1/sheets/" + sheet + "/uploads", {{"type", "Attachment"}});
  ASSERT_EQ(created.status, 201);
  std::string key = created.body["key"];
  ASSERT_EQ(RequestUrl(*client_, "PUT", created.body["url"], "orphan").status, 200);
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, kOrphanTtl - 60));
  Sweep();
  EXPECT_EQ(BlobTags(*client_, key), json({{"auto-delete", "true"}}));  // not yet
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, 120));
  Sweep();  // the background sweeper may have got there first: either way it is gone
  EXPECT_EQ(Get(*client_, "/v1/blobs/" + key + "?tagging").status, 404);
  // Completing it now is refused and writes nothing.
  JsonResponse late = Post(*client_,
                           "/v1/sheets/" + sheet + "/uploads/" +
                               created.body["upload_id"].get<std::string>() + "/complete",
                           json::object());
  EXPECT_EQ(late.status, 409) << late.raw;
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet).body["next_seq"], 1);
}

TEST_F(UploadsHttpTest, TamperedOrExpiredUrlIsForbiddenAndStoresNothing) {
  if (BlobsOnS3()) {
    GTEST_SKIP() << "the server verifies its own presigned URLs (directory store); an S3 "
                    "store's URLs are verified by the store";
  }
  std::string sheet = CreateSheet(*client_);
  JsonResponse created =
      Post(*client_, "/v1/sheets/" + sheet + "/uploads", {{"type", "Attachment"}});
  std::string key = created.body["key"];
  std::string path = PathOf(created.body["url"]);
  // Flip one hex digit of the signature.
  std::string tampered = path;
  char& last = tampered.back();
  last = last == '0' ? '1' : '0';
  JsonResponse bad = Request(*client_, "PUT", tampered, "x");
  EXPECT_EQ(bad.status, 403);
  EXPECT_EQ(bad.body["error"]["code"], "Forbidden");
  // Another key under the same signature.
  std::string other = path;
  other.replace(other.find(key), key.size(), key + "x");
  EXPECT_EQ(Request(*client_, "PUT", other, "x").status, 403);
  // The right URL, too late.
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, 2 * 3600));
  EXPECT_EQ(Request(*client_, "PUT", path, "x").status, 403);
  EXPECT_EQ(Get(*client_, "/v1/blobs/" + key + "?tagging").status, 404);
}

TEST_F(UploadsHttpTest, CompletingBeforeTheBodyArrivedIsAConflict) {
  std::string sheet = CreateSheet(*client_);
  JsonResponse created =
      Post(*client_, "/v1/sheets/" + sheet + "/uploads", {{"type", "Attachment"}});
  JsonResponse r = Post(*client_,
                        "/v1/sheets/" + sheet + "/uploads/" +
                            created.body["upload_id"].get<std::string>() + "/complete",
                        json::object());
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(Post(*client_,
                 "/v1/sheets/" + sheet + "/uploads/" +
                     "00000000-0000-0000-0000-000000000000/complete",
                 json::object())
                .status,
            404);
}

TEST_F(UploadsHttpTest, LargeInlineBodyGoesToTheBlobStoreAndIsUntagged) {
  std::string sheet = CreateSheet(*client_);
  std::string big(40000, 'b');
  JsonResponse r = Post(*client_, "/v1/sheets/" + sheet + "/entries",
                        {{"type", "Note"}, {"body", {{"text", big}}}});
  ASSERT_EQ(r.status, 201) << r.raw;
  ASSERT_TRUE(r.body["external"].is_string());
  std::string key = r.body["external"];
  EXPECT_TRUE(Eventually([&] { return BlobTags(*client_, key) == json::object(); }));
  JsonResponse entry = Get(*client_, "/v1/sheets/" + sheet + "/entries/1?body=inline");
  ASSERT_EQ(entry.status, 200);
  EXPECT_EQ(entry.body["body"]["text"], big);
}

TEST_F(UploadsHttpTest, CrashAfterBlobBeforeEntryLeavesAnOrphanTheSweepRemoves) {
  std::string sheet = CreateSheet(*client_);
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "uploads.after_blob_before_entry", "crash"));
  JsonResponse r = Post(*client_, "/v1/sheets/" + sheet + "/entries",
                        {{"type", "Note"}, {"body", std::string(40000, 'o')}});
  EXPECT_EQ(r.status, -1);  // the server died mid-request
  server_->Kill();
  Start();
  JsonResponse listing = Get(*client_, "/v1/blobs?prefix=entries/" + sheet + "/");
  ASSERT_EQ(listing.body["keys"].size(), 1u) << listing.raw;
  std::string key = listing.body["keys"][0]["key"];
  EXPECT_EQ(BlobTags(*client_, key), json({{"auto-delete", "true"}}));
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet).body["next_seq"], 1);  // no entry
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, kOrphanTtl + 10));
  Sweep();  // the background sweeper may have got there first: either way it is gone
  EXPECT_EQ(Get(*client_, "/v1/blobs/" + key + "?tagging").status, 404);
}

TEST_F(UploadsHttpTest, CrashAfterEntryBeforeUntagIsRepairedByTheRetriedSideEffect) {
  std::string sheet = CreateSheet(*client_);
  ASSERT_NO_FATAL_FAILURE(ArmFault(*client_, "effects.before_untag", "crash"));
  JsonResponse r = Post(*client_, "/v1/sheets/" + sheet + "/entries",
                        {{"type", "Note"}, {"body", std::string(40000, 'u')}});
  // The append may or may not have been answered before the side effect crashed the
  // server; either way the entry committed first. Make sure it is down, then restart.
  server_->Kill();
  Start();
  JsonResponse listing = Get(*client_, "/v1/blobs?prefix=entries/" + sheet + "/");
  ASSERT_EQ(listing.body["keys"].size(), 1u) << listing.raw;
  std::string key = listing.body["keys"][0]["key"];
  JsonResponse entry = Get(*client_, "/v1/sheets/" + sheet + "/entries/1");
  ASSERT_EQ(entry.status, 200) << "the entry committed before the side effect ran";
  EXPECT_EQ(entry.body["external"]["key"], key);
  // The runtime retries the side effect after the restart. Seed 002's history shows the
  // crashed invocation as `started`; it counts as dead once older than the invocation
  // time budget (900 s), and then the retry runs and the tag goes.
  ASSERT_NO_FATAL_FAILURE(AdvanceClock(*client_, 901));
  EXPECT_TRUE(Eventually([&] { return BlobTags(*client_, key) == json::object(); }))
      << BlobTags(*client_, key);
  (void)r;
}

TEST_F(UploadsHttpTest, FiftyMegabyteUploadStreamsWithoutHoldingItInMemory) {
  if (BlobsOnS3()) {
    GTEST_SKIP() << "the server's memory while it receives an upload: on S3 the client "
                    "PUTs to the store and the server never sees the body";
  }
  std::string sheet = CreateSheet(*client_);
  JsonResponse created =
      Post(*client_, "/v1/sheets/" + sheet + "/uploads", {{"type", "Attachment"}});
  const int64_t before = server_->PeakRssKb();
  constexpr size_t kSize = 50u << 20;
  std::string chunk(1 << 16, 'z');
  size_t sent = 0;
  auto res = client_->Put(
      PathOf(created.body["url"]).c_str(), kSize,
      [&](size_t offset, size_t length, httplib::DataSink& sink) {
        size_t n = std::min(length, chunk.size());
        sink.write(chunk.data(), n);
        sent = offset + n;
        return true;
      },
      "application/octet-stream");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(ParseJson(res->body)["size"], kSize);
  const int64_t after = server_->PeakRssKb();
  // The body streamed to disk: the peak grew by far less than 50 MB.
  EXPECT_LT(after - before, 20 * 1024)
      << "peak RSS " << before << " kB -> " << after << " kB";
  RecordProperty("peak_rss_growth_kb", std::to_string(after - before));
}

}  // namespace
}  // namespace sheetlog::testing
