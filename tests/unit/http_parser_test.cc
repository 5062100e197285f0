// The HTTP/1.1 request parser of src/api/http/ (heads, chunked bodies, bounded gzip
// inflation). The route matcher has its own file: route_pattern_test.cc.
#include "src/api/http/http_parser.h"

#include <gtest/gtest.h>
#include <zlib.h>

namespace sheetlog::api::http {
namespace {

RequestHead Parse(const std::string& head, ParseError* error = nullptr) {
  RequestHead out;
  ParseError ignored;
  EXPECT_TRUE(ParseRequestHead(head, 100, &out, error ? error : &ignored))
      << (error ? error->message : ignored.message);
  return out;
}

int Refusal(const std::string& head, size_t max_headers = 100) {
  RequestHead out;
  ParseError error;
  if (ParseRequestHead(head, max_headers, &out, &error)) return 0;
  EXPECT_FALSE(error.message.empty());
  return error.status;
}

TEST(HttpParserTest, ParsesRequestLineHeadersAndQuery) {
  RequestHead head = Parse(
      "GET /v1/sheets/a%20b?limit=10&after=x+y&flag HTTP/1.1\r\nHost: h\r\n"
      "X-Two: 1\r\nx-two: 2\r\n\r\n");
  EXPECT_EQ(head.request.method, "GET");
  EXPECT_EQ(head.request.path, "/v1/sheets/a b");
  EXPECT_EQ(head.request.get_param_value("limit"), "10");
  EXPECT_EQ(head.request.get_param_value("after"), "x y");
  EXPECT_TRUE(head.request.has_param("flag"));
  EXPECT_EQ(head.request.get_header_value("HOST"), "h");  // case-insensitive
  EXPECT_EQ(head.request.headers.count("x-two"), 2u);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_FALSE(head.has_body());
}

TEST(HttpParserTest, FramingAndConnectionRules) {
  EXPECT_EQ(
      Parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\n").content_length,
      12);
  EXPECT_TRUE(
      Parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n").chunked);
  EXPECT_FALSE(
      Parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
  EXPECT_TRUE(Parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n")
                  .expect_continue);
  EXPECT_TRUE(Parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Encoding: gzip\r\n\r\n").gzip);
}

TEST(HttpParserTest, RefusesMalformedAndAmbiguousHeads) {
  // Request smuggling: both framings, or two different lengths.
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n"),
            400);
  EXPECT_EQ(
      Refusal(
          "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
      400);
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n"), 400);
  EXPECT_EQ(
      Refusal("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
      501);
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nHost: h\r\nContent-Encoding: br\r\n\r\n"), 415);
  EXPECT_EQ(Refusal("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(Refusal("GET / FTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET ftp://x/ HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET http://user@x/ HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET x:80 HTTP/1.1\r\nHost: h\r\n\r\n"), 400);  // CONNECT's form
  EXPECT_EQ(Refusal("GET * HTTP/1.1\r\nHost: h\r\n\r\n"), 400);     // '*' is OPTIONS'
  EXPECT_EQ(Refusal("GET / HTTP/1.10\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("G@T / HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nHost: h\r\nNo colon\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nHost: h\r\nBad Name: 1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nHost: h\r\nA: x\x01y\r\n\r\n"), 400);
  std::string many = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 0; i < 4; ++i) many += "H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Refusal(many + "\r\n", 4), 431);
  EXPECT_EQ(Refusal(many + "\r\n", 5), 0);
}

TEST(HttpParserTest, FindsTheEndOfAHeadAcrossReads) {
  std::string buffer = "GET / HTTP/1.1\r\nA: b\r";
  EXPECT_EQ(ScanHead(buffer).end, std::string::npos);
  EXPECT_FALSE(ScanHead(buffer).bare_lf);
  size_t scanned = buffer.size();
  buffer += "\n\r\nGET /next";
  EXPECT_EQ(ScanHead(buffer, scanned).end, buffer.find("GET /next"));
}

// RFC 9112 2.2: a bare LF may be refused. It is, as soon as it arrives, instead of
// waiting for a CRLF CRLF that a client ending its lines in LF never sends.
TEST(HttpParserTest, ABareLfInTheHeadIsSeenAtOnce) {
  EXPECT_TRUE(ScanHead("GET / HTTP/1.1\nHost: h\n\n").bare_lf);
  EXPECT_TRUE(ScanHead("GET / HTTP/1.1\r\nHost: h\n").bare_lf);
  const std::string split = "GET / HTTP/1.1\r\nHost: h\r";
  EXPECT_FALSE(ScanHead(split).bare_lf);
  EXPECT_TRUE(ScanHead(split + "x\n", split.size()).bare_lf);
  // The body after the head is not the head's business.
  EXPECT_FALSE(ScanHead("POST / HTTP/1.1\r\nHost: h\r\n\r\nline\n").bare_lf);
}

TEST(HttpParserTest, RequestTargetsInEveryForm) {
  RequestHead absolute = Parse(
      "GET HTTP://Example.test:8787/v1/sheets?limit=2 HTTP/1.1\r\nHost: other\r\n\r\n");
  EXPECT_EQ(absolute.request.path, "/v1/sheets");
  EXPECT_EQ(absolute.request.target, "/v1/sheets?limit=2");
  EXPECT_EQ(absolute.request.get_param_value("limit"), "2");
  EXPECT_EQ(absolute.request.headers.count("Host"), 1u);
  EXPECT_EQ(absolute.request.get_header_value("Host"), "Example.test:8787");
  RequestHead bare = Parse("GET http://h HTTP/1.1\r\n\r\n");  // no Host needed
  EXPECT_EQ(bare.request.path, "/");
  RequestHead asterisk = Parse("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(asterisk.request.path, "*");
  RequestHead later = Parse("GET / HTTP/1.7\r\nHost: h\r\n\r\n");
  EXPECT_EQ(later.minor_version, 1);
}

TEST(HttpParserTest, HostIsRequiredOnceAndListFieldsAreReadWhole) {
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.0\r\n\r\n"), 0);  // 1.0 may omit it
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nHost: h\r\nContent-Type: a\r\nContent-Type: a"
                    "\r\n\r\n"),
            0);  // the same value twice
  for (const char* singleton : {"Origin", "Authorization", "Content-Type", "Range"}) {
    EXPECT_EQ(Refusal(std::string("GET / HTTP/1.1\r\nHost: h\r\n") + singleton +
                      ": a\r\n" + singleton + ": b\r\n\r\n"),
              400)
        << singleton;
  }
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n"
                     "Connection: close\r\n\r\n")
                   .keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close"
                     "\r\n\r\n")
                   .keep_alive);
  EXPECT_TRUE(Parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: x\r\nExpect: 100-continue"
                    "\r\n\r\n")
                  .expect_continue);
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nHost: h\r\nContent-Encoding: gzip\r\n"
                    "Content-Encoding: gzip\r\n\r\n"),
            415);
}

// Feeds `wire` to a chunked decoder `step` bytes at a time.
std::string DecodeChunked(const std::string& wire, size_t step, BodyDecoder::State* last,
                          size_t* used) {
  BodyDecoder decoder = BodyDecoder::Chunked();
  std::string body;
  std::string pending;
  size_t offset = 0;
  *used = 0;
  *last = BodyDecoder::State::kMore;
  while (*last == BodyDecoder::State::kMore && offset < wire.size()) {
    pending += wire.substr(offset, step);
    offset += step;
    size_t consumed = 0;
    *last = decoder.Decode(pending, &body, 1 << 20, &consumed);
    *used += consumed;
    pending.erase(0, consumed);
  }
  return body;
}

TEST(HttpParserTest, DecodesChunkedBodiesByteByByte) {
  const std::string wire =
      "5;ext=1\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\nTrailer: x\r\n\r\nNEXT";
  for (size_t step : {size_t{1}, size_t{3}, size_t{1000}}) {
    BodyDecoder::State state;
    size_t used = 0;
    EXPECT_EQ(DecodeChunked(wire, step, &state, &used), "hello world!") << step;
    EXPECT_EQ(state, BodyDecoder::State::kDone) << step;
    EXPECT_EQ(wire.substr(used), "NEXT") << step;  // the next request is left alone
  }
}

TEST(HttpParserTest, RefusesMalformedChunks) {
  for (const std::string& wire :
       {std::string("zz\r\nab\r\n"), std::string("2\r\nabc\r\n0\r\n\r\n"),
        std::string("2\nab\r\n"), std::string("1234567890abcdef0\r\n"),
        std::string(5000, '1'), std::string(" 2\r\nab\r\n0\r\n\r\n"),
        std::string("2 \r\nab\r\n0\r\n\r\n"), std::string("2;a=\rb\r\nab\r\n"),
        std::string("2;a\0b\r\nab\r\n", 10), std::string("2\r\nab\r\n0\r\nbad\r\n\r\n"),
        std::string("2\r\nab\r\n0\r\nA: x\x01\r\n\r\n")}) {
    BodyDecoder::State state;
    size_t used = 0;
    DecodeChunked(wire, 7, &state, &used);
    EXPECT_EQ(state, BodyDecoder::State::kError) << wire.substr(0, 40);
  }
}

TEST(HttpParserTest, DecoderNeverWritesMoreThanAllowed) {
  BodyDecoder decoder = BodyDecoder::Length(10);
  std::string body;
  size_t consumed = 0;
  EXPECT_EQ(decoder.Decode("0123456789tail", &body, 4, &consumed),
            BodyDecoder::State::kMore);
  EXPECT_EQ(body, "0123");
  EXPECT_EQ(consumed, 4u);
  EXPECT_EQ(decoder.Decode("456789tail", &body, 100, &consumed),
            BodyDecoder::State::kDone);
  EXPECT_EQ(body, "0123456789");
  EXPECT_EQ(consumed, 6u);
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(HttpParserTest, InflatesGzipInPieces) {
  const std::string original = "{\"a\": \"" + std::string(100000, 'x') + "\"}";
  const std::string packed = Gzip(original);
  GzipInflater inflater;
  std::string out;
  GzipInflater::State state = GzipInflater::State::kMore;
  for (size_t i = 0; i < packed.size(); i += 7) {
    state = inflater.Inflate(std::string_view(packed).substr(i, 7), &out, 1 << 20);
    ASSERT_NE(state, GzipInflater::State::kError) << inflater.error();
  }
  EXPECT_EQ(state, GzipInflater::State::kDone);
  EXPECT_EQ(out, original);
}

TEST(HttpParserTest, GzipBombStopsAtTheLimit) {
  const std::string packed = Gzip(std::string(64 << 20, '\0'));
  GzipInflater inflater;
  std::string out;
  EXPECT_EQ(inflater.Inflate(packed, &out, 1 << 20), GzipInflater::State::kTooLarge);
  EXPECT_LE(out.size(), (1u << 20) + 16384u);  // at most one step past the limit
}

TEST(HttpParserTest, RefusesDataThatIsNotGzip) {
  GzipInflater inflater;
  std::string out;
  EXPECT_EQ(inflater.Inflate("not gzip at all", &out, 1 << 20),
            GzipInflater::State::kError);
  EXPECT_FALSE(inflater.error().empty());
}

}  // namespace
}  // namespace sheetlog::api::http
