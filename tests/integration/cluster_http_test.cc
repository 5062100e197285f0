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

// A truncation on one node deletes the snapshot another node's loaded view starts
// from, and nothing tells that node: its next read at the head finds the snapshot's
// chunk gone and opens the view again (HeadViewCache::Reopen), answering what it
// answered before the cut plus the entry since.
TEST(ClusterHttpTest, AHeadViewWhoseSnapshotAnotherNodeTruncatedAwayIsOpenedAgain) {
  if (std::string why = TestClusterUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  TestCluster cluster(2);
  ASSERT_TRUE(cluster.StartAll());
  httplib::Client writer = cluster.node(0).Client();
  httplib::Client reader = cluster.node(1).Client();
  const std::string sheet = CreateSheet(writer);
  for (int i = 1; i <= 3; ++i) {
    ASSERT_NO_FATAL_FAILURE(SetCell(writer, sheet, "A" + std::to_string(i), i));
  }
  const int64_t snapshot = TakeSnapshot(writer, sheet);  // seq 4
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_TRUE(WaitForSnapshot(cluster.node(0), writer, sheet, snapshot));
  ASSERT_NO_FATAL_FAILURE(SetCell(writer, sheet, "A4", 4));  // seq 5
  const std::string cells = "/v1/sheets/" + sheet + "/cells?range=A1:B4";
  JsonResponse before = Get(reader, cells);  // node 1 loads the head from seq 4
  ASSERT_EQ(before.status, 200) << before.raw;
  ASSERT_EQ(before.body["at_seq"], 5) << before.raw;
  const std::string root = ReadAllEntries(writer, sheet)[4]["snapshot_root"];
  JsonResponse cut =
      Post(writer, "/v1/sheets/" + sheet + "/truncate", {{"before_seq", 5}});
  ASSERT_EQ(cut.status, 200) << cut.raw;
  JsonResponse gone;
  ASSERT_TRUE(Eventually([&] {
    gone = Get(writer, "/v1/blobs/" + root);
    return gone.status == 404;
  })) << "seq 4's snapshot objects are deleted: "
      << gone.status;
  ASSERT_NO_FATAL_FAILURE(SetCell(writer, sheet, "B1", 5));  // seq 6
  const std::string reopened = R"(sheetlog_head_view_reads{how="reopened"})";
  EXPECT_EQ(MetricSample(reader, reopened), 0);
  JsonResponse after = Get(reader, cells);
  ASSERT_EQ(after.status, 200) << after.raw;
  EXPECT_EQ(after.body["at_seq"], 6);
  ASSERT_EQ(after.body["rows"].size(), 4u) << after.raw;
  for (size_t row = 0; row < 4; ++row) {
    EXPECT_EQ(after.body["rows"][row][0], before.body["rows"][row][0]) << after.raw;
  }
  EXPECT_EQ(after.body["rows"][0][1], 5) << after.raw;
  EXPECT_EQ(MetricSample(reader, reopened), 1);
}

}  // namespace
}  // namespace sheetlog::testing
