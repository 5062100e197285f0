#include "src/snapshot/head_view_cache.h"

#include <vector>

namespace sheetlog {

HeadViewCache::HeadViewCache(EventLog* log, BlobStore* blobs, Options options)
    : log_(log), blobs_(blobs), options_(options) {}

Result<std::shared_ptr<const SheetView>> HeadViewCache::AtHead(
    const std::string& sheet_id, UnitMeter* meter) {
  Result<int64_t> next_seq = log_->NextSeq(sheet_id, meter);
  if (!next_seq.ok()) {
    if (next_seq.status().IsNotFound()) Forget(sheet_id);
    return next_seq.status();
  }
  const int64_t head = *next_seq - 1;
  std::shared_ptr<Mutex> loading;
  std::shared_ptr<const SheetView> hit;
  {
    MutexLock lock(&mu_);
    Slot& slot = slots_[sheet_id];
    slot.last_used = ++clock_;
    // A view at or past the head read above is the sheet at a head it had during
    // this call: as good as any.
    if (slot.view && slot.view->at_seq() >= head) hit = slot.view;
    if (!slot.loading) slot.loading = std::make_shared<Mutex>();
    loading = slot.loading;
  }
  if (hit) {
    MutexLock lock(&mu_);
    ++counters_.hits;
    return hit;
  }
  // One reader per sheet carries the view forward; the others wait for it and share
  // its result instead of each copying the delta (or replaying the log) again.
  MutexLock one_loader(&*loading);
  std::shared_ptr<const SheetView> cached;
  {
    MutexLock lock(&mu_);
    auto slot = slots_.find(sheet_id);
    if (slot != slots_.end() && slot->second.view) cached = slot->second.view;
  }
  if (cached && cached->at_seq() >= head) {
    MutexLock lock(&mu_);
    ++counters_.hits;
    return cached;
  }
  std::shared_ptr<const SheetView> view;
  if (cached) view = Extend(cached, sheet_id, head, meter);
  if (view) {
    MutexLock lock(&mu_);
    ++counters_.extended;
  } else {
    // Open at the head seen above: a view at a seq is the same whichever snapshot it
    // starts from, and an append racing this read simply lands in the next one.
    ASSIGN_OR_RETURN(std::unique_ptr<SheetView> opened,
                     SheetView::Open(log_, blobs_, sheet_id, head, meter));
    view = std::move(opened);
    MutexLock lock(&mu_);
    ++counters_.opened;
  }
  if (view->cacheable()) Install(sheet_id, view);
  return view;
}

Result<std::shared_ptr<const SheetView>> HeadViewCache::Reopen(
    const std::string& sheet_id, UnitMeter* meter) {
  {
    MutexLock lock(&mu_);
    auto slot = slots_.find(sheet_id);
    if (slot != slots_.end()) slot->second.view = nullptr;
    ++counters_.reopened;
  }
  return AtHead(sheet_id, meter);
}

std::shared_ptr<const SheetView> HeadViewCache::Extend(
    const std::shared_ptr<const SheetView>& cached, const std::string& sheet_id,
    int64_t head, UnitMeter* meter) {
  if (cached->entries_applied() + (head - cached->at_seq()) >
      options_.max_entries_applied) {
    return nullptr;
  }
  std::vector<EntryRecord> entries;
  for (int64_t next = cached->at_seq() + 1; next <= head;) {
    Result<ReadRange> page = log_->Read(sheet_id, next, head + 1, 1000, meter);
    if (!page.ok() || page->entries.empty()) return nullptr;
    for (EntryRecord& e : page->entries) entries.push_back(std::move(e));
    next = entries.back().seq + 1;
  }
  Result<std::shared_ptr<SheetView>> extended = cached->Extended(blobs_, entries);
  if (!extended.ok()) return nullptr;
  return std::move(extended).value();
}

void HeadViewCache::Install(const std::string& sheet_id,
                            std::shared_ptr<const SheetView> view) {
  MutexLock lock(&mu_);
  Slot& slot = slots_[sheet_id];  // may be gone: evicted or forgotten meanwhile
  // Concurrent readers may install out of order: keep the newest.
  if (!slot.view || slot.view->at_seq() <= view->at_seq()) slot.view = std::move(view);
  slot.last_used = ++clock_;
  EvictOverBudget();
}

void HeadViewCache::EvictOverBudget() {
  while (slots_.size() > options_.max_sheets) {
    auto oldest = slots_.begin();
    for (auto it = slots_.begin(); it != slots_.end(); ++it) {
      if (it->second.last_used < oldest->second.last_used) oldest = it;
    }
    slots_.erase(oldest);
    ++counters_.evicted;
  }
}

void HeadViewCache::Forget(const std::string& sheet_id) {
  MutexLock lock(&mu_);
  slots_.erase(sheet_id);
}

HeadViewCache::Counters HeadViewCache::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

size_t HeadViewCache::size() const {
  MutexLock lock(&mu_);
  return slots_.size();
}

}  // namespace sheetlog
