#include "src/api/http/response_channel.h"

#include <cstdio>

namespace sheetlog::api::http {

ResponseChannel::ResponseChannel(size_t buffer_limit, bool chunked)
    : limit_(buffer_limit == 0 ? 1 : buffer_limit), chunked_(chunked) {}

void ResponseChannel::AppendLocked(std::string_view data) {
  if (data.empty()) return;
  if (chunked_) {
    char size_line[32];
    int n = std::snprintf(size_line, sizeof(size_line), "%zx\r\n", data.size());
    pending_.append(size_line, static_cast<size_t>(n));
    pending_.append(data);
    pending_.append("\r\n");
  } else {
    pending_.append(data);
  }
}

void ResponseChannel::Wake(bool was_empty) {
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    if (!was_empty || !wake_) return;
    wake = wake_;
  }
  wake();
}

StreamWriter::WriteResult ResponseChannel::Write(std::string_view data) {
  bool was_empty;
  {
    std::lock_guard lock(mu_);
    if (broken_ || finished_) return WriteResult::kClosed;
    if (pending_.size() + data.size() > limit_) return WriteResult::kFull;
    was_empty = pending_.empty();
    AppendLocked(data);
  }
  Wake(was_empty);
  return WriteResult::kQueued;
}

bool ResponseChannel::WriteBlocking(std::string_view data) {
  while (!data.empty()) {
    bool was_empty;
    {
      std::unique_lock lock(mu_);
      room_.wait(lock, [&] { return broken_ || pending_.size() < limit_; });
      if (broken_ || finished_) return false;
      // Take what fits, so a write larger than the buffer still goes through in parts.
      size_t piece = std::min(data.size(), limit_ - pending_.size());
      was_empty = pending_.empty();
      AppendLocked(data.substr(0, piece));
      data.remove_prefix(piece);
    }
    Wake(was_empty);
  }
  return true;
}

void ResponseChannel::Finish() {
  bool was_empty;
  {
    std::lock_guard lock(mu_);
    if (finished_ || broken_) return;
    was_empty = pending_.empty();
    if (chunked_) pending_.append("0\r\n\r\n");
    finished_ = true;
  }
  // The loop may be waiting for the end even when bytes are pending: always wake.
  (void)was_empty;
  Wake(true);
}

void ResponseChannel::Close(std::string_view last) {
  {
    std::lock_guard lock(mu_);
    if (finished_ || broken_) return;
    AppendLocked(last);
  }
  Finish();
}

bool ResponseChannel::closed() const {
  std::lock_guard lock(mu_);
  return finished_ || broken_;
}

bool ResponseChannel::broken() const {
  std::lock_guard lock(mu_);
  return broken_;
}

void ResponseChannel::OnClose(std::function<void()> callback) {
  {
    std::lock_guard lock(mu_);
    if (!close_callback_ran_) {
      on_close_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

void ResponseChannel::Attach(std::function<void()> wake) {
  bool has_news;
  {
    std::lock_guard lock(mu_);
    wake_ = std::move(wake);
    has_news = !pending_.empty() || finished_;
  }
  Wake(has_news);
}

bool ResponseChannel::Take(std::string* out) {
  std::lock_guard lock(mu_);
  if (!pending_.empty()) {
    if (out->empty()) {
      out->swap(pending_);
    } else {
      out->append(pending_);
      pending_.clear();
    }
    room_.notify_all();
  }
  return finished_;
}

void ResponseChannel::Break() {
  std::function<void()> callback;
  std::function<void()> wake;
  {
    std::lock_guard lock(mu_);
    if (broken_) return;
    broken_ = true;
    // A producer that breaks the channel (a failed provider) must get the loop to
    // close the connection; when the loop itself breaks it, the wake finds nothing.
    wake = std::move(wake_);
    wake_ = nullptr;
    pending_.clear();
    pending_.shrink_to_fit();
    if (!close_callback_ran_) {
      close_callback_ran_ = true;
      callback = std::move(on_close_);
      on_close_ = nullptr;
    }
  }
  room_.notify_all();
  if (wake) wake();
  if (callback) callback();
}

}  // namespace sheetlog::api::http
