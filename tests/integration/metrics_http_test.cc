// GET /metrics on the real binary after a small workload: every expected metric
// family is there with the expected labels, and the whole output
// passes `promtool check metrics` (Debian package `prometheus`, installed by
// scripts/test).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/support/api_client.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace sheetlog::testing {
namespace {

using nlohmann::json;

class MetricsHttpTest : public ApiTest {
 protected:
  void SetUp() override {
    StartServer(
        ServerOptions(dir_.path(), {"--clock", "manual", "--inline-limit", "100"}));
  }

  std::string Metrics() {
    httplib::Result r = client_->Get("/metrics");
    EXPECT_TRUE(r);
    if (!r) return "";
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4");
    return r->body;
  }

  // The value of the one sample whose line starts with `series` (name{labels}).
  std::optional<double> Sample(const std::string& text, const std::string& series) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size()));
    }
    return std::nullopt;
  }
};

TEST_F(MetricsHttpTest, CoversTheOperationsFamiliesAndPassesPromtool) {
  const std::string id = CreateSheet(*client_, /*snapshot_every=*/2);
  ASSERT_FALSE(HasFatalFailure());
  for (int i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(SetCell(*client_, id, "A1", i));
  EXPECT_EQ(Get(*client_, "/v1/sheets/00000000-0000-4000-8000-000000000000").status, 404);
  ASSERT_TRUE(Eventually([&] {
    AdvanceClockWhenIdle(*client_, 6);
    return Sample(Metrics(), R"(sheetlog_pending_snapshots)") == 0.0 &&
           Sample(Metrics(),
                  R"(sheetlog_snapshot_messages_total{outcome="completed"})") >= 2.0;
  })) << Metrics();

  const std::string text = Metrics();
  // Requests by route and status, with latency histograms.
  EXPECT_EQ(
      Sample(
          text,
          R"(sheetlog_http_requests_total{route="/v1/sheets/([^/]+)/entries",method="POST",status="201"})"),
      3.0)
      << text;
  EXPECT_TRUE(Sample(
      text,
      R"(sheetlog_http_request_duration_seconds_count{route="/v1/sheets/([^/]+)/entries",method="POST"})"))
      << text;
  // Appends: the three SetCells and the Snapshot entry the policy added after them.
  EXPECT_EQ(Sample(text, "sheetlog_appends"), 4.0) << text;
  // Queues: depth, in flight, dead letters.
  EXPECT_EQ(Sample(text, R"(sheetlog_queue_visible{queue="snapshots"})"), 0.0) << text;
  EXPECT_EQ(Sample(text, R"(sheetlog_queue_in_flight{queue="snapshots"})"), 0.0) << text;
  EXPECT_EQ(Sample(text, R"(sheetlog_queue_dead_letter_depth{queue="snapshots"})"), 0.0)
      << text;
  // Change-feed lag per shard, records and age.
  EXPECT_NE(text.find(R"(sheetlog_feed_lag_records{consumer="entry-effects",shard=")"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(R"(sheetlog_feed_lag_age_seconds{consumer="entry-effects",shard=")"),
      std::string::npos)
      << text;
  // Snapshot durations, blobs, sweeper, request units by table.
  EXPECT_TRUE(Sample(
      text,
      R"(sheetlog_snapshot_invocation_duration_seconds_count{outcome="completed"})"))
      << text;
  EXPECT_GE(Sample(text, "sheetlog_blob_objects").value_or(0), 2.0) << text;
  EXPECT_TRUE(Sample(text, "sheetlog_blob_bytes")) << text;
  EXPECT_TRUE(Sample(text, "sheetlog_sweeper_deleted_objects")) << text;
  EXPECT_GT(Sample(text, R"(sheetlog_request_units_total{table="entry",kind="wru"})")
                .value_or(0),
            0.0)
      << text;

  // This node's clock against the database's: 0 on the manual clock, where
  // leases use the node's own clock.
  EXPECT_EQ(Sample(text, "sheetlog_clock_skew_seconds"), 0.0) << text;

  const std::string path = dir_.File("metrics.txt");
  std::ofstream(path) << text;
  const std::string command = "promtool check metrics < '" + path + "' 2>&1";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "promtool check metrics failed on:\n" << text;
}

}  // namespace
}  // namespace sheetlog::testing
