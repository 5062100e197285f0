// The HTTP/1.1 request parser of src/api/http/ (heads, chunked bodies, bounded gzip
// inflation), the route matcher, and the response channel streams are built on.
#include "src/api/http/http_parser.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>
#include <thread>

#include "src/api/http/response_channel.h"
#include "src/api/route_pattern.h"

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
  EXPECT_EQ(Parse("POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n").content_length, 12);
  EXPECT_TRUE(Parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").chunked);
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive);
  EXPECT_TRUE(Parse("POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").expect_continue);
  EXPECT_TRUE(Parse("POST / HTTP/1.1\r\nContent-Encoding: gzip\r\n\r\n").gzip);
}

TEST(HttpParserTest, RefusesMalformedAndAmbiguousHeads) {
  // Request smuggling: both framings, or two different lengths.
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nContent-Length: 5\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n"),
            400);
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
            400);
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(Refusal("POST / HTTP/1.1\r\nContent-Encoding: br\r\n\r\n"), 415);
  EXPECT_EQ(Refusal("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(Refusal("GET / FTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET http://x/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("G@T / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nNo colon\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n"), 400);
  EXPECT_EQ(Refusal("GET / HTTP/1.1\r\nA: x\x01y\r\n\r\n"), 400);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 5; ++i) many += "H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Refusal(many + "\r\n", 4), 431);
  EXPECT_EQ(Refusal(many + "\r\n", 5), 0);
}

TEST(HttpParserTest, FindsTheEndOfAHeadAcrossReads) {
  std::string buffer = "GET / HTTP/1.1\r\nA: b\r";
  EXPECT_EQ(FindHeadEnd(buffer), std::string::npos);
  size_t scanned = buffer.size();
  buffer += "\n\r\nGET /next";
  EXPECT_EQ(FindHeadEnd(buffer, scanned), buffer.find("GET /next"));
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
        std::string(5000, '1')}) {
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

TEST(RoutePatternTest, MatchesLikeRegexMatch) {
  std::vector<std::string> captures;
  RoutePattern sheet(R"(/v1/sheets/([^/]+)/entries/(\d+))");
  ASSERT_TRUE(sheet.Match("/v1/sheets/abc/entries/42", &captures));
  EXPECT_EQ(captures,
            (std::vector<std::string>{"/v1/sheets/abc/entries/42", "abc", "42"}));
  EXPECT_FALSE(sheet.Match("/v1/sheets/abc/entries/4x", &captures));
  EXPECT_FALSE(sheet.Match("/v1/sheets//entries/4", &captures));
  EXPECT_FALSE(sheet.Match("/v1/sheets/a/b/entries/4", &captures));
  RoutePattern blob(R"(/v1/blobs/(.+))");
  ASSERT_TRUE(blob.Match("/v1/blobs/a/b/c", &captures));
  EXPECT_EQ(captures[1], "a/b/c");
  EXPECT_FALSE(blob.Match("/v1/blobs/", &captures));
  RoutePattern console(R"(/console/(.*))");
  ASSERT_TRUE(console.Match("/console/", &captures));
  EXPECT_EQ(captures[1], "");
  RoutePattern exact("/v1/sheets");
  EXPECT_TRUE(exact.Match("/v1/sheets", &captures));
  EXPECT_FALSE(exact.Match("/v1/sheets/", &captures));
  EXPECT_THROW(RoutePattern("/a(b|c)"), std::logic_error);
}

TEST(ResponseChannelTest, StreamWriterReportsAFullBufferAndNeverBlocks) {
  auto channel = std::make_shared<ResponseChannel>(16, /*chunked=*/true);
  StreamWriter& writer = *channel;
  EXPECT_EQ(writer.Write("0123456789"), StreamWriter::WriteResult::kQueued);  // 15 B
  EXPECT_EQ(writer.Write("xx"), StreamWriter::WriteResult::kFull);
  std::string out;
  EXPECT_FALSE(channel->Take(&out));
  EXPECT_EQ(out, "a\r\n0123456789\r\n");
  EXPECT_EQ(writer.Write("y"), StreamWriter::WriteResult::kQueued);
  int closed_calls = 0;
  writer.OnClose([&] { ++closed_calls; });
  writer.Close("bye");
  EXPECT_EQ(writer.Write("z"), StreamWriter::WriteResult::kClosed);
  out.clear();
  EXPECT_TRUE(channel->Take(&out));  // complete
  EXPECT_EQ(out, "1\r\ny\r\n3\r\nbye\r\n0\r\n\r\n");
  channel->Break();  // the loop ends the response
  channel->Break();
  EXPECT_EQ(closed_calls, 1);
}

// The event loop tells a finished body (wait for its wake) from a broken one (close the
// connection) by broken(), never closed(), which is true for both.
TEST(ResponseChannelTest, AFinishedBodyIsClosedButNotBroken) {
  ResponseChannel channel(64, /*chunked=*/false);
  ASSERT_TRUE(channel.WriteBlocking("body"));
  channel.Finish();
  EXPECT_TRUE(channel.closed());
  EXPECT_FALSE(channel.broken());
  channel.Break();
  EXPECT_TRUE(channel.broken());
}

TEST(ResponseChannelTest, BlockingWriterIsReleasedWhenTheConnectionGoes) {
  auto channel = std::make_shared<ResponseChannel>(4, /*chunked=*/false);
  std::atomic<bool> result{true};
  std::thread producer([&] { result = channel->WriteBlocking("0123456789"); });
  std::string out;
  // The first four bytes arrive; the producer then waits for room until Break.
  while (out.empty()) channel->Take(&out);
  EXPECT_EQ(out.substr(0, 4), "0123");
  channel->Break();
  producer.join();
  EXPECT_FALSE(result.load());
}

}  // namespace
}  // namespace sheetlog::api::http
