#include "emulator/metrics/metrics.h"

#include <gtest/gtest.h>

namespace sheetlog {
namespace {

TEST(MetricsTest, RendersCountersGaugesAndHistogramsInPrometheusText) {
  MetricsRegistry registry;
  registry.Counter("requests_total", "Requests.", {"route", "status"})
      .Add({"/a", "200"}, 2);
  registry.Gauge("depth", "Queue depth.", {"queue"}).Set({"snap\"shot"}, 7);
  auto& h = registry.Histogram("latency_seconds", "Latency.", {}, {0.1, 1});
  h.Observe({}, 0.05);
  h.Observe({}, 0.5);
  h.Observe({}, 5);
  std::string text = registry.Render();
  EXPECT_NE(text.find("# TYPE requests_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("requests_total{route=\"/a\",status=\"200\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("depth{queue=\"snap\\\"shot\"} 7\n"), std::string::npos) << text;
  // Buckets are cumulative and end with +Inf = count.
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("latency_seconds_count 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("latency_seconds_sum 5.55\n"), std::string::npos) << text;
}

TEST(MetricsTest, CollectorsRefreshGaugesAtRender) {
  MetricsRegistry registry;
  int calls = 0;
  registry.AddCollector(
      [&](MetricsRegistry& r) { r.Gauge("collected", "Collected.").Set({}, ++calls); });
  EXPECT_NE(registry.Render().find("collected 1\n"), std::string::npos);
  EXPECT_NE(registry.Render().find("collected 2\n"), std::string::npos);
}

}  // namespace
}  // namespace sheetlog
