// Reads, caches and live updates across nodes (docs/cluster.md): three nodes on one
// PostgreSQL database and one bucket (tests/support/test_cluster.h). A read on one node
// right after another node acknowledged an append sees it (the entry, the cells at the
// head through the head-view cache), and the live event stream of every node carries
// every entry, whichever node wrote it (the shared change feed, woken across nodes by
// LISTEN/NOTIFY: docs/cluster.md "Wake-ups between nodes: LISTEN/NOTIFY").
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/sse_client.h"
#include "tests/support/test_cluster.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

constexpr int kReadNodes = 3;
constexpr int kCrossNodeAppends = 30;

// The seqs of the `entry` events received, in order.
std::vector<int64_t> StreamedEntrySeqs(const SseClient& stream) {
  std::vector<int64_t> seqs;
  for (const SseEvent& e : stream.events()) {
    if (e.event == "entry") seqs.push_back(std::stoll(e.id));
  }
  return seqs;
}

TEST(ClusterHttpTest, EveryNodeReadsWhatAnotherAcknowledgedAndStreamsIt) {
  if (std::string why = TestClusterUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  TestCluster cluster(kReadNodes);
  ASSERT_TRUE(cluster.StartAll());
  httplib::Client c0 = cluster.node(0).Client();
  httplib::Client c1 = cluster.node(1).Client();
  httplib::Client c2 = cluster.node(2).Client();
  httplib::Client* clients[kReadNodes] = {&c0, &c1, &c2};

  const std::string sheet = CreateSheet(c0);
  // A subscriber on every node, from the sheet's first entry.
  std::vector<std::unique_ptr<SseClient>> streams;
  for (int n = 0; n < kReadNodes; ++n) {
    streams.push_back(std::make_unique<SseClient>(
        cluster.node(n).port(), "/v1/sheets/" + sheet + "/events?from=0"));
    ASSERT_TRUE(streams.back()->connected()) << "node " << n;
  }

  int64_t newest = 0;
  for (int i = 1; i <= kCrossNodeAppends; ++i) {
    const int writer = i % kReadNodes;
    const int reader = (i + 1) % kReadNodes;
    const int64_t seq = SetCell(*clients[writer], sheet, "A1", i);
    ASSERT_GT(seq, newest);
    newest = seq;
    // At once, on another node: no wait, no retry.
    JsonResponse entry =
        Get(*clients[reader], "/v1/sheets/" + sheet + "/entries/" + std::to_string(seq));
    ASSERT_EQ(entry.status, 200) << "node " << reader << " does not see seq " << seq
                                 << ", which node " << writer << " acknowledged";
    JsonResponse cells = Get(*clients[reader], "/v1/sheets/" + sheet + "/cells?range=A1");
    ASSERT_EQ(cells.status, 200) << cells.raw;
    EXPECT_EQ(cells.body["rows"], json::array({json::array({i})}))
        << "node " << reader << "'s cells at the head after seq " << seq;
  }

  // Every node's stream carries every entry, in seq order, whoever wrote it.
  std::vector<int64_t> expected;
  for (int64_t seq = 0; seq <= newest; ++seq) expected.push_back(seq);
  for (int n = 0; n < kReadNodes; ++n) {
    SseClient& stream = *streams[n];
    EXPECT_TRUE(stream.ReadUntil([&](const std::vector<SseEvent>&) {
      std::vector<int64_t> seqs = StreamedEntrySeqs(stream);
      return !seqs.empty() && seqs.back() >= newest;
    })) << "node "
        << n << "'s stream stopped at "
        << (StreamedEntrySeqs(stream).empty() ? -1 : StreamedEntrySeqs(stream).back());
    EXPECT_EQ(StreamedEntrySeqs(stream), expected) << "node " << n;
  }
}

}  // namespace
}  // namespace sheetlog::testing
