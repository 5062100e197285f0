#include "src/effects/pipeline_events.h"

namespace sheetlog {

void PipelineEvents::Publish(std::string type, nlohmann::json data) {
  std::lock_guard<std::mutex> lock(mu_);
  PipelineEvent event{++last_id_, std::move(type), std::move(data)};
  events_.push_back(event);
  while (events_.size() > capacity_) events_.pop_front();
  for (auto& [id, listener] : listeners_) listener(event);
}

std::vector<PipelineEvent> PipelineEvents::Since(int64_t after, bool* complete) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PipelineEvent> out;
  if (complete != nullptr) {
    *complete = events_.empty() || after >= events_.front().id - 1;
  }
  for (const PipelineEvent& event : events_) {
    if (event.id > after) out.push_back(event);
  }
  return out;
}

int64_t PipelineEvents::last_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_id_;
}

int PipelineEvents::Subscribe(std::function<void(const PipelineEvent&)> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  const int id = next_listener_++;
  listeners_[id] = std::move(listener);
  return id;
}

void PipelineEvents::Unsubscribe(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  listeners_.erase(id);
}

}  // namespace sheetlog
