// The blob store's HTTP surface against the real binary: an upload's payload is
// immutable once its entry exists, the server's own objects are
// read-only for clients, and Range requests get 206 / 416 / 200 as byte_range.h says.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class BlobGuardHttpTest : public ApiTest {
 protected:
  void SetUp() override {
    StartServer(ServerOptions::InMemory());
    sheet_ = CreateSheet(*client_);
    ASSERT_FALSE(HasFatalFailure());
  }

  std::string Body(const std::string& path) { return Get(*client_, path).raw; }

  static std::string Header(const JsonResponse& r, const std::string& name) {
    auto it = r.headers.find(name);
    return it == r.headers.end() ? "" : it->second;
  }

  // An upload with `payload` PUT and completed; returns {upload key, PUT URL, seq, the
  // entry's payload key}.
  struct Completed {
    std::string key, put_url;
    int64_t seq = -1;
    std::string external;
  };
  Completed CompletedUpload(const std::string& payload) {
    Completed out;
    JsonResponse created =
        Post(*client_, "/v1/sheets/" + sheet_ + "/uploads", {{"type", "Attachment"}});
    EXPECT_EQ(created.status, 201) << created.raw;
    out.key = created.body["key"];
    out.put_url = created.body["url"];
    EXPECT_EQ(RequestUrl(*client_, "PUT", out.put_url, payload).status, 200);
    JsonResponse done =
        Post(*client_,
             "/v1/sheets/" + sheet_ + "/uploads/" +
                 created.body["upload_id"].get<std::string>() + "/complete",
             json::object());
    EXPECT_EQ(done.status, 201) << done.raw;
    out.seq = done.body.value("seq", int64_t{-1});
    const json& external = done.body["external"];
    out.external = external.is_object() ? external.value("key", std::string())
                                        : external.get<std::string>();
    return out;
  }

  void ExpectForbiddenNaming(const JsonResponse& r, const std::string& prefix) {
    EXPECT_EQ(r.status, 403) << r.raw;
    EXPECT_EQ(r.body["error"]["code"], "Forbidden") << r.raw;
    EXPECT_NE(r.raw.find("'" + prefix + "'"), std::string::npos) << r.raw;
  }

  // The server's own presigned route guards these (the directory store); an S3 store's
  // URLs go to the store (UploadsHttpTest.PutToTheUrlAfterComplete... holds there).
  static constexpr const char* kServerPresignedOnly =
      "the server's presigned PUT route exists with the directory store only";

  std::string sheet_;
};

TEST_F(BlobGuardHttpTest, PresignedPutAfterCompleteIsRefusedAndChangesNothing) {
  if (BlobsOnS3()) GTEST_SKIP() << kServerPresignedOnly;
  Completed upload = CompletedUpload("first payload");
  ASSERT_TRUE(Eventually([&] {
    return BlobTags(*client_, upload.key) == json::object();
  })) << BlobTags(*client_, upload.key);

  JsonResponse again = RequestUrl(*client_, "PUT", upload.put_url, "replaced!");
  EXPECT_EQ(again.status, 409) << again.raw;
  EXPECT_EQ(again.body["error"]["code"], "ConflictError");
  EXPECT_NE(again.raw.find("is completed"), std::string::npos) << again.raw;

  EXPECT_EQ(Body("/v1/blobs/" + upload.key), "first payload");
  EXPECT_EQ(BlobTags(*client_, upload.key), json::object());  // not re-tagged auto-delete
  JsonResponse inline_body =
      Get(*client_, "/v1/sheets/" + sheet_ + "/entries/" + std::to_string(upload.seq) +
                        "?body=inline");
  EXPECT_EQ(inline_body.body["body"], "first payload");
}

TEST_F(BlobGuardHttpTest, PresignedPutBeforeCompleteMayReplaceThePayload) {
  if (BlobsOnS3()) GTEST_SKIP() << kServerPresignedOnly;
  JsonResponse created =
      Post(*client_, "/v1/sheets/" + sheet_ + "/uploads", {{"type", "Attachment"}});
  ASSERT_EQ(created.status, 201);
  const std::string put_path = PathOf(created.body["url"]);
  EXPECT_EQ(Request(*client_, "PUT", put_path, "draft").status, 200);
  EXPECT_EQ(Request(*client_, "PUT", put_path, "final").status, 200);
  EXPECT_EQ(Body("/v1/blobs/" + created.body["key"].get<std::string>()), "final");
}

TEST_F(BlobGuardHttpTest, ClientsCannotWriteDeleteOrTagTheServersObjects) {
  // A snapshot root (entry 0 of every sheet), an upload payload, a large inline body.
  JsonResponse snapshot =
      Post(*client_, "/v1/sheets/" + sheet_ + "/snapshots", json::object());
  ASSERT_EQ(snapshot.status, 201) << snapshot.raw;
  std::string root;
  ASSERT_TRUE(Eventually([&] {
    JsonResponse s = Get(*client_, "/v1/sheets/" + sheet_);
    if (!s.body.is_object() || !s.body["last_snapshot"].is_object()) return false;
    root = s.body["last_snapshot"]["root"];
    return true;
  }));
  Completed upload = CompletedUpload("payload");
  JsonResponse large = Post(*client_, "/v1/sheets/" + sheet_ + "/entries",
                            {{"type", "Note"}, {"body", std::string(40000, 'x')}});
  ASSERT_EQ(large.status, 201) << large.raw;
  const std::string entry_key = large.body["external"];

  // The entry's payload: the upload's own key on the directory store; on S3, where a
  // presigned URL reaches the bucket until it expires, complete seals a copy under
  // entries/SHEET/UPLOAD and deletes the upload's key.
  EXPECT_EQ(upload.external,
            BlobsOnS3() ? "entries/" + upload.key.substr(8) : upload.key);
  EXPECT_EQ(Get(*client_, "/v1/blobs/" + upload.key).status, BlobsOnS3() ? 404 : 200);
  for (const std::string& key : {root, upload.external, entry_key}) {
    const std::string area = key.substr(0, key.find('/') + 1);
    const std::string before = Body("/v1/blobs/" + key);
    const json tags_before = BlobTags(*client_, key);
    ExpectForbiddenNaming(Request(*client_, "DELETE", "/v1/blobs/" + key), area);
    ExpectForbiddenNaming(Request(*client_, "PUT", "/v1/blobs/" + key, "overwritten"),
                          area);
    ExpectForbiddenNaming(Request(*client_, "PUT", "/v1/blobs/" + key + "?tagging",
                                  json{{"tags", {{"auto-delete", "true"}}}}.dump()),
                          area);
    // Reading stays allowed, and nothing changed.
    EXPECT_EQ(Get(*client_, "/v1/blobs/" + key).status, 200) << key;
    EXPECT_EQ(Body("/v1/blobs/" + key), before);
    EXPECT_EQ(BlobTags(*client_, key), tags_before);
  }
  // New keys in the reserved areas are refused too.
  ExpectForbiddenNaming(Request(*client_, "PUT", "/v1/blobs/archives/x/y.jsonl", "{}"),
                        "archives/");
  ExpectForbiddenNaming(Request(*client_, "PUT", "/v1/blobs/snapshots/new", "x"),
                        "snapshots/");
  // The sheet still reads from its snapshot.
  EXPECT_EQ(Get(*client_, "/v1/sheets/" + sheet_ + "/cells?range=A1:B2").status, 200);
  // Client keys elsewhere are the client's.
  EXPECT_EQ(Request(*client_, "PUT", "/v1/blobs/mine/snapshots/a", "x").status, 200);
  EXPECT_EQ(Request(*client_, "DELETE", "/v1/blobs/mine/snapshots/a").status, 204);
}

TEST_F(BlobGuardHttpTest, RangeRequestsAnswer206Or416AndIgnoreSeveralRanges) {
  ASSERT_EQ(Request(*client_, "PUT", "/v1/blobs/r/digits", "0123456789").status, 200);
  const std::string path = "/v1/blobs/r/digits";
  struct Case {
    std::string range, body, content_range;
  };
  for (const Case& c :
       {Case{"bytes=0-4", "01234", "bytes 0-4/10"},
        Case{"bytes=7-", "789", "bytes 7-9/10"}, Case{"bytes=-3", "789", "bytes 7-9/10"},
        Case{"bytes=8-100", "89", "bytes 8-9/10"}}) {
    JsonResponse r = Request(*client_, "GET", path, "", {{"Range", c.range}});
    EXPECT_EQ(r.status, 206) << c.range;
    EXPECT_EQ(r.raw, c.body) << c.range;
    EXPECT_EQ(Header(r, "Content-Range"), c.content_range) << c.range;
    EXPECT_EQ(Header(r, "Content-Length"), std::to_string(c.body.size()));
  }
  JsonResponse beyond = Request(*client_, "GET", path, "", {{"Range", "bytes=10-"}});
  EXPECT_EQ(beyond.status, 416) << beyond.raw;
  EXPECT_EQ(Header(beyond, "Content-Range"), "bytes */10");
  EXPECT_EQ(beyond.body["error"]["code"], "RangeNotSatisfiable");

  JsonResponse several = Request(*client_, "GET", path, "", {{"Range", "bytes=0-1,4-5"}});
  EXPECT_EQ(several.status, 200);
  EXPECT_EQ(several.raw, "0123456789");
  EXPECT_EQ(Header(several, "Accept-Ranges"), "bytes");

  // If-Range with a stale ETag: the whole object.
  JsonResponse stale = Request(*client_, "GET", path, "",
                               {{"Range", "bytes=0-1"}, {"If-Range", "\"stale\""}});
  EXPECT_EQ(stale.status, 200);
  EXPECT_EQ(stale.raw, "0123456789");

  // A presigned GET (an entry's external url) honours Range too: the server's own route
  // (the directory store; an S3 store's URLs are the store's).
  if (BlobsOnS3()) return;
  Completed upload = CompletedUpload("abcdefghij");
  JsonResponse entry =
      Get(*client_, "/v1/sheets/" + sheet_ + "/entries/" + std::to_string(upload.seq));
  httplib::Client anonymous("127.0.0.1", server_->port());
  JsonResponse presigned = Request(anonymous, "GET", entry.body["external"]["url"], "",
                                   {{"Range", "bytes=2-3"}});
  EXPECT_EQ(presigned.status, 206) << presigned.raw;
  EXPECT_EQ(presigned.raw, "cd");
}

}  // namespace
}  // namespace sheetlog::testing
