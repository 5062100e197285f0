// AWS Signature Version 4 query signing ("presigned URLs"), as AWS documents it for S3
// ("Authenticating Requests: Using Query Parameters"). Requests the S3 store sends itself
// are signed by libcurl (CURLOPT_AWS_SIGV4); libcurl cannot presign, so this file builds
// the canonical request and string to sign and computes the signature with OpenSSL's
// SHA-256 and HMAC (no crypto primitive is written here). Tested against the example
// AWS publishes (tests/unit/sigv4_test.cc) and, end to end, against a store that
// verifies signatures (tests/unit/blob_s3_test.cc).
//
// The payload is never signed (UNSIGNED-PAYLOAD, as for every S3 presigned URL) and the
// only signed header is host, so the URL alone authorizes the request: any client can
// use it without computing anything.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace sheetlog {

struct SigV4Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // optional (temporary credentials): X-Amz-Security-Token
};

struct SigV4PresignRequest {
  std::string method;  // "GET", "PUT", ...
  // "http" or "https", and the Host header's value ("host" or "host:port").
  std::string scheme = "https";
  std::string host;
  // The path as sent, already percent-encoded the S3 way (UriEncode(..., false)).
  std::string encoded_path;
  // Extra query parameters to sign beside the X-Amz-* ones (name -> raw value), e.g.
  // {"x-amz-tagging", "auto-delete=true"}. Encoded and sorted here.
  std::map<std::string, std::string> query;
  std::string region = "us-east-1";
  std::string service = "s3";
  // Signing time, seconds since the epoch (UTC), and how long the URL is valid
  // (1..604800 s: SigV4's limit).
  int64_t now_unix_s = 0;
  int64_t expires_seconds = 3600;
};

// S3's UriEncode: every byte except A-Z a-z 0-9 - _ . ~ as %XX (uppercase hex); '/'
// kept as is when `keep_slash` (object key names in paths).
std::string SigV4UriEncode(std::string_view text, bool keep_slash);

// "20130524T000000Z" for a Unix time.
std::string SigV4Timestamp(int64_t unix_s);

// Lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

// The pieces of a presigned request, kept so tests can compare every step with AWS's
// worked example.
struct SigV4Presigned {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  // lowercase hex
  std::string url;        // scheme://host/path?query&X-Amz-Signature=...
};

SigV4Presigned SigV4Presign(const SigV4PresignRequest& request,
                            const SigV4Credentials& credentials);

}  // namespace sheetlog
