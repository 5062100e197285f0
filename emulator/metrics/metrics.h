// emulator/metrics: the CloudWatch stand-in — counters, gauges and histograms with
// labels, rendered in the Prometheus text exposition format (version 0.0.4) for
// GET /metrics. Thread-safe; incrementing a series is a map lookup under a mutex plus
// an add, cheap enough for per-request use.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "emulator/env/mutex.h"

namespace sheetlog {

// Label values in the order the family declared its label names.
using LabelValues = std::vector<std::string>;

class MetricFamily {
 public:
  enum class Type { kCounter, kGauge, kHistogram };

  MetricFamily(std::string name, std::string help, Type type,
               std::vector<std::string> label_names, std::vector<double> buckets = {});

  // Counter/gauge: adds `delta` to the series.
  void Add(const LabelValues& labels, double delta = 1);
  // Gauge: sets the series.
  void Set(const LabelValues& labels, double value);
  // Histogram: records one observation.
  void Observe(const LabelValues& labels, double value);

  const std::string& name() const { return name_; }
  // Appends the family in Prometheus text format.
  void Render(std::string* out) const;

 private:
  struct Series {
    double value = 0;               // counter / gauge
    std::vector<uint64_t> buckets;  // histogram: cumulative counts rendered from these
    double sum = 0;
    uint64_t count = 0;
  };

  std::string name_;
  std::string help_;
  Type type_;
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  mutable Mutex mu_;
  std::map<LabelValues, Series> series_ GUARDED_BY(mu_);
};

class MetricsRegistry {
 public:
  // Returns the family of that name, creating it on first use. REQUIRES: the same type
  // and label names on every call for one name.
  MetricFamily& Counter(const std::string& name, const std::string& help,
                        std::vector<std::string> labels = {});
  MetricFamily& Gauge(const std::string& name, const std::string& help,
                      std::vector<std::string> labels = {});
  MetricFamily& Histogram(const std::string& name, const std::string& help,
                          std::vector<std::string> labels, std::vector<double> buckets);

  // Called at the start of every Render(), to refresh gauges read from elsewhere
  // (queue depths, feed lag, blob counts).
  void AddCollector(std::function<void(MetricsRegistry&)> collector);

  // The whole registry in Prometheus text format.
  std::string Render();

  // Latency buckets in seconds: 100 µs .. 10 s.
  static std::vector<double> LatencyBuckets();

 private:
  MetricFamily& GetOrCreate(const std::string& name, const std::string& help,
                            MetricFamily::Type type, std::vector<std::string> labels,
                            std::vector<double> buckets);

  Mutex mu_;
  std::map<std::string, std::unique_ptr<MetricFamily>> families_ GUARDED_BY(mu_);
  std::vector<std::function<void(MetricsRegistry&)>> collectors_ GUARDED_BY(mu_);
};

}  // namespace sheetlog
