#include "emulator/metrics/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sheetlog {

namespace {

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.9g", v);
  }
  return buf;
}

// Label values escape backslash, double quote and newline (exposition format).
std::string EscapeLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string LabelText(const std::vector<std::string>& names, const LabelValues& values,
                      const std::string& extra_name = "",
                      const std::string& extra_value = "") {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    out += out.empty() ? "{" : ",";
    out += names[i] + "=\"" + EscapeLabel(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    out += out.empty() ? "{" : ",";
    out += extra_name + "=\"" + extra_value + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

}  // namespace

MetricFamily::MetricFamily(std::string name, std::string help, Type type,
                           std::vector<std::string> label_names,
                           std::vector<double> buckets)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)),
      bounds_(std::move(buckets)) {
  std::sort(bounds_.begin(), bounds_.end());
}

void MetricFamily::Add(const LabelValues& labels, double delta) {
  MutexLock lock(&mu_);
  series_[labels].value += delta;
}

void MetricFamily::Set(const LabelValues& labels, double value) {
  MutexLock lock(&mu_);
  series_[labels].value = value;
}

void MetricFamily::Observe(const LabelValues& labels, double value) {
  MutexLock lock(&mu_);
  Series& s = series_[labels];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size(), 0);
  auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  if (it != bounds_.end()) ++s.buckets[it - bounds_.begin()];
  s.sum += value;
  ++s.count;
}

void MetricFamily::Render(std::string* out) const {
  const char* type = type_ == Type::kCounter ? "counter"
                     : type_ == Type::kGauge ? "gauge"
                                             : "histogram";
  *out += "# HELP " + name_ + " " + EscapeHelp(help_) + "\n";
  *out += "# TYPE " + name_ + " " + type + "\n";
  MutexLock lock(&mu_);
  for (const auto& [labels, s] : series_) {
    if (type_ != Type::kHistogram) {
      *out += name_ + LabelText(label_names_, labels) + " " + FormatValue(s.value) + "\n";
      continue;
    }
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
      cumulative += i < s.buckets.size() ? s.buckets[i] : 0;
      *out += name_ + "_bucket" +
              LabelText(label_names_, labels, "le", FormatValue(bounds_[i])) + " " +
              std::to_string(cumulative) + "\n";
    }
    *out += name_ + "_bucket" + LabelText(label_names_, labels, "le", "+Inf") + " " +
            std::to_string(s.count) + "\n";
    *out += name_ + "_sum" + LabelText(label_names_, labels) + " " + FormatValue(s.sum) +
            "\n";
    *out += name_ + "_count" + LabelText(label_names_, labels) + " " +
            std::to_string(s.count) + "\n";
  }
}

MetricFamily& MetricsRegistry::GetOrCreate(const std::string& name,
                                           const std::string& help,
                                           MetricFamily::Type type,
                                           std::vector<std::string> labels,
                                           std::vector<double> buckets) {
  MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it != families_.end()) return *it->second;
  auto family = std::make_unique<MetricFamily>(name, help, type, std::move(labels),
                                               std::move(buckets));
  MetricFamily& ref = *family;
  families_.emplace(name, std::move(family));
  return ref;
}

MetricFamily& MetricsRegistry::Counter(const std::string& name, const std::string& help,
                                       std::vector<std::string> labels) {
  return GetOrCreate(name, help, MetricFamily::Type::kCounter, std::move(labels), {});
}

MetricFamily& MetricsRegistry::Gauge(const std::string& name, const std::string& help,
                                     std::vector<std::string> labels) {
  return GetOrCreate(name, help, MetricFamily::Type::kGauge, std::move(labels), {});
}

MetricFamily& MetricsRegistry::Histogram(const std::string& name, const std::string& help,
                                         std::vector<std::string> labels,
                                         std::vector<double> buckets) {
  return GetOrCreate(name, help, MetricFamily::Type::kHistogram, std::move(labels),
                     std::move(buckets));
}

void MetricsRegistry::AddCollector(std::function<void(MetricsRegistry&)> collector) {
  MutexLock lock(&mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Render() {
  std::vector<std::function<void(MetricsRegistry&)>> collectors;
  {
    MutexLock lock(&mu_);
    collectors = collectors_;
  }
  for (auto& collect : collectors) collect(*this);
  std::string out;
  MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) family->Render(&out);
  return out;
}

std::vector<double> MetricsRegistry::LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

}  // namespace sheetlog
