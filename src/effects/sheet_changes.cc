#include "src/effects/sheet_changes.h"

#include <spdlog/spdlog.h>

#include "src/log/tables.h"

namespace sheetlog {

namespace {

constexpr int kReadBatch = 1000;

int64_t IntOf(const nlohmann::json& image, const char* name) {
  if (!image.is_object()) return -1;
  auto it = image.find(name);
  return it != image.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

std::string StringOf(const nlohmann::json& image, const char* name) {
  if (!image.is_object()) return "";
  auto it = image.find(name);
  return it != image.end() && it->is_string() ? it->get<std::string>() : "";
}

SheetChange ChangeOf(const StreamRecord& record) {
  SheetChange change;
  change.sheet_id = StringOf(record.keys, "sheet_id");
  switch (record.event_name) {
    case StreamEventName::kInsert:
      change.kind = SheetChange::Kind::kAppended;
      change.seq = IntOf(record.new_image, "seq");
      break;
    case StreamEventName::kModify: {
      change.kind = SheetChange::Kind::kModified;
      change.seq = IntOf(record.new_image, "seq");
      auto field = [](const nlohmann::json& image, const char* name) {
        return image.is_object() && image.contains(name) ? image[name] : nlohmann::json();
      };
      change.metadata_changed =
          field(record.new_image, "metadata") != field(record.old_image, "metadata");
      change.snapshot_completed = field(record.old_image, "snapshot_root").is_null() &&
                                  !field(record.new_image, "snapshot_root").is_null();
      break;
    }
    case StreamEventName::kRemove:
      change.kind = SheetChange::Kind::kRemoved;
      change.seq = IntOf(record.old_image, "seq");
      break;
  }
  return change;
}

}  // namespace

SheetChangeHub::SheetChangeHub(ChangeFeed* feed, Clock* clock)
    : feed_(feed), clock_(clock) {}

SheetChangeHub::~SheetChangeHub() { Stop(); }

Status SheetChangeHub::Start() {
  ASSIGN_OR_RETURN(cursors_, feed_->LatestSequences());
  feed_subscription_ = feed_->Subscribe([this] {
    MutexLock lock(&mu_);
    if (subscriptions_.empty()) {
      // Nobody to tell: no wake-up and no read per commit (appends with no event
      // stream open pay nothing here); the first subscriber catches up (Loop).
      stale_ = true;
      return;
    }
    wake_ = true;
    cv_.NotifyAll();
  });
  thread_ = std::thread([this] { Loop(); });
  return Status::OK();
}

void SheetChangeHub::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.NotifyAll();
  }
  if (feed_subscription_ != 0) feed_->Unsubscribe(feed_subscription_);
  if (thread_.joinable()) thread_.join();
}

int SheetChangeHub::Subscribe(const std::string& sheet_id, Listener listener) {
  MutexLock lock(&mu_);
  const int id = next_id_++;
  subscriptions_[id] = Subscription{sheet_id, std::move(listener)};
  if (stale_) {
    wake_ = true;
    cv_.NotifyAll();
  }
  return id;
}

void SheetChangeHub::Unsubscribe(int id) {
  MutexLock lock(&mu_);
  subscriptions_.erase(id);
}

size_t SheetChangeHub::subscribers() const {
  MutexLock lock(&mu_);
  return subscriptions_.size();
}

void SheetChangeHub::Dispatch(const SheetChange& change) {
  MutexLock lock(&mu_);
  for (auto& [id, subscription] : subscriptions_) {
    if (change.kind == SheetChange::Kind::kResync ||
        subscription.sheet_id == change.sheet_id) {
      subscription.listener(change);
    }
  }
}

void SheetChangeHub::Loop() {
  while (true) {
    bool reset = false;
    {
      MutexLock lock(&mu_);
      // The feed wakes the hub on every commit; the bound re-reads after a missed
      // wake-up or a failed read.
      if (!wake_ && !stopping_) {
        clock_->WaitUntil(cv_, mu_, clock_->NowMicros() + 1000000);
      }
      if (stopping_) return;
      wake_ = false;
      reset = stale_;
      stale_ = false;
    }
    Result<std::map<int, int64_t>> heads = feed_->LatestSequences();
    if (!heads.ok()) {
      if (reset) {
        MutexLock lock(&mu_);
        stale_ = true;
      }
      continue;
    }
    if (reset) {
      // Records went by unread while nobody listened: skip them, and have every
      // subscriber re-read what it follows (one may have subscribed meanwhile).
      for (const auto& [shard, head] : *heads) cursors_[shard] = head;
      Dispatch(SheetChange{SheetChange::Kind::kResync, "", -1, false, false});
      continue;
    }
    for (const auto& [shard, head] : *heads) {
      int64_t& cursor = cursors_[shard];
      while (cursor < head) {
        Result<std::vector<StreamRecord>> records =
            feed_->Read(shard, cursor, kReadBatch);
        if (!records.ok()) {
          spdlog::warn("sheet changes: reading shard {} failed: {}", shard,
                       records.status().ToString());
          break;
        }
        if (records->empty() || records->front().sequence > cursor + 1) {
          // Pruned before the hub read them: subscribers re-read what they follow.
          Dispatch(SheetChange{SheetChange::Kind::kResync, "", -1, false, false});
          if (records->empty()) {
            cursor = head;
            break;
          }
        }
        for (const StreamRecord& record : *records) {
          cursor = record.sequence;
          SheetChange change = ChangeOf(record);
          if (!change.sheet_id.empty()) Dispatch(change);
        }
      }
    }
  }
}

}  // namespace sheetlog
