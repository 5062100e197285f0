// What the background pipeline did, for operators watching it live
// (GET /v1/admin/events): job failures and skips of the runtime's mappings, snapshot
// worker outcomes, and changes of the queues' depths and dead letters.
//
// A bounded in-memory journal: every event gets the next id; the newest
// `capacity` events are kept, so a reconnecting operator resumes after the id it saw
// (or learns that it fell too far behind). Nothing here is durable: the queues, the
// execution history and verify are the record; this is the live view of them.
//
// Thread-safe. Listeners run under the journal's lock: they must be quick and must
// not call the journal.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sheetlog {

struct PipelineEvent {
  int64_t id = 0;    // increasing from 1
  std::string type;  // "job", "snapshot", "queues"
  nlohmann::json data;
};

class PipelineEvents {
 public:
  explicit PipelineEvents(size_t capacity = 1000) : capacity_(capacity) {}

  // Records an event (assigning its id) and hands it to every listener.
  void Publish(std::string type, nlohmann::json data);

  // The kept events with id > `after`, oldest first. `*complete` is false when events
  // after `after` were already dropped (the reader fell too far behind).
  std::vector<PipelineEvent> Since(int64_t after, bool* complete) const;
  int64_t last_id() const;

  int Subscribe(std::function<void(const PipelineEvent&)> listener);
  void Unsubscribe(int id);

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<PipelineEvent> events_;                                    // GUARDED_BY(mu_)
  int64_t last_id_ = 0;                                                 // GUARDED_BY(mu_)
  int next_listener_ = 1;                                               // GUARDED_BY(mu_)
  std::map<int, std::function<void(const PipelineEvent&)>> listeners_;  // GUARDED_BY(mu_)
};

}  // namespace sheetlog
