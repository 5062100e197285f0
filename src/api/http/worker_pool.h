// Internal to src/api/http: a fixed pool of threads running tasks from a queue.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

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
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sheetlog::api::http
