// S3Client: the S3 REST operations the S3 blob store needs, over libcurl. Requests are
// signed by libcurl's built-in SigV4 (CURLOPT_AWS_SIGV4); presigned URLs by sigv4.h;
// XML responses are read with expat (s3_xml.h).
//
// libcurl 7.88 (Debian 12) signs the query string as it is given (later releases
// canonicalize it), so every query this client sends is built canonical: names and
// values URI-encoded, sorted, each with '='. It does not send x-amz-content-sha256
// itself, which S3 requires: the client sends "UNSIGNED-PAYLOAD" (TLS protects the body
// in transit, as for presigned PUTs), and libcurl signs that header with the others.
//
// Every request has bounds, so an unreachable or stalled store is an error within a
// known time, never a hung thread: a connect timeout, a total timeout for requests whose
// bodies are small (everything but object bodies), and for object bodies a minimum rate
// (less than 1 KiB/s for the stall timeout aborts). Transport failures and 5xx answers
// are Unavailable ("the object store at ... is unreachable / answered 503 ..."), so the
// HTTP API answers 503 and the caller may retry; nothing keeps state across requests
// except idle connections, so recovery needs no restart.
//
// Thread-safe: each request takes an idle curl handle (keeping its connection alive for
// the next request) or makes one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/blob/sigv4.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"

namespace sheetlog {

// Where the bucket is and how to reach it: `sheetlog serve --blobs
// 's3://BUCKET?endpoint=http://host:port&region=us-east-1'`.
struct S3Location {
  std::string bucket;
  std::string
      endpoint;  // "http://host:port" or "https://host"; the bucket is in the path
  std::string region = "us-east-1";
  SigV4Credentials credentials;
  // Bounds (milliseconds): connecting, a whole request without an object body, and a
  // stall of an object body's transfer.
  int64_t connect_timeout_ms = 3000;
  int64_t request_timeout_ms = 15000;
  int64_t stall_timeout_ms = 15000;
  // Bodies above this go up as a multipart upload in parts of this size (>= 5 MiB, S3's
  // smallest part).
  int64_t part_bytes = 8 << 20;
  // Whether the store keeps object tags (x-amz-tagging, ?tagging). Tags are always kept
  // in the table store too (s3_blob_store.h); this only adds the store's own copy.
  bool store_tags = true;
};

// Parses `s3://BUCKET?endpoint=URL&region=R&...` (parameters: endpoint (required),
// region, connect_timeout_ms, request_timeout_ms, stall_timeout_ms, part_bytes,
// tagging=on|off, credentials_file=PATH). Credentials never come from the URL: from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), or from
// credentials_file (the AWS shared-credentials format: aws_access_key_id = ... and
// aws_secret_access_key = ... lines). InvalidArgument saying what is wrong.
Result<S3Location> ParseS3Url(std::string_view url);

// What HeadObject and GetObject return of an object.
struct S3ObjectInfo {
  std::string key;
  int64_t size = 0;
  std::string etag;  // unquoted
  int64_t last_modified_unix_s = 0;
  std::string content_type;
};

struct S3ListPage {
  std::vector<S3ObjectInfo> objects;  // size, etag, last_modified
  std::vector<std::string> common_prefixes;
  bool truncated = false;
  std::string next_continuation_token;
};

class S3Client {
 public:
  explicit S3Client(S3Location location);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Location& location() const { return location_; }

  // Checks that the bucket exists and the credentials work (HEAD bucket).
  Status CheckBucket();
  // CreateBucket (tests give each case a bucket of its own). OK if it exists already.
  Status CreateBucket();

  // PutObject. Returns the etag. `tags` as the x-amz-tagging header (if store_tags).
  // `extra_headers` ("If-None-Match: *"...) are sent as given.
  Result<std::string> PutObject(const std::string& key, std::string_view body,
                                const std::string& content_type,
                                const std::map<std::string, std::string>& tags,
                                const std::vector<std::string>& extra_headers = {});

  Result<std::string> CreateMultipartUpload(
      const std::string& key, const std::string& content_type,
      const std::map<std::string, std::string>& tags);
  // Returns the part's etag.
  Result<std::string> UploadPart(const std::string& key, const std::string& upload_id,
                                 int part_number, std::string_view body);
  // Returns the object's etag.
  Result<std::string> CompleteMultipartUpload(
      const std::string& key, const std::string& upload_id,
      const std::vector<std::string>& part_etags,
      const std::vector<std::string>& extra_headers = {});
  Status AbortMultipartUpload(const std::string& key, const std::string& upload_id);

  // CopyObject: `from` copied inside the bucket to `to`, a new object with
  // `content_type` and `tags` (x-amz-metadata-directive and x-amz-tagging-directive
  // REPLACE); the bytes never pass through this process. `if_match`, if not empty, makes
  // the copy fail with ConditionFailed unless `from`'s etag is that
  // (x-amz-copy-source-if-match). Returns the new object's etag. NotFound if `from`
  // does not exist. Up to 5 GB (S3's limit for one copy).
  Result<std::string> CopyObject(const std::string& from, const std::string& to,
                                 const std::string& content_type,
                                 const std::map<std::string, std::string>& tags,
                                 const std::string& if_match);

  // NotFound if there is no such object.
  Result<S3ObjectInfo> HeadObject(const std::string& key);

  // Streams [offset, offset + length) of the object (length < 0: to the end) to `sink`
  // and returns the object's metadata (size is the whole object's). `if_match`, if not
  // empty, makes the read fail with ConditionFailed unless the object's etag is that.
  // NotFound; OutOfRange when `offset` is at or beyond the end of a non-empty object.
  Result<S3ObjectInfo> GetObject(const std::string& key, int64_t offset, int64_t length,
                                 const std::string& if_match,
                                 const std::function<Status(std::string_view)>& sink);

  // Idempotent (a missing key is OK).
  Status DeleteObject(const std::string& key);
  // DeleteObjects, at most 1000 keys. Fails on the first key the store reports an error
  // for.
  Status DeleteObjects(const std::vector<std::string>& keys);

  // ListObjectsV2. `start_after` and `continuation_token` as S3 defines them.
  Result<S3ListPage> ListObjects(const std::string& prefix, const std::string& delimiter,
                                 int max_keys, const std::string& start_after,
                                 const std::string& continuation_token);

  Result<std::map<std::string, std::string>> GetObjectTagging(const std::string& key);
  Status PutObjectTagging(const std::string& key,
                          const std::map<std::string, std::string>& tags);

  // A presigned URL for `method` on `key`, valid for `expires_seconds` from `now_unix_s`
  // (the store's clock decides), with `query` (e.g. x-amz-tagging) signed into it.
  std::string Presign(const std::string& method, const std::string& key,
                      int64_t now_unix_s, int64_t expires_seconds,
                      const std::map<std::string, std::string>& query) const;

 private:
  struct Request;
  struct Response;
  Result<Response> Send(const Request& request);
  Status ErrorOf(const Request& request, const Response& response) const;
  void AddNewObjectHeaders(const std::string& content_type,
                           const std::map<std::string, std::string>& tags,
                           Request* request) const;
  std::string ObjectPath(const std::string& key) const;

  void* AcquireHandle();
  void ReleaseHandle(void* handle);

  const S3Location location_;
  std::string host_;    // "host:port" as in the Host header
  std::string scheme_;  // "http" or "https"
  Mutex mu_;
  std::vector<void*> idle_ GUARDED_BY(mu_);  // CURL* handles with live connections
};

// "auto-delete=true&k=v": tags as S3's x-amz-tagging header and query value.
std::string S3TaggingQuery(const std::map<std::string, std::string>& tags);

}  // namespace sheetlog
