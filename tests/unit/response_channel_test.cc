// The response channel (src/api/http/response_channel.h) a body travels through from
// its producer to the event loop, the content pump that feeds it from a provider
// without ever blocking a worker (content_pump.h), and the framing every response gets
// (response_framing.h). Driven directly, the test playing the event loop.
#include "src/api/http/response_channel.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <string>

#include "src/api/http/content_pump.h"
#include "src/api/http/response_framing.h"

namespace sheetlog::api::http {
namespace {

TEST(ResponseChannelTest, StreamWriterReportsAFullBufferAndNeverBlocks) {
  auto channel = std::make_shared<ResponseChannel>(16);
  StreamWriter& writer = *channel;
  EXPECT_EQ(writer.Write("0123456789"), StreamWriter::WriteResult::kQueued);
  EXPECT_EQ(writer.Write("0123456789"), StreamWriter::WriteResult::kFull);
  std::string out;
  channel->Attach(/*chunked=*/true, [] {});
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
  out.clear();
  EXPECT_TRUE(channel->Take(&out));  // the last chunk goes out once
  EXPECT_EQ(out, "");
  channel->Break();  // the loop ends the response
  channel->Break();
  EXPECT_EQ(closed_calls, 1);
}

// The framing is the loop's choice, made after the handler wrote (HTTP/1.0 has no
// chunked coding): bytes written before Attach are framed as Attach says.
TEST(ResponseChannelTest, BytesWrittenBeforeAttachTakeTheFramingAttachChooses) {
  ResponseChannel channel(64);
  ASSERT_EQ(channel.Write("early"), StreamWriter::WriteResult::kQueued);
  channel.Attach(/*chunked=*/false, [] {});
  ASSERT_EQ(channel.Write(" late"), StreamWriter::WriteResult::kQueued);
  channel.Finish();
  std::string out;
  EXPECT_TRUE(channel.Take(&out));
  EXPECT_EQ(out, "early late");  // as they are, no last chunk
}

// The event loop tells a finished body (wait for its wake) from a broken one (close the
// connection) by broken(), never closed(), which is true for both.
TEST(ResponseChannelTest, AFinishedBodyIsClosedButNotBroken) {
  ResponseChannel channel(64);
  ASSERT_TRUE(channel.Append("body"));
  channel.Finish();
  EXPECT_TRUE(channel.closed());
  EXPECT_FALSE(channel.broken());
  channel.Break();
  EXPECT_TRUE(channel.broken());
  EXPECT_FALSE(channel.Append("more"));
}

// A pump's worker queue, run by the test when it chooses (the server's is a pool).
struct ManualWorkers {
  std::deque<std::function<void()>> tasks;
  ContentPump::Submit submit() {
    return [this](std::function<void()> task) { tasks.push_back(std::move(task)); };
  }
  bool RunOne() {
    if (tasks.empty()) return false;
    std::function<void()> task = std::move(tasks.front());
    tasks.pop_front();
    task();
    return true;
  }
};

Response SizedResponse(size_t length, size_t piece, int* calls) {
  Response response;
  response.set_content_provider(
      length, "text/plain",
      [piece, calls](size_t offset, size_t remaining, DataSink& sink) {
        ++*calls;
        std::string bytes(std::min(piece, remaining),
                          static_cast<char>('a' + offset % 26));
        return sink.write(bytes.data(), bytes.size());
      });
  return response;
}

// The pump stops calling the provider once the channel holds its limit, so the worker
// is free; the loop's Take submits the next slice. Memory stays within the limit plus
// one provider call.
TEST(ContentPumpTest, ParksWhenTheBufferIsFullAndResumesOnTake) {
  int calls = 0;
  Response response = SizedResponse(1000, 100, &calls);
  auto channel = std::make_shared<ResponseChannel>(250);
  channel->Attach(/*chunked=*/false, [] {});
  auto pump = std::make_shared<ContentPump>(response, channel);
  ManualWorkers workers;
  pump->RunSlice(workers.submit());
  EXPECT_EQ(calls, 3);  // 300 bytes >= 250: parked
  EXPECT_EQ(channel->buffered(), 300u);
  EXPECT_TRUE(workers.tasks.empty());  // nothing runs until the loop takes

  std::string body;
  std::string out;
  while (!channel->Take(&out)) {
    body += out;
    out.clear();
    EXPECT_LE(channel->buffered(), 350u);
    ASSERT_TRUE(workers.RunOne()) << "the pump did not resume after Take";
  }
  body += out;
  EXPECT_EQ(body.size(), 1000u);
  EXPECT_EQ(calls, 10);
}

TEST(ContentPumpTest, ABrokenChannelDropsAParkedPumpAndItsProvider) {
  int calls = 0;
  Response response = SizedResponse(1000, 100, &calls);
  auto channel = std::make_shared<ResponseChannel>(150);
  channel->Attach(/*chunked=*/false, [] {});
  std::weak_ptr<ContentPump> weak;
  {
    auto pump = std::make_shared<ContentPump>(response, channel);
    weak = pump;
    ManualWorkers workers;
    pump->RunSlice(workers.submit());
  }
  EXPECT_FALSE(weak.expired());  // parked in the channel
  channel->Break();              // the client went away
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(calls, 2);
}

TEST(ContentPumpTest, AProviderThatFailsOrThrowsBreaksTheBody) {
  for (bool throws : {false, true}) {
    Response response;
    response.set_chunked_content_provider("text/plain", [throws](size_t, DataSink&) {
      if (throws) throw std::runtime_error("disk gone");
      return false;
    });
    auto channel = std::make_shared<ResponseChannel>(100);
    auto pump = std::make_shared<ContentPump>(response, channel);
    ManualWorkers workers;
    pump->RunSlice(workers.submit());
    EXPECT_TRUE(channel->broken()) << throws;
  }
  // A sized provider that writes nothing would loop for ever: it breaks too.
  Response stuck;
  stuck.set_content_provider(10, "text/plain",
                             [](size_t, size_t, DataSink&) { return true; });
  auto channel = std::make_shared<ResponseChannel>(100);
  auto pump = std::make_shared<ContentPump>(stuck, channel);
  ManualWorkers workers;
  pump->RunSlice(workers.submit());
  EXPECT_TRUE(channel->broken());
}

std::string HeadOf(const RequestFacts& facts, Response response,
                   bool server_close = false, PreparedResponse* out = nullptr) {
  PreparedResponse prepared = PrepareResponse(facts, response, server_close, 1 << 20);
  std::string head = prepared.head;
  if (out) *out = std::move(prepared);
  return head;
}

TEST(ResponseFramingTest, OnePlaceDecidesLengthChunkingAndTheConnection) {
  RequestFacts get;
  RequestFacts head_request;
  head_request.head = true;
  RequestFacts http10;
  http10.minor_version = 0;
  http10.keep_alive = false;

  Response text;
  text.set_content("hello", "text/plain");
  text.set_header("Content-Length", "999");  // a handler cannot frame
  text.set_header("Connection", "upgrade");
  PreparedResponse prepared;
  std::string head = HeadOf(get, text, false, &prepared);
  EXPECT_NE(head.find("Content-Length: 5\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("999"), std::string::npos) << head;
  EXPECT_EQ(head.find("upgrade"), std::string::npos) << head;
  EXPECT_EQ(prepared.body, "hello");
  EXPECT_FALSE(prepared.close_after);

  head = HeadOf(head_request, text, false, &prepared);
  EXPECT_NE(head.find("Content-Length: 5\r\n"), std::string::npos) << head;
  EXPECT_EQ(prepared.body, "");

  Response chunked;
  chunked.set_chunked_content_provider("text/csv",
                                       [](size_t, DataSink&) { return true; });
  head = HeadOf(get, chunked, false, &prepared);
  EXPECT_NE(head.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << head;
  EXPECT_TRUE(prepared.chunked);
  EXPECT_NE(prepared.pump, nullptr);
  head = HeadOf(head_request, chunked, false, &prepared);
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
  EXPECT_EQ(prepared.pump, nullptr);  // never run for HEAD
  EXPECT_EQ(prepared.channel, nullptr);
  EXPECT_FALSE(prepared.close_after);
  head = HeadOf(http10, chunked, false, &prepared);
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos) << head;
  EXPECT_FALSE(prepared.chunked);
  EXPECT_TRUE(prepared.close_after);

  Response no_content;
  no_content.status = 204;
  head = HeadOf(get, no_content, true, &prepared);
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close\r\n"), std::string::npos) << head;
  EXPECT_TRUE(prepared.close_after);

  RequestFacts http10_keep_alive = http10;
  http10_keep_alive.keep_alive = true;
  head = HeadOf(http10_keep_alive, text);
  EXPECT_NE(head.find("Connection: keep-alive\r\n"), std::string::npos) << head;
}

TEST(ResponseFramingTest, AHeaderThatWouldSplitTheResponseMakesItA500) {
  for (const std::string& value :
       {std::string("a\r\nSet-Cookie: x"), std::string("a\nb"), std::string("a\0b", 3)}) {
    Response response;
    response.set_content("body", "text/plain");
    response.set_header("X-Echo", value);
    PreparedResponse prepared;
    std::string head = HeadOf(RequestFacts{}, response, false, &prepared);
    EXPECT_EQ(head.rfind("HTTP/1.1 500 ", 0), 0u) << head;
    EXPECT_EQ(head.find("X-Echo"), std::string::npos) << head;
    EXPECT_EQ(head.find("Set-Cookie"), std::string::npos) << head;
  }
  Response bad_name;
  bad_name.set_content("body", "text/plain");
  bad_name.set_header("X Echo", "v");
  EXPECT_EQ(HeadOf(RequestFacts{}, bad_name).rfind("HTTP/1.1 500 ", 0), 0u);
}

TEST(ResponseFramingTest, HeadEndsAStreamAtOnce) {
  Response response;
  std::shared_ptr<StreamWriter> writer = response.StartStream("text/event-stream");
  bool closed = false;
  writer->OnClose([&] { closed = true; });
  RequestFacts head_request;
  head_request.head = true;
  PreparedResponse prepared;
  HeadOf(head_request, std::move(response), false, &prepared);
  EXPECT_TRUE(closed);
  EXPECT_EQ(writer->Write("x"), StreamWriter::WriteResult::kClosed);
  EXPECT_EQ(prepared.channel, nullptr);
}

}  // namespace
}  // namespace sheetlog::api::http
