// PostgresDatabase: the PostgreSQL implementation of Transactions (docs/cluster.md
// "Tables on PostgreSQL"). Tables live in a PostgreSQL database that several
// processes may share; table operations run on PostgresConnection, with PostgreSQL's
// SQL.
//
// Writes run at READ COMMITTED, each on a connection of a pool, one transaction per
// Write: conditional writes stay conditional across processes through ON CONFLICT and
// row locks (table.h), with no transaction to retry for a lost condition. Concurrent
// commits share WAL flushes inside PostgreSQL (its own group commit), so the node keeps
// no write queue. Reads run as REPEATABLE READ READ ONLY: one consistent committed
// state.
//
// A Write whose transaction is aborted by concurrency (Aborted, status.h: a deadlock
// PostgreSQL broke by aborting it, a serialization failure, an item that kept changing
// under Table's read-modify-write) is rolled back and run again from the start, up to
// Options::write_attempts in all, after a short full-jitter backoff on the clock; then
// it returns Aborted. Works are written for that (Transactions::Write). Reads are not
// run again: a READ ONLY transaction at REPEATABLE READ takes no row locks and cannot
// fail to serialize.
//
// The database unreachable: Write and Read return Unavailable naming it (a connection
// is tried for at most `connect_timeout_seconds`), the broken connection is dropped and
// the next call connects afresh, so the process recovers by itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "emulator/env/mutex.h"
#include "emulator/postgres/postgres_connection.h"
#include "emulator/status.h"
#include "emulator/table/migrations.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;
class FaultInjector;

class PostgresDatabase final : public Transactions {
 public:
  struct Options {
    // A libpq connection string or postgresql:// URI. It must not hold a password
    // (InvalidArgument): libpq reads one from PGPASSWORD or a password file.
    std::string conninfo;
    // Most connections open at once (Write and Read calls beyond it wait for one).
    int connections = 8;
    int connect_timeout_seconds = 5;
    // The application's migrations, in PostgreSQL's SQL, applied with the emulator's
    // own (EmulatorPostgresMigrations) in one version order. Default: none.
    std::vector<Migration> migrations;
    // The application release applying migrations (see Database::Options).
    std::string release;
    // Fault points of the migrations (ApplyMigrations). May be null.
    FaultInjector* faults = nullptr;
    // Tests: applies the migrations up to this version only (none: all;
    // ApplyMigrations).
    std::optional<int> target_version;
    // Time as SQL sees it: every transaction carries this clock's NowMicros() at its
    // BEGIN (the setting `sheetlog.now_micros`, sent in the same round trip), which
    // `sheetlog_now_micros()` returns (emulator/schema/postgres/003_stream.sql): the
    // change-feed triggers stamp records with the node's clock, as on SQLite (a
    // ManualClock in tests). Default: SystemClock. Also what the backoff between
    // attempts of an aborted Write sleeps on.
    Clock* clock = nullptr;
    // Runs of one Write's work, in all, while its transaction is aborted by
    // concurrency (Aborted); the last one's Aborted is returned. 1: never run again.
    int write_attempts = 5;
    // The backoff before the Nth run again: uniform in [0, min(cap, base * 2^(N-1))]
    // (full jitter, as seed 001's retry), so the transactions that collided do not
    // collide again in step.
    int64_t abort_backoff_base_micros = 2000;
    int64_t abort_backoff_cap_micros = 50000;
    // Most works of one WriteAsync batch (one transaction). 1: no batching.
    int batch_limit = 64;
  };

  // Connects and applies the emulator's migrations and `options.migrations`
  // (ApplyMigrations: each in a transaction of its own, under an advisory lock, so
  // nodes starting together migrate once). Unavailable if the server cannot be
  // reached; FailedPrecondition if its schema is newer than this binary knows.
  static Result<std::unique_ptr<PostgresDatabase>> Open(const Options& options);
  // Stops the listening thread (if any) and closes the connections.
  ~PostgresDatabase() override;

  Status Write(const Work& work) override EXCLUDES(mu_);
  // Group commit: works queued while a batch is in flight run together in the next
  // one, one transaction and one commit (one WAL flush) for up to
  // Options::batch_limit of them, on the thread of the caller that found no batch in
  // flight (it runs batches until the queue is empty). A work that fails having left
  // nothing in the transaction (PostgresConnection::possible_writes unchanged, no
  // statement refused) fails alone and the others commit; one that fails otherwise,
  // or an Aborted batch, sends every work of the batch to Write on its own (each its
  // own transaction, with Write's runs again). `done` runs after the commit, outside
  // every lock, on the batch's thread.
  void WriteAsync(Work work, std::function<void(Status)> done) override
      EXCLUDES(batch_mu_, mu_);
  Status Read(const Work& work) override EXCLUDES(mu_);
  // Statements in autocommit on a pooled connection (no BEGIN, no COMMIT). A
  // connection found lost at the first statement is dropped and the work run once
  // more on a new one (it only reads).
  Status ReadEach(const Work& work) override EXCLUDES(mu_);
  // Listeners run after each Write of this handle whose transaction wrote a
  // change-feed record (the triggers set `sheetlog.feed_written`, read back in the
  // COMMIT's round trip).
  void AddCommitListener(std::function<void()> listener) override EXCLUDES(listeners_mu_);
  // Other nodes: after such a commit (or one that asked for it:
  // Connection::WakeOtherProcessesAtCommit) a NOTIFY on kPostgresWakeChannel is sent,
  // after the commit and never inside it, from a connection of the wake sender's own,
  // coalesced (docs/cluster.md "Wake-ups between nodes"). The first
  // remote listener starts a thread with a connection of its own that LISTENs on the
  // channel and runs the listeners of each notification's kind, skipping
  // notifications sent by this handle's own connections (their commits ran the local
  // listeners). No registration returns before the channel is listened on (or the
  // first try failed): a listener's owner may read right after and miss nothing. A
  // lost listening connection (or a failed first try) is opened again (backoff up to
  // 5 s), and then every remote listener runs once: notifications sent meanwhile are
  // gone.
  void AddRemoteCommitListener(RemoteChange kind, std::function<void()> listener) override
      EXCLUDES(listen_start_mu_, listeners_mu_);

  int schema_version() const { return schema_version_; }
  // WriteAsync batches committed (or fallen back), and the works they held, since Open.
  int64_t batches() const { return batches_.load(std::memory_order_relaxed); }
  int64_t batched_works() const { return batched_works_.load(std::memory_order_relaxed); }
  // NOTIFY statements the wake sender sent, since Open (each for every kind pending).
  int64_t wakes_sent() const { return wakes_sent_.load(std::memory_order_relaxed); }
  // Works run again because their transaction was aborted by concurrency, since Open.
  int64_t aborted_writes_retried() const {
    return aborted_writes_retried_.load(std::memory_order_relaxed);
  }
  // "host=... dbname=..." (no password), for messages.
  const std::string& where() const { return where_; }

 private:
  explicit PostgresDatabase(const Options& options);
  // Runs `work` once in a transaction begun with `mode` on a pooled connection;
  // `write`: the commit listeners are told of a commit that fed the change feed.
  Status Run(const Work& work, const std::string& mode, bool write)
      EXCLUDES(mu_, listeners_mu_);
  // A pooled connection in a transaction begun with `mode` and the node's clock
  // (sheetlog_now_micros()); Unavailable when no connection can begin one.
  Result<std::unique_ptr<PostgresConnection>> BeginTransaction(const std::string& mode)
      EXCLUDES(mu_);
  Result<std::unique_ptr<PostgresConnection>> Acquire() EXCLUDES(mu_);
  // Back to the pool, or closed if the connection was lost.
  void Release(std::unique_ptr<PostgresConnection> conn) EXCLUDES(mu_);

  struct QueuedWrite {
    Work work;
    std::function<void(Status)> done;
  };
  // One WriteAsync batch: runs the works in one transaction and calls their `done`.
  void RunBatch(std::vector<QueuedWrite>& batch) EXCLUDES(mu_, listeners_mu_);
  // After a commit that `fed` the change feed (or asked for `wakes`): the commit
  // listeners and the wake sender.
  void AfterCommit(bool fed, std::vector<RemoteChange> wakes) EXCLUDES(listeners_mu_);

  // Asks the wake sender to NOTIFY other nodes of `kinds` (starting it if need be).
  void PostWakes(const std::vector<RemoteChange>& kinds) EXCLUDES(wake_mu_);
  // The wake sender's thread: sends what was posted, one NOTIFY statement for all the
  // kinds pending, then lets kWakeCoalesceMicros pass before the next, so a node
  // sends a few hundred notifications a second however many commits it makes.
  void WakeSendLoop() EXCLUDES(wake_mu_, mu_);

  // The listening thread (AddRemoteCommitListener), from `conn` (null: connect first).
  void ListenLoop(std::unique_ptr<PostgresConnection> conn) EXCLUDES(mu_, listeners_mu_);
  // A connection of its own that LISTENs on kPostgresWakeChannel.
  Result<std::unique_ptr<PostgresConnection>> OpenListeningConnection();
  void TellRemoteListeners(RemoteChange kind) EXCLUDES(listeners_mu_);
  bool IsOwnBackend(int backend_pid) EXCLUDES(mu_);

  Options options_;
  std::string where_;
  int schema_version_ = 0;

  Mutex mu_;
  CondVar idle_cv_;
  std::vector<std::unique_ptr<PostgresConnection>> idle_ GUARDED_BY(mu_);
  int open_ GUARDED_BY(mu_) = 0;                // connections idle or in use
  std::set<int> own_backends_ GUARDED_BY(mu_);  // backend_pid() of each open one

  Mutex listen_start_mu_;  // serializes AddRemoteCommitListener
  Mutex listeners_mu_;
  std::vector<std::function<void()>> listeners_ GUARDED_BY(listeners_mu_);
  std::map<RemoteChange, std::vector<std::function<void()>>> remote_listeners_
      GUARDED_BY(listeners_mu_);
  std::thread listen_thread_ GUARDED_BY(listeners_mu_);
  std::atomic<bool> stop_listening_{false};
  std::atomic<int64_t> aborted_writes_retried_{0};
  std::atomic<int64_t> wakes_sent_{0};

  Mutex batch_mu_;
  std::vector<QueuedWrite> batch_queue_ GUARDED_BY(batch_mu_);
  bool batch_running_ GUARDED_BY(batch_mu_) = false;  // a caller is running batches
  std::atomic<int64_t> batches_{0};
  std::atomic<int64_t> batched_works_{0};

  Mutex wake_mu_;
  CondVar wake_cv_;
  std::set<RemoteChange> wakes_pending_ GUARDED_BY(wake_mu_);
  bool stop_waking_ GUARDED_BY(wake_mu_) = false;
  std::thread wake_thread_ GUARDED_BY(wake_mu_);
  int stop_pipe_[2] = {-1, -1};  // written to stop the listening thread
};

}  // namespace sheetlog
