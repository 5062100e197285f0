// Transactions: what the layers above the emulator see of the database. src/ runs table
// operations (emulator/table/table.h) inside these and never sees SQL: the Connection a
// Work receives is opaque outside emulator/ (a backend's transaction in progress:
// emulator/table/connection.h, implemented by SQLite's Database and by
// PostgresDatabase), and only the composition root (src/app/) opens one. On DynamoDB
// the same calls become TransactWriteItems / strongly and eventually consistent reads;
// scripts/check-layers keeps src/ on this side.
#pragma once

#include <functional>

#include "emulator/status.h"

namespace sheetlog {

// A transaction in progress, handed to table operations. Opaque above emulator/
// (emulator/table/connection.h).
class Connection;

// What another process sharing the database committed that this one's waiters want to
// hear of (Transactions::AddRemoteCommitListener).
enum class RemoteChange {
  kChangeFeed,  // change-feed records (emulator/stream/)
  kQueue,       // queue messages sent or made visible (emulator/queue/)
};

// Implementations are thread-safe: Write, WriteAsync and Read may be called from any
// thread at once.
class Transactions {
 public:
  using Work = std::function<Status(Connection&)>;
  virtual ~Transactions() = default;

  // Runs `work` in a write transaction (shared with concurrent callers: group commit).
  // If `work` returns an error its changes are rolled back and that error is returned;
  // otherwise returns OK once the transaction is durable. Reads inside it are strongly
  // consistent. `work` may run on another caller's thread.
  //
  // `work` may run more than once: a transaction aborted by concurrency (Aborted,
  // status.h: a deadlock or serialization failure, an item that kept changing under a
  // read-modify-write) is rolled back and `work` run again from the start, a bounded
  // number of times, before Aborted is returned (PostgreSQL; SQLite's single writer is
  // never aborted so). So a work decides only from what it reads in its transaction:
  // what it hands back through captures it assigns afresh on every run (a list it
  // fills is cleared first), and it has no effect outside the transaction (no blob
  // written, no message sent, no callback run) that a second run would repeat. The
  // request units of its table operations are charged for every run (each did the
  // reads and writes).
  virtual Status Write(const Work& work) = 0;

  // Write without waiting: queues `work` for the same group commit and returns; `done`
  // is called with what Write would have returned, once the transaction is durable (or
  // the work failed), on whichever thread committed it — possibly the caller's own,
  // before WriteAsync returns. `done` may itself call Write or WriteAsync. This default
  // runs Write on the caller's thread; the SQLite implementation does not block a
  // caller that finds another commit in progress (its write joins the next batch).
  virtual void WriteAsync(Work work, std::function<void(Status)> done) {
    done(Write(work));
  }

  // Runs `work` in a read transaction: it sees one consistent committed state, never
  // a writer's uncommitted changes (eventually consistent reads). Run once: a read
  // transaction takes no locks and is never aborted by concurrency.
  virtual Status Read(const Work& work) = 0;

  // Runs `work`, which only reads, without a transaction around its statements: each
  // statement sees what was committed when it ran, not one state for all of them. For
  // a read of one statement (as consistent as Read), or of several that need no common
  // state (a head read that tries again when the head moved under it). On PostgreSQL it
  // saves the BEGIN and COMMIT round trips. REQUIRES: `work` writes nothing (on
  // PostgreSQL each statement commits by itself). This default runs Read.
  virtual Status ReadEach(const Work& work) { return Read(work); }

  // Calls `listener` after committed writes of this process that may have written a
  // change-feed record (emulator/stream/): after every one that did, and perhaps after
  // others. On the committing thread, outside every lock of the implementation: it
  // must be quick and must not write. Listeners cannot be removed (the change feed
  // keeps what it registers alive). Commits of other processes: below.
  virtual void AddCommitListener(std::function<void()> listener) = 0;

  // Calls `listener` soon after another process sharing the database (another node on
  // PostgreSQL: LISTEN/NOTIFY) committed a change of `kind`, and perhaps at other
  // times (after a lost notification connection is restored: anything may have
  // happened meanwhile). On a thread of the implementation: quick, no writes, no
  // removal, as above. The default does nothing: a SQLite file has one process.
  virtual void AddRemoteCommitListener(RemoteChange kind,
                                       std::function<void()> listener) {
    (void)kind;
    (void)listener;
  }
};

}  // namespace sheetlog
