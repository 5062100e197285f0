// Hot sheets kept loaded at their head: seed 001's "Update Loaded Spreadsheet" for the
// server's own reads (GET .../cells and .../export without `at`).
//
// A read at the head used to open a new SheetView each time: read every entry since
// the last completed snapshot and replay it into a delta. A sheet whose snapshot lies
// 10,000 entries back paid for 10,000 entries on every read. The cache keeps, per
// sheet, the view at the seq it last saw; a read asks the log for the head (one small
// query), and when entries arrived since, reads only those and carries the view
// forward (SheetView::Extended). Views are immutable and shared: a reader holds its
// view for as long as it reads, while later reads install newer ones.
//
// Correctness does not depend on invalidation messages: the head seq is read on every
// call (one query), entries are immutable, and the view at seq s equals a replay of
// the log up to s whatever snapshot it starts from (architecture.md's invariant). A
// deleted sheet answers NotFound from the head query and its slot is dropped. Several
// processes behind a load balancer would each keep their own, equally correct, cache.
// One thing a cached view can lose: a truncation (on any node) deletes the snapshots
// before its cut with their objects, so the chunks of the snapshot a view starts from
// may be gone. Rather than read the sheet row on every call to see (a second round
// trip), the reader learns it from the read itself: a chunk read of a cached view that
// fails with NotFound means that, and Reopen gives the view opened afresh from a
// snapshot still retained (the view's content is the same either way).
//
// Memory is bounded: at most Options::max_sheets views, and a view carries at most
// Options::max_entries_applied entries over its snapshot (past that it is opened
// anew from the newest completed snapshot, which the pipeline keeps close to the
// head). Least recently used sheets are evicted first. Views over an imported file
// that no snapshot covers yet are not cached (SheetView::cacheable()).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "emulator/blob/blob_store.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/table/request_units.h"
#include "src/log/event_log.h"
#include "src/snapshot/sheet_view.h"

namespace sheetlog {

class HeadViewCache {
 public:
  struct Options {
    // Sheets kept loaded. Default: 256.
    size_t max_sheets = 256;
    // Entries a cached view may carry over its snapshot before it is reopened.
    // Default: 50,000.
    int64_t max_entries_applied = 50000;
  };

  struct Counters {
    int64_t hits = 0;      // the cached view was at the head
    int64_t extended = 0;  // carried forward over new entries
    int64_t opened = 0;    // opened from the snapshot (miss, too far, or not cacheable)
    int64_t evicted = 0;
    int64_t reopened = 0;  // Reopen: a cached view's snapshot was truncated away
  };

  // `log` and `blobs` must outlive the cache.
  HeadViewCache(EventLog* log, BlobStore* blobs, Options options);

  // The sheet after every entry up to its head now. Errors as SheetView::Open.
  Result<std::shared_ptr<const SheetView>> AtHead(const std::string& sheet_id,
                                                  UnitMeter* meter);

  // The sheet at its head from a view opened afresh: for a reader whose read of the
  // view AtHead gave failed with NotFound (a chunk of its snapshot deleted by a
  // truncation since the view was cached). Errors as AtHead.
  Result<std::shared_ptr<const SheetView>> Reopen(const std::string& sheet_id,
                                                  UnitMeter* meter);

  // Drops the sheet's view (e.g. once it is deleted). Optional: AtHead re-checks.
  void Forget(const std::string& sheet_id);

  Counters counters() const;
  size_t size() const;

 private:
  struct Slot {
    std::shared_ptr<const SheetView> view;  // null until the first load finishes
    uint64_t last_used = 0;
    // Held by the one reader loading or extending this sheet's view.
    std::shared_ptr<Mutex> loading;
  };

  // Carries `cached` forward to `head`; null if it cannot (too far, an Import).
  std::shared_ptr<const SheetView> Extend(const std::shared_ptr<const SheetView>& cached,
                                          const std::string& sheet_id, int64_t head,
                                          UnitMeter* meter);
  void Install(const std::string& sheet_id, std::shared_ptr<const SheetView> view);
  void EvictOverBudget() REQUIRES(mu_);

  EventLog* log_;
  BlobStore* blobs_;
  Options options_;

  mutable Mutex mu_;
  std::unordered_map<std::string, Slot> slots_ GUARDED_BY(mu_);
  uint64_t clock_ GUARDED_BY(mu_) = 0;  // LRU ticks
  Counters counters_ GUARDED_BY(mu_);
};

}  // namespace sheetlog
