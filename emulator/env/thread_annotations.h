// Clang's thread-safety annotations
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html), as leveldb's
// port/thread_annotations.h and Abseil's base/thread_annotations.h spell them. They
// document which mutex guards what, and clang checks it: scripts/test runs
// scripts/check-locks-and-includes (every translation unit through clang with
// -Wthread-safety -Werror), so a member read without its mutex fails CI. GCC ignores
// them.
//
// Use with the annotated types of emulator/env/mutex.h (Mutex, MutexLock, CondVar):
//   class Queue {
//    public:
//     void Push(Item item) EXCLUDES(mu_);
//    private:
//     void Drain() REQUIRES(mu_);
//     Mutex mu_;
//     std::deque<Item> items_ GUARDED_BY(mu_);
//   };
#pragma once

#if defined(__clang__)
#define SHEETLOG_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SHEETLOG_THREAD_ANNOTATION(x)
#endif

// On a type: it is a lockable capability ("mutex").
#define CAPABILITY(name) SHEETLOG_THREAD_ANNOTATION(capability(name))
// On a type: an RAII object that holds a capability for its lifetime.
#define SCOPED_CAPABILITY SHEETLOG_THREAD_ANNOTATION(scoped_lockable)

// On a data member: read and written only with the mutex held.
#define GUARDED_BY(mu) SHEETLOG_THREAD_ANNOTATION(guarded_by(mu))
// On a pointer member: what it points to is read and written only with the mutex held.
#define PT_GUARDED_BY(mu) SHEETLOG_THREAD_ANNOTATION(pt_guarded_by(mu))

// Lock order: this mutex is taken after / before the named ones.
#define ACQUIRED_AFTER(...) SHEETLOG_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define ACQUIRED_BEFORE(...) SHEETLOG_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))

// On a function: the caller holds the mutex (exclusively / at least shared).
#define REQUIRES(...) SHEETLOG_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) \
  SHEETLOG_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// On a function: the caller must not hold the mutex (the function takes it).
#define EXCLUDES(...) SHEETLOG_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On a function: it takes / releases the mutex (or `this`, on a member of a mutex type).
#define ACQUIRE(...) SHEETLOG_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) \
  SHEETLOG_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) SHEETLOG_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) \
  SHEETLOG_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) SHEETLOG_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// On a function: it checks (at run time, or only in the analysis) that the mutex is held.
#define ASSERT_CAPABILITY(x) SHEETLOG_THREAD_ANNOTATION(assert_capability(x))
// On a function: it returns a reference to the named mutex.
#define RETURN_CAPABILITY(x) SHEETLOG_THREAD_ANNOTATION(lock_returned(x))

// Turns the analysis off for one function. Say why beside each use.
#define NO_THREAD_SAFETY_ANALYSIS SHEETLOG_THREAD_ANNOTATION(no_thread_safety_analysis)
