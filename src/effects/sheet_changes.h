// Live changes of sheets for subscribers (seed 004's event-carried state transfer):
// the hub tails the entry table's change feed — the outbox written in the same
// transaction as each entry — and tells the subscribers of a sheet what changed, so
// nothing is ever announced that did not commit.
//
// It keeps no checkpoint: it starts at the feed's head when started, and subscribers
// read the state they need from the log (entries are immutable and ordered), so a
// notification is a hint to read, never the data itself. Records pruned before the hub
// read them (a hub far behind) become a kResync for every subscriber.
//
// Thread-safe. Listeners run on the hub's thread under its lock, so once Unsubscribe
// returns the listener never runs again; they must be quick (mark work, wake a
// worker) and must not call the hub.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "emulator/env/clock.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/stream/change_feed.h"

namespace sheetlog {

struct SheetChange {
  enum class Kind {
    kAppended,  // a new entry (seq)
    kModified,  // an entry's metadata or snapshot root changed (seq)
    kRemoved,   // an entry was deleted (truncation or sheet deletion)
    kResync,    // the hub missed records: re-read everything of interest
  };
  Kind kind = Kind::kAppended;
  std::string sheet_id;
  int64_t seq = -1;
  bool metadata_changed = false;    // kModified
  bool snapshot_completed = false;  // kModified: snapshot_root was set
};

class SheetChangeHub {
 public:
  using Listener = std::function<void(const SheetChange& change)>;

  // `feed` and `clock` must outlive the hub.
  SheetChangeHub(ChangeFeed* feed, Clock* clock);
  ~SheetChangeHub();
  SheetChangeHub(const SheetChangeHub&) = delete;
  SheetChangeHub& operator=(const SheetChangeHub&) = delete;

  // Starts tailing from the feed's head now. Storage errors are returned.
  Status Start();
  // Joins the thread. Idempotent.
  void Stop();

  // Calls `listener` with every change of `sheet_id` from now on; returns an id for
  // Unsubscribe.
  int Subscribe(const std::string& sheet_id, Listener listener);
  void Unsubscribe(int id);
  size_t subscribers() const;

 private:
  void Loop();
  void Dispatch(const SheetChange& change);

  ChangeFeed* feed_;
  Clock* clock_;

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool wake_ GUARDED_BY(mu_) = false;
  // Commits went by while nobody was subscribed: the hub neither woke nor read them,
  // so cursors_ lag. The next turn moves them to the heads and sends kResync instead.
  bool stale_ GUARDED_BY(mu_) = false;
  int next_id_ GUARDED_BY(mu_) = 1;
  struct Subscription {
    std::string sheet_id;
    Listener listener;
  };
  std::map<int, Subscription> subscriptions_ GUARDED_BY(mu_);
  std::map<int, int64_t> cursors_;  // the hub thread's, per shard
  int feed_subscription_ = 0;
  std::thread thread_;
};

}  // namespace sheetlog
