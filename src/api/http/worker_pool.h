// Internal to src/api/http: a fixed pool of threads running tasks from a queue.
// Thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "emulator/env/mutex.h"

namespace sheetlog::api::http {

class WorkerPool {
 public:
  // `max_queued` bounds TrySubmit (requests); Submit is not bounded by it.
  WorkerPool(int threads, size_t max_queued);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a request's task. False if max_queued tasks wait already, or the pool is
  // shutting down.
  bool TrySubmit(std::function<void()> task);
  // Queues a task whatever the queue holds (the next slice of a response body already
  // under way: one per connection at most). Dropped if the pool is shutting down.
  void Submit(std::function<void()> task);
  // Drops queued tasks, lets running ones finish, joins the threads. Idempotent.
  void Shutdown();

 private:
  void Run();
  bool Push(std::function<void()> task, bool bounded);

  const size_t max_queued_;
  Mutex mu_;
  CondVar ready_;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace sheetlog::api::http
