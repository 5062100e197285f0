#include "src/api/http/worker_pool.h"

namespace sheetlog::api::http {

WorkerPool::WorkerPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() { Shutdown(); }

bool WorkerPool::Push(std::function<void()> task, bool bounded) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || (bounded && queue_.size() >= max_queued_)) return false;
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
  return true;
}

bool WorkerPool::TrySubmit(std::function<void()> task) {
  return Push(std::move(task), /*bounded=*/true);
}

void WorkerPool::Submit(std::function<void()> task) {
  Push(std::move(task), /*bounded=*/false);
}

void WorkerPool::Shutdown() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  ready_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  // `dropped` (the tasks never run, and what they own) goes here, outside the lock.
}

void WorkerPool::Run() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock lock(mu_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace sheetlog::api::http
