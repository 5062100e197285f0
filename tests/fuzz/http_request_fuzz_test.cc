// Fuzzes the HTTP/1.1 request parser of src/api/http/http_parser.h the way a connection
// drives it: locate the head, parse it, remove the body's framing, inflate gzip, and go
// on with the next pipelined request. Whatever the bytes: no crash; a refusal is one of
// the documented statuses with a short message; nothing grows past the limits given
// (body bytes, inflated bytes); a decoder never consumes past its input; and the head's
// end and the decoded body are the same whether the bytes arrive at once or in pieces.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "src/api/http/http_parser.h"
#include "tests/support/fuzz_inputs.h"

namespace sheetlog::testing {
namespace {

using api::http::BodyDecoder;
using api::http::GzipInflater;
using api::http::HeadScan;
using api::http::ParseError;
using api::http::RequestHead;

constexpr size_t kMaxHeaders = 100;
constexpr size_t kMaxBody = 64 << 10;
constexpr size_t kMaxInflated = 256 << 10;
// A refusal quotes what it refuses (an unknown content coding whole), so the bound is
// the input's size plus a sentence: an error must never amplify what the client sent
// (the server bounds the head itself).
constexpr size_t kMaxHeadMessageOverhead = 1024;
constexpr int kMaxPipelined = 8;

// ScanHead over growing prefixes, resuming each search where the last one stopped,
// as a connection reading `piece` bytes at a time does: it stops at the end of the head
// or at the first bare LF (refused at once).
HeadScan ScanHeadInPieces(std::string_view bytes, size_t piece) {
  size_t searched = 0;
  for (size_t length = std::min(piece, bytes.size());; length += piece) {
    length = std::min(length, bytes.size());
    const std::string_view prefix = bytes.substr(0, length);
    const HeadScan scan = api::http::ScanHead(prefix, searched);
    if (scan.end != std::string_view::npos || scan.bare_lf) return scan;
    // The last three bytes may start the blank line that ends the head.
    searched = length >= 3 ? length - 3 : 0;
    if (length == bytes.size()) return scan;
  }
}

struct Decoded {
  BodyDecoder::State state = BodyDecoder::State::kMore;
  std::string body;
  size_t consumed = 0;
  std::string error;
};

Decoded DecodeBody(const RequestHead& head, std::string_view input, size_t piece) {
  BodyDecoder decoder =
      head.chunked ? BodyDecoder::Chunked() : BodyDecoder::Length(head.content_length);
  Decoded out;
  while (out.consumed < input.size() || out.state == BodyDecoder::State::kMore) {
    const std::string_view next =
        input.substr(out.consumed, std::min(piece, input.size() - out.consumed));
    size_t used = 0;
    const size_t before = out.body.size();
    out.state = decoder.Decode(next, &out.body, kMaxBody - out.body.size(), &used);
    EXPECT_LE(used, next.size()) << "a decoder consumed past its input";
    EXPECT_LE(out.body.size(), kMaxBody);
    out.consumed += std::min(used, next.size());
    if (out.state != BodyDecoder::State::kMore) break;
    // No progress with all the input given: it needs more than there is.
    if (used == 0 && out.body.size() == before &&
        out.consumed + next.size() >= input.size()) {
      break;
    }
    if (out.body.size() >= kMaxBody) break;
  }
  if (out.state == BodyDecoder::State::kError) {
    out.error = decoder.error();
    EXPECT_FALSE(out.error.empty());
    EXPECT_LE(out.error.size(), input.size() + kMaxHeadMessageOverhead);
  }
  return out;
}

void CheckRequests(const std::string& bytes) {
  std::string_view rest = bytes;
  for (int request = 0; request < kMaxPipelined && !rest.empty(); ++request) {
    const HeadScan scan = api::http::ScanHead(rest);
    const size_t end = scan.end;
    // Byte by byte for small inputs; big ones (deep-nesting mutants) in larger pieces,
    // which keeps the whole run within its time budget.
    const bool small = rest.size() <= 16 << 10;
    for (const size_t piece :
         {small ? size_t{1} : size_t{1021}, small ? size_t{13} : size_t{4093}}) {
      const HeadScan pieces = ScanHeadInPieces(rest, piece);
      EXPECT_EQ(pieces.end, end) << piece;
      EXPECT_EQ(pieces.bare_lf, scan.bare_lf) << piece;
    }
    if (end == std::string_view::npos) return;
    ASSERT_LE(end, rest.size());
    RequestHead head;
    ParseError error;
    if (!api::http::ParseRequestHead(rest.substr(0, end), kMaxHeaders, &head, &error)) {
      static const std::set<int> kStatuses = {400, 413, 414, 415, 431, 501, 505};
      EXPECT_TRUE(kStatuses.count(error.status)) << error.status << " " << error.message;
      EXPECT_FALSE(error.message.empty());
      EXPECT_LE(error.message.size(), rest.size() + kMaxHeadMessageOverhead);
      return;  // the connection answers and closes
    }
    EXPECT_FALSE(head.request.method.empty());
    EXPECT_TRUE(head.minor_version == 0 || head.minor_version == 1) << head.minor_version;
    EXPECT_GE(head.content_length, 0);
    EXPECT_LE(head.request.path.size(), head.request.target.size());
    for (bool plus : {false, true}) {
      EXPECT_LE(api::http::PercentDecode(head.request.target, plus).size(),
                head.request.target.size());
    }
    rest = rest.substr(end);
    if (!head.has_body()) continue;
    const Decoded whole = DecodeBody(head, rest, rest.size() + 1);
    const Decoded split = DecodeBody(head, rest, rest.size() <= 16 << 10 ? 3 : 997);
    EXPECT_EQ(split.state, whole.state);
    EXPECT_EQ(split.body, whole.body);
    // After an error the connection closes: where the decoder stopped does not matter.
    if (whole.state != BodyDecoder::State::kError) {
      EXPECT_EQ(split.consumed, whole.consumed);
    }
    EXPECT_EQ(split.error, whole.error);
    if (whole.state != BodyDecoder::State::kDone) return;
    if (head.gzip) {
      GzipInflater inflater;
      std::string inflated;
      const GzipInflater::State state =
          inflater.Inflate(whole.body, &inflated, kMaxInflated);
      EXPECT_LE(inflated.size(), kMaxInflated) << "inflated past the limit";
      if (state == GzipInflater::State::kError) {
        EXPECT_FALSE(inflater.error().empty());
      }
    }
    rest = rest.substr(whole.consumed);
  }
}

TEST(HttpRequestFuzzTest, CorpusAndMutants) {
  FuzzDictionary dictionary;
  dictionary.tokens = {"\r\n",
                       "\r\n\r\n",
                       "\n",
                       ": ",
                       "Content-Length: ",
                       "Transfer-Encoding: chunked\r\n",
                       "Content-Encoding: gzip\r\n",
                       "Expect: 100-continue\r\n",
                       "Connection: close\r\n",
                       "0\r\n\r\n",
                       "ffffffffffffffff\r\n",
                       "-1",
                       "18446744073709551616",
                       " HTTP/1.1",
                       " HTTP/1.0",
                       " HTTP/2.0",
                       "%",
                       "%00",
                       "%FF",
                       "?a=b&c",
                       "+",
                       "\t",
                       "\x1f\x8b\x08\x00"};
  dictionary.nest_open = "X-A: b\r\n";
  dictionary.nest_close = "";
  const int64_t ran =
      FuzzCorpus("http_request", FuzzMutations(500), 0x477, dictionary, CheckRequests);
  EXPECT_GT(ran, 500);
}

}  // namespace
}  // namespace sheetlog::testing
