#include "src/api/http/response_channel.h"

#include <cstdio>

namespace sheetlog::api::http {

ResponseChannel::ResponseChannel(size_t buffer_limit)
    : limit_(buffer_limit == 0 ? 1 : buffer_limit) {}

void ResponseChannel::Wake(bool was_empty) {
  std::function<void()> wake;
  {
    MutexLock lock(&mu_);
    if (!was_empty || !wake_) return;
    wake = wake_;
  }
  wake();
}

StreamWriter::WriteResult ResponseChannel::Write(std::string_view data) {
  bool was_empty;
  {
    MutexLock lock(&mu_);
    if (broken_ || finished_) return WriteResult::kClosed;
    if (buffered_ + data.size() > limit_) return WriteResult::kFull;
    if (data.empty()) return WriteResult::kQueued;
    was_empty = pieces_.empty();
    pieces_.emplace_back(data);
    buffered_ += data.size();
  }
  Wake(was_empty);
  return WriteResult::kQueued;
}

bool ResponseChannel::Append(std::string_view data) {
  bool was_empty;
  {
    MutexLock lock(&mu_);
    if (broken_ || finished_) return false;
    if (data.empty()) return true;
    was_empty = pieces_.empty();
    pieces_.emplace_back(data);
    buffered_ += data.size();
  }
  Wake(was_empty);
  return true;
}

void ResponseChannel::Finish() {
  {
    MutexLock lock(&mu_);
    if (finished_ || broken_) return;
    finished_ = true;
  }
  // The loop may be waiting for the end even when bytes are pending: always wake.
  Wake(true);
}

void ResponseChannel::Close(std::string_view last) {
  {
    MutexLock lock(&mu_);
    if (finished_ || broken_) return;
    if (!last.empty()) {
      pieces_.emplace_back(last);
      buffered_ += last.size();
    }
  }
  Finish();
}

bool ResponseChannel::closed() const {
  MutexLock lock(&mu_);
  return finished_ || broken_;
}

bool ResponseChannel::broken() const {
  MutexLock lock(&mu_);
  return broken_;
}

size_t ResponseChannel::buffered() const {
  MutexLock lock(&mu_);
  return buffered_;
}

void ResponseChannel::OnClose(std::function<void()> callback) {
  {
    MutexLock lock(&mu_);
    if (!close_callback_ran_) {
      on_close_ = std::move(callback);
      return;
    }
  }
  if (callback) callback();
}

bool ResponseChannel::ParkUntilRoom(std::function<void()> resume) {
  MutexLock lock(&mu_);
  if (broken_ || buffered_ < limit_) return false;
  resume_ = std::move(resume);
  return true;
}

void ResponseChannel::Attach(bool chunked, std::function<void()> wake) {
  bool has_news;
  {
    MutexLock lock(&mu_);
    chunked_ = chunked;
    wake_ = std::move(wake);
    has_news = !pieces_.empty() || finished_;
  }
  Wake(has_news);
}

bool ResponseChannel::Take(std::string* out) {
  std::function<void()> resume;
  bool complete;
  {
    MutexLock lock(&mu_);
    for (std::string& piece : pieces_) {
      if (chunked_) {
        char size_line[32];
        int n = std::snprintf(size_line, sizeof(size_line), "%zx\r\n", piece.size());
        out->append(size_line, static_cast<size_t>(n));
        out->append(piece);
        out->append("\r\n");
      } else if (out->empty()) {
        out->swap(piece);
      } else {
        out->append(piece);
      }
    }
    pieces_.clear();
    buffered_ = 0;
    if (finished_ && chunked_ && !end_taken_) {
      out->append("0\r\n\r\n");
      end_taken_ = true;
    }
    complete = finished_;
    resume = std::move(resume_);
    resume_ = nullptr;
  }
  if (resume) resume();
  return complete;
}

void ResponseChannel::Break() {
  std::function<void()> callback;
  std::function<void()> wake;
  std::function<void()> parked;
  {
    MutexLock lock(&mu_);
    if (broken_) return;
    broken_ = true;
    // A producer that breaks the channel (a failed provider) must get the loop to
    // close the connection; when the loop itself breaks it, the wake finds nothing.
    wake = std::move(wake_);
    wake_ = nullptr;
    parked = std::move(resume_);  // dropped outside the lock (it may own a provider)
    resume_ = nullptr;
    pieces_.clear();
    buffered_ = 0;
    if (!close_callback_ran_) {
      close_callback_ran_ = true;
      callback = std::move(on_close_);
      on_close_ = nullptr;
    }
  }
  if (wake) wake();
  if (callback) callback();
}

}  // namespace sheetlog::api::http
