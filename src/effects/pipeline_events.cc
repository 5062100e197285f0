#include "src/effects/pipeline_events.h"

#include <charconv>
#include <cstdio>
#include <random>

namespace sheetlog {

namespace {

std::string RandomEpoch() {
  std::random_device random;
  const uint64_t value = (static_cast<uint64_t>(random()) << 32) ^ random();
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

}  // namespace

PipelineEvents::PipelineEvents(size_t capacity, std::string epoch)
    : capacity_(capacity), epoch_(epoch.empty() ? RandomEpoch() : std::move(epoch)) {}

std::string PipelineEvents::IdOf(int64_t number) const {
  return epoch_ + "-" + std::to_string(number);
}

std::optional<int64_t> PipelineEvents::ParseId(std::string_view id) const {
  if (id.size() <= epoch_.size() + 1 || id.substr(0, epoch_.size()) != epoch_ ||
      id[epoch_.size()] != '-') {
    return std::nullopt;
  }
  const std::string_view digits = id.substr(epoch_.size() + 1);
  int64_t number = 0;
  auto [end, error] =
      std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (error != std::errc() || end != digits.data() + digits.size() || number < 0) {
    return std::nullopt;
  }
  return number;
}

void PipelineEvents::Publish(std::string type, nlohmann::json data) {
  MutexLock lock(&mu_);
  ++last_number_;
  PipelineEvent event{last_number_, IdOf(last_number_), std::move(type), std::move(data)};
  events_.push_back(event);
  while (events_.size() > capacity_) events_.pop_front();
  for (auto& [id, listener] : listeners_) listener(event);
}

std::vector<PipelineEvent> PipelineEvents::Since(int64_t after, bool* complete) const {
  MutexLock lock(&mu_);
  std::vector<PipelineEvent> out;
  if (complete != nullptr) {
    *complete = events_.empty() || after >= events_.front().number - 1;
  }
  for (const PipelineEvent& event : events_) {
    if (event.number > after) out.push_back(event);
  }
  return out;
}

int64_t PipelineEvents::last_number() const {
  MutexLock lock(&mu_);
  return last_number_;
}

int PipelineEvents::SubscribeAfter(
    int64_t after,
    const std::function<void(bool complete, const std::string& first)>& on_backlog,
    Listener listener) {
  MutexLock lock(&mu_);
  const bool complete = events_.empty() || after >= events_.front().number - 1;
  on_backlog(complete, events_.empty() ? std::string() : events_.front().id);
  for (const PipelineEvent& event : events_) {
    if (event.number > after) listener(event);
  }
  const int id = next_listener_++;
  listeners_[id] = std::move(listener);
  return id;
}

int PipelineEvents::Subscribe(Listener listener) {
  MutexLock lock(&mu_);
  const int id = next_listener_++;
  listeners_[id] = std::move(listener);
  return id;
}

void PipelineEvents::Unsubscribe(int id) {
  MutexLock lock(&mu_);
  listeners_.erase(id);
}

}  // namespace sheetlog
