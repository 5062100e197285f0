// Incremental HTTP/1.1 request parsing for sheetlog's server (src/api/http/): the
// request head, body framing (Content-Length and chunked, RFC 9112) and gzip inflation,
// each bounded by its caller's limits so no input makes memory grow past them. Pure
// functions and small state machines, no I/O: tests/unit/http_parser_test.cc drives them
// byte by byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "src/api/http/http_message.h"

namespace sheetlog::api::http {

// Why a request cannot be served: the status to answer and what to tell the client.
struct ParseError {
  int status = 400;
  std::string message;
};

// A parsed request head and how its body is framed.
struct RequestHead {
  Request request;               // method, target, path, params, headers (body empty)
  int minor_version = 1;         // HTTP/1.<minor>
  bool keep_alive = true;        // the connection may carry another request after this
  bool chunked = false;          // Transfer-Encoding: chunked
  int64_t content_length = 0;    // when not chunked; 0 without Content-Length
  bool expect_continue = false;  // Expect: 100-continue
  bool gzip = false;             // Content-Encoding: gzip
  bool has_body() const { return chunked || content_length > 0; }
};

// Where a request head ends in `buffer`, as far as it has arrived.
struct HeadScan {
  // The offset just past the blank line that ends the head; npos if it has not
  // arrived (or the head is malformed).
  size_t end = std::string_view::npos;
  // A line of the head ends in a bare LF: the head is malformed and can be refused at
  // once rather than waited for (RFC 9112 2.2 lets a recipient refuse it).
  bool bare_lf = false;
};
// Scans `buffer` for the end of a request head. `search_from` resumes a scan (the
// bytes before it are known to hold neither the end nor a bare LF).
HeadScan ScanHead(std::string_view buffer, size_t search_from = 0);

// Parses a complete head (request line, header lines, blank line; `head` as located by
// ScanHead).
//  - The request target may be origin-form, absolute-form (http or https: its authority
//    becomes the Host header and `target` its origin form) or "*" for OPTIONS.
//  - HTTP/1.0 and 1.1 are served; a later 1.x minor version as 1.1.
//  - Connection, Expect and Content-Encoding are read as lists over all their lines.
// Refuses with 400 (malformed; obsolete line folding; both Content-Length and
// Transfer-Encoding; conflicting lengths; an HTTP/1.1 request without Host; Host,
// Authorization, Origin or Sec-Fetch-Site more than once; Content-Type, Range or
// If-Range with two different values), 431 (more than `max_headers` fields), 501 (a
// transfer coding other than chunked), 505 (not HTTP/1.x) or 415 (a content coding other
// than gzip/identity). Returns false and fills *error then.
bool ParseRequestHead(std::string_view head, size_t max_headers, RequestHead* out,
                      ParseError* error);

// True for the characters of an HTTP token (RFC 9110 tchar): methods, field names.
bool IsTokenChar(char c);

// Percent-decodes `text`; with `plus_as_space`, '+' becomes ' ' (query strings).
// Malformed escapes are kept as they are.
std::string PercentDecode(std::string_view text, bool plus_as_space);
// Splits a query string into decoded parameters.
void ParseQuery(std::string_view query, Params* params);

// Removes the framing of a request body: Content-Length or chunked. Not thread-safe
// (one connection's reader).
class BodyDecoder {
 public:
  enum class State { kMore, kDone, kError };
  static BodyDecoder Length(int64_t length);
  static BodyDecoder Chunked();

  // Decodes from `input`, appending at most `max_out` body bytes to *out and setting
  // *consumed to the input bytes used (never past the end of the body: what follows is
  // the next request). kMore: give it more input (or room); kDone: the body is complete;
  // kError: malformed framing (error()).
  State Decode(std::string_view input, std::string* out, size_t max_out,
               size_t* consumed);
  const std::string& error() const { return error_; }
  bool done() const { return phase_ == Phase::kDone; }

 private:
  enum class Phase { kLength, kSizeLine, kData, kDataEnd, kTrailer, kDone };
  explicit BodyDecoder(Phase phase) : phase_(phase) {}
  State Fail(std::string message);

  Phase phase_;
  uint64_t remaining_ = 0;  // body bytes (kLength) or bytes of this chunk (kData)
  std::string line_;        // a chunk-size or trailer line being read
  size_t trailer_bytes_ = 0;
  std::string error_;
};

// Inflates a gzip body in pieces, bounded: the inflated size is counted against a limit
// as it grows, so a small compressed body cannot become a large one in memory. Not
// thread-safe (one body's reader).
class GzipInflater {
 public:
  enum class State { kMore, kDone, kTooLarge, kError };
  GzipInflater();
  ~GzipInflater();
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;

  // Inflates `input`, appending to *out. kTooLarge as soon as *out would hold more
  // than `max_total` bytes; kError for data that is not gzip (error()); kDone once the
  // gzip stream ended (input after it is an error).
  State Inflate(std::string_view input, std::string* out, size_t max_total);
  bool finished() const { return finished_; }
  const std::string& error() const { return error_; }

 private:
  struct Stream;
  std::unique_ptr<Stream> stream_;
  bool finished_ = false;
  std::string error_;
};

}  // namespace sheetlog::api::http
