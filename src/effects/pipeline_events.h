// What the background pipeline did, for operators watching it live
// (GET /v1/admin/events): job failures and skips of the runtime's mappings, snapshot
// worker outcomes, and changes of the queues' depths and dead letters.
//
// A bounded in-memory journal: every event gets the next number; the newest
// `capacity` events are kept, so a reconnecting operator resumes after the id it saw
// (or learns that it fell too far behind). Nothing here is durable: the queues, the
// execution history and verify are the record; this is the live view of them.
//
// Because the journal starts empty with every process, an event's id is
// "<epoch>-<number>": the epoch is random per journal (per server start), so an id
// seen before a restart is never mistaken for one of this journal (which would
// silently skip events); ParseId tells the caller it is foreign, and the caller says
// "gap" and replays everything kept.
//
// Thread-safe. Listeners run under the journal's lock: they must be quick and must
// not call the journal.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/env/mutex.h"

namespace sheetlog {

struct PipelineEvent {
  int64_t number = 0;  // increasing from 1 within the journal
  std::string id;      // "<epoch>-<number>": unique across restarts
  std::string type;    // "job", "snapshot", "queues"
  nlohmann::json data;
};

class PipelineEvents {
 public:
  using Listener = std::function<void(const PipelineEvent&)>;

  // `epoch` empty: a random one (16 hex digits).
  explicit PipelineEvents(size_t capacity = 1000, std::string epoch = "");

  const std::string& epoch() const { return epoch_; }
  // The id of number `number` in this journal.
  std::string IdOf(int64_t number) const;
  // The number of an id of this journal; nullopt for an id of another epoch (an
  // earlier server start) or text that is no id at all.
  std::optional<int64_t> ParseId(std::string_view id) const;

  // Records an event (assigning its id) and hands it to every listener.
  void Publish(std::string type, nlohmann::json data);

  // The kept events with number > `after`, oldest first. `*complete` is false when
  // events after `after` were already dropped (the reader fell too far behind).
  std::vector<PipelineEvent> Since(int64_t after, bool* complete) const;
  int64_t last_number() const;

  // Atomically: hands `listener` the kept events with number > `after` (oldest first;
  // `on_backlog(complete, first_kept_id)` runs before them, `complete` as in Since),
  // then subscribes it to every later event, so the listener sees each event once and
  // in order. Returns the id for Unsubscribe.
  int SubscribeAfter(
      int64_t after,
      const std::function<void(bool complete, const std::string& first)>& on_backlog,
      Listener listener);
  int Subscribe(Listener listener);
  void Unsubscribe(int id);

 private:
  const size_t capacity_;
  const std::string epoch_;
  mutable Mutex mu_;
  std::deque<PipelineEvent> events_ GUARDED_BY(mu_);
  int64_t last_number_ GUARDED_BY(mu_) = 0;
  int next_listener_ GUARDED_BY(mu_) = 1;
  std::map<int, Listener> listeners_ GUARDED_BY(mu_);
};

}  // namespace sheetlog
