// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable with the
// thread-safety annotations of thread_annotations.h, so clang checks every GUARDED_BY
// (leveldb's port::Mutex / port::CondVar and util/mutexlock.h; Abseil's absl::Mutex is
// the larger version of the same idea). They add nothing at run time.
//
//   Mutex mu_;
//   int pending_ GUARDED_BY(mu_) = 0;
//   CondVar idle_;
//
//   void WaitIdle() EXCLUDES(mu_) {
//     MutexLock lock(&mu_);
//     while (pending_ > 0) idle_.Wait(mu_);  // a loop, not a predicate lambda: the
//   }                                        // analysis sees the mutex held in it
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "emulator/env/thread_annotations.h"

namespace sheetlog {

class CondVar;

// A non-recursive mutex. Thread-safe.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds this mutex (where it cannot see it: a callback
  // the owner runs under its lock). Checks nothing at run time.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope (std::lock_guard); Unlock()/Lock() let go of it for a
// stretch in the middle (a callback or I/O that must not run under it).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() {
    if (locked_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // REQUIRES: held (the constructor's, or a Lock() since the last Unlock()).
  void Unlock() RELEASE() {
    locked_ = false;
    mu_->Unlock();
  }
  // REQUIRES: not held (after Unlock()).
  void Lock() ACQUIRE() {
    mu_->Lock();
    locked_ = true;
  }

 private:
  Mutex* const mu_;
  bool locked_ = true;
};

// A reader-writer mutex (std::shared_mutex): held by one writer, or by any number of
// readers at once. Non-recursive. Thread-safe. Held through WriterMutexLock and
// ReaderMutexLock; members it guards are read under either and written under the first.
class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively for its scope (absl::WriterMutexLock).
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterMutexLock() RELEASE() { mu_->Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds a SharedMutex shared for its scope (absl::ReaderMutexLock).
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) {
    mu_->LockShared();
  }
  ~ReaderMutexLock() RELEASE() { mu_->UnlockShared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// A condition variable used with a Mutex. Each wait may wake spuriously: wait in a loop
// that re-checks the condition. Thread-safe.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu`, waits for a notification, takes `mu` again.
  void Wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // `mu` stays held, as the caller's lock says
  }
  // As Wait, for at most `timeout` of real time. False if the time ran out.
  template <typename Rep, typename Period>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const std::cv_status status = cv_.wait_for(lock, timeout);
    lock.release();
    return status == std::cv_status::no_timeout;
  }
  // As Wait, until `deadline` of its clock. False if the deadline passed.
  template <typename ClockType, typename Duration>
  bool WaitUntil(Mutex& mu, std::chrono::time_point<ClockType, Duration> deadline)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const std::cv_status status = cv_.wait_until(lock, deadline);
    lock.release();
    return status == std::cv_status::no_timeout;
  }

  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace sheetlog
