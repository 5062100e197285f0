// S3Client against the test S3 server (scripts/s3rver), which verifies SigV4 signatures
// of headers and query strings: so every request here also checks that libcurl's
// signing, with the canonical queries this client builds, is what S3 computes.
#include "emulator/blob/s3_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <ctime>

#include "tests/support/s3_test_server.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

std::string ReadObject(S3Client& client, const std::string& key, int64_t offset = 0,
                       int64_t length = -1) {
  std::string out;
  Result<S3ObjectInfo> info =
      client.GetObject(key, offset, length, "", [&](std::string_view piece) {
        out.append(piece);
        return Status::OK();
      });
  EXPECT_OK(info);
  return out;
}

// An absolute URL fetched with a plain HTTP client (no credentials).
httplib::Result FetchUrl(const std::string& method, const std::string& url,
                         const std::string& body = "") {
  size_t path_at = url.find('/', url.find("://") + 3);
  httplib::Client http(url.substr(0, path_at));
  if (method == "PUT") return http.Put(url.substr(path_at), body, "text/plain");
  return http.Get(url.substr(path_at));
}

TEST(S3ClientTest, ObjectRoundTripRangesTagsAndDelete) {
  S3Client client(testing::NewS3TestBucket("client-roundtrip"));
  ASSERT_OK(client.CheckBucket());
  const std::string key = "sheets/a b+c/\xc3\xa9t\xc3\xa9";  // encoded in the path
  Result<std::string> etag = client.PutObject(key, "hello world", "text/plain", {});
  ASSERT_OK(etag);
  EXPECT_EQ(*etag, "5eb63bbbe01eeed093cb22bb8f5acdc3");  // MD5 of the body

  Result<S3ObjectInfo> head = client.HeadObject(key);
  ASSERT_OK(head);
  EXPECT_EQ(head->size, 11);
  EXPECT_EQ(head->etag, *etag);
  EXPECT_EQ(head->content_type, "text/plain");
  EXPECT_EQ(ReadObject(client, key), "hello world");
  EXPECT_EQ(ReadObject(client, key, 6), "world");
  EXPECT_EQ(ReadObject(client, key, 2, 3), "llo");

  ASSERT_OK(client.PutObjectTagging(key, {{"auto-delete", "true"}, {"k", "a b&c"}}));
  Result<std::map<std::string, std::string>> tags = client.GetObjectTagging(key);
  ASSERT_OK(tags);
  EXPECT_EQ(*tags, (std::map<std::string, std::string>{{"auto-delete", "true"},
                                                       {"k", "a b&c"}}));

  ASSERT_OK(client.DeleteObject(key));
  EXPECT_TRUE(client.HeadObject(key).status().IsNotFound());
  EXPECT_OK(client.DeleteObject(key));  // idempotent
  EXPECT_TRUE(
      client.GetObject(key, 0, -1, "", [](std::string_view) { return Status::OK(); })
          .status()
          .IsNotFound());
}

TEST(S3ClientTest, ListingPagesWithPrefixDelimiterAndContinuation) {
  S3Client client(testing::NewS3TestBucket("client-list"));
  for (const char* key : {"a/1", "a/2", "a/3", "b/x/1", "b/y", "c"}) {
    ASSERT_OK(client.PutObject(key, key, "text/plain", {}));
  }
  Result<S3ListPage> top = client.ListObjects("", "/", 1000, "", "");
  ASSERT_OK(top);
  ASSERT_EQ(top->objects.size(), 1u);
  EXPECT_EQ(top->objects[0].key, "c");
  EXPECT_EQ(top->common_prefixes, (std::vector<std::string>{"a/", "b/"}));

  std::vector<std::string> seen;
  std::string token;
  do {
    Result<S3ListPage> page = client.ListObjects("a/", "", 2, "", token);
    ASSERT_OK(page);
    for (const S3ObjectInfo& o : page->objects) seen.push_back(o.key);
    token = page->truncated ? page->next_continuation_token : "";
  } while (!token.empty());
  EXPECT_EQ(seen, (std::vector<std::string>{"a/1", "a/2", "a/3"}));

  Result<S3ListPage> after = client.ListObjects("", "", 1000, "a/3", "");
  ASSERT_OK(after);
  ASSERT_EQ(after->objects.size(), 3u);
  EXPECT_EQ(after->objects[0].key, "b/x/1");

  ASSERT_OK(client.DeleteObjects({"a/1", "a/2", "missing"}));
  Result<S3ListPage> left = client.ListObjects("a/", "", 1000, "", "");
  ASSERT_OK(left);
  ASSERT_EQ(left->objects.size(), 1u);
  EXPECT_EQ(left->objects[0].key, "a/3");
}

TEST(S3ClientTest, MultipartUploadJoinsItsParts) {
  S3Client client(testing::NewS3TestBucket("client-multipart"));
  Result<std::string> upload = client.CreateMultipartUpload("big", "text/plain", {});
  ASSERT_OK(upload);
  const std::string first(5 << 20, 'a');  // S3's smallest part but the last
  Result<std::string> part1 = client.UploadPart("big", *upload, 1, first);
  Result<std::string> part2 = client.UploadPart("big", *upload, 2, "tail");
  ASSERT_OK(part1);
  ASSERT_OK(part2);
  ASSERT_OK(client.CompleteMultipartUpload("big", *upload, {*part1, *part2}));
  Result<S3ObjectInfo> head = client.HeadObject("big");
  ASSERT_OK(head);
  EXPECT_EQ(head->size, (5 << 20) + 4);
  EXPECT_EQ(ReadObject(client, "big", 5 << 20), "tail");
  // Aborting is OK whether or not the store implements it.
  Result<std::string> other = client.CreateMultipartUpload("other", "text/plain", {});
  ASSERT_OK(other);
  EXPECT_OK(client.AbortMultipartUpload("other", *other));
  EXPECT_TRUE(client.HeadObject("other").status().IsNotFound());
}

TEST(S3ClientTest, PresignedUrlsWorkUntilTheStoreSaysTheyExpired) {
  S3Client client(testing::NewS3TestBucket("client-presign"));
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  std::string put_url = client.Presign("PUT", "up/one", now, 600, {});
  httplib::Result put = FetchUrl("PUT", put_url, "payload");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200) << put->body;
  httplib::Result get = FetchUrl("GET", client.Presign("GET", "up/one", now, 600, {}));
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->body, "payload");

  // A URL signed for another key, or tampered with, is refused by the store.
  std::string tampered = client.Presign("GET", "up/one", now, 600, {});
  tampered.replace(tampered.find("X-Amz-Expires=600"), 17, "X-Amz-Expires=601");
  httplib::Result refused = FetchUrl("GET", tampered);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  EXPECT_NE(refused->body.find("SignatureDoesNotMatch"), std::string::npos);

  // Signed two hours ago for one hour: the store's clock says it expired.
  httplib::Result expired =
      FetchUrl("GET", client.Presign("GET", "up/one", now - 7200, 3600, {}));
  ASSERT_TRUE(expired);
  EXPECT_EQ(expired->status, 403);
  EXPECT_NE(expired->body.find("expired"), std::string::npos) << expired->body;
}

TEST(S3ClientTest, WrongCredentialsAndUnreachableStoreAreClearErrors) {
  S3Location location = testing::NewS3TestBucket("client-errors");
  S3Location wrong = location;
  wrong.credentials.secret_access_key = "not-the-secret";
  Status refused = S3Client(wrong).PutObject("k", "v", "text/plain", {}).status();
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied) << refused.ToString();
  EXPECT_NE(refused.message().find("SignatureDoesNotMatch"), std::string::npos);

  S3Location gone = location;
  gone.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  Status unreachable = S3Client(gone).HeadObject("k").status();
  EXPECT_EQ(unreachable.code(), StatusCode::kUnavailable) << unreachable.ToString();
  EXPECT_NE(unreachable.message().find("unreachable"), std::string::npos);
}

TEST(ParseS3UrlTest, ParsesLocationAndKeepsCredentialsOffTheCommandLine) {
  setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SECRET", 1);
  Result<S3Location> parsed = ParseS3Url(
      "s3://bucket-1?endpoint=http%3A%2F%2F127.0.0.1%3A9000/&region=eu-west-1&"
      "request_timeout_ms=500&tagging=off");
  ASSERT_OK(parsed);
  EXPECT_EQ(parsed->bucket, "bucket-1");
  EXPECT_EQ(parsed->endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(parsed->region, "eu-west-1");
  EXPECT_EQ(parsed->request_timeout_ms, 500);
  EXPECT_FALSE(parsed->store_tags);
  EXPECT_EQ(parsed->credentials.access_key_id, "AKID");

  EXPECT_NE(ParseS3Url("s3://b?endpoint=http://h&secret_key=x")
                .status()
                .message()
                .find("never go on the command line"),
            std::string::npos);
  EXPECT_FALSE(ParseS3Url("s3://b").ok());                      // no endpoint
  EXPECT_FALSE(ParseS3Url("http://b?endpoint=http://h").ok());  // not s3://
  EXPECT_FALSE(ParseS3Url("s3://b?endpoint=http://h&part_bytes=1").ok());
  EXPECT_FALSE(ParseS3Url("s3://b?endpoint=http://h&colour=red").ok());
  unsetenv("AWS_ACCESS_KEY_ID");
  EXPECT_NE(
      ParseS3Url("s3://b?endpoint=http://h").status().message().find("no credentials"),
      std::string::npos);
}

}  // namespace
}  // namespace sheetlog
