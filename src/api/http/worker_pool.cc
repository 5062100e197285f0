#include "src/api/http/worker_pool.h"

namespace sheetlog::api::http {

WorkerPool::WorkerPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() { Shutdown(); }

bool WorkerPool::Push(std::function<void()> task, bool bounded) {
  {
    MutexLock lock(&mu_);
    if (stopping_ || (bounded && queue_.size() >= max_queued_)) return false;
    queue_.push_back(std::move(task));
  }
  ready_.NotifyOne();
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
    MutexLock lock(&mu_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  ready_.NotifyAll();
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
      MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) ready_.Wait(mu_);
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace sheetlog::api::http
