// The one SQLite database behind every emulated service (tables, queues, change feed,
// execution history). WAL mode: one writer connection, a pool of read connections, so
// readers never block the writer and the writer never blocks readers.
//
// Writes go through group commit (the leveldb writer queue): concurrent Write() calls
// are batched into one transaction and one sync. Each call's work runs inside its own
// SAVEPOINT, so a work function that fails (e.g. a lost conditional write) rolls back
// only itself while the rest of the batch commits. Write() returns only after the batch
// has committed with the configured durability.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/table/connection.h"
#include "emulator/table/migrations.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;
class FaultInjector;

// A prepared statement borrowed from a Connection's cache. Reset on destruction.
// Bind indexes are 1-based (SQLite's); column indexes are 0-based.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
    other.stmt_ = nullptr;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& BindNull(int i);
  Statement& Bind(int i, int64_t v);
  Statement& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Statement& Bind(int i, double v);
  Statement& Bind(int i, std::string_view text);
  Statement& Bind(int i, const char* text) { return Bind(i, std::string_view(text)); }
  Statement& Bind(int i, const std::string& text) {
    return Bind(i, std::string_view(text));
  }
  Statement& BindBlob(int i, std::string_view bytes);

  // Advances to the next row. Result true = a row is available; false = done.
  Result<bool> Step();
  // Runs to completion, ignoring rows.
  Status Run();

  bool IsNull(int col) const;
  int64_t ColumnInt(int col) const;
  double ColumnDouble(int col) const;
  std::string ColumnText(int col) const;
  // Bytes of a TEXT or BLOB column (no copy; valid until the next Step).
  std::string_view ColumnView(int col) const;
  int ColumnType(int col) const;  // SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, ...
  int ColumnCount() const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

// One SQLite connection with a cache of prepared statements: the SQLite backend's
// Connection (emulator/table/connection.h; sqlite_statements.cc). RunSql takes the
// shared `?N` SQL as it is (SQLite's own placeholders; TranslateSqlParams checks a text
// once, when it is first prepared), binds each Value by its kind (table.h: Values <->
// SQL), and hands rows typed by the values stored; every statement is prepared once
// per connection and kept. A constraint conflict is ConditionFailed, a NOT NULL, CHECK,
// type or foreign key violation InvalidArgument. Not thread-safe: a connection is used
// by one thread at a time (the Database hands them out).
class SqliteConnection final : public Connection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override;
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  // Returns a cached prepared statement for `sql`, in SQLite's own SQL (any of its
  // placeholders; RunSql's are checked `?N`).
  Result<Statement> Prepare(std::string_view sql);
  // Runs one or more statements without results (DDL, PRAGMA, BEGIN...).
  Status Exec(std::string_view sql);

  int64_t Changes() const { return sqlite3_changes64(db_); }
  int64_t LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }
  sqlite3* raw() { return db_; }

  // Connection (sqlite_statements.cc).
  SqlDialect dialect() const override { return SqlDialect::kSqlite; }
  Result<int64_t> RunSql(std::string_view sql, const SqlParams& params,
                         const std::function<bool(const SqlRow&)>& row) override;
  Status RunScript(std::string_view sql) override { return Exec(sql); }
  Status Savepoint(std::string_view name) override;
  Status ReleaseSavepoint(std::string_view name) override;
  Status RollbackToSavepoint(std::string_view name) override;

 private:
  // RunSql's statement of `sql`: the cached one, or TranslateSqlParams' check of the
  // text and then Prepare.
  Result<Statement> PrepareShared(std::string_view sql);

  // Looked up by string_view: no key copy per Prepare of a cached statement.
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const {
      return std::hash<std::string_view>()(sql);
    }
  };
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*, SqlHash, std::equal_to<>> cache_;
};

// Translates a SQLite result code into a Status.
Status SqliteStatus(sqlite3* db, int rc, std::string_view what);

// A read transaction held open on a connection of its own (Database::BeginSnapshot):
// what it reads, and the copy it writes, is the database as of the instant it began,
// however long it is kept and whatever commits meanwhile (WAL: writers go on, and
// checkpoints stop short of what it still reads). For backups. Not thread-safe.
class DatabaseSnapshot {
 public:
  ~DatabaseSnapshot();  // ends the read transaction and closes the connection
  DatabaseSnapshot(const DatabaseSnapshot&) = delete;
  DatabaseSnapshot& operator=(const DatabaseSnapshot&) = delete;

  // Writes the snapshot to a new database file at `path` (replaced if present) with
  // SQLite's online backup API, as one self-contained file (rollback journal mode; the
  // server turns WAL on again when it opens it), synced. Returns its size in bytes.
  Result<int64_t> CopyTo(const std::string& path);

 private:
  friend class Database;
  explicit DatabaseSnapshot(std::unique_ptr<SqliteConnection> conn)
      : conn_(std::move(conn)) {}
  std::unique_ptr<SqliteConnection> conn_;
};

// A work function that needs SQLite's own connection (Database's Write, WriteAsync and
// Read accept it besides Transactions::Work).
template <typename F>
concept SqliteOnly = std::is_invocable_r_v<Status, F&, SqliteConnection&> &&
    !std::is_invocable_v<F&, Connection&>;

enum class SyncMode {
  kOff,     // no syncs: for --in-memory and tests only
  kNormal,  // WAL + synchronous=NORMAL: a committed write survives a process crash
  kFull,    // WAL + synchronous=FULL: also survives power loss
};

// The SQLite implementation of Transactions. Thread-safe: every public method may be
// called from any thread (Open and the destructor excepted).
class Database final : public Transactions {
 public:
  struct Options {
    // Path of the database file. Created if missing.
    std::string path;
    SyncMode sync = SyncMode::kNormal;
    // Read connections in the pool. Default: 4.
    int read_connections = 4;
    // Most Write() calls folded into one transaction. Default: 256.
    int max_batch = 256;
    // The application's migrations, applied with the emulator's own
    // (EmulatorMigrations) in one version order. A version both lists hold is refused
    // (InvalidArgument). Default: none — the database holds only the emulator's tables.
    std::vector<Migration> migrations;
    // The application release applying migrations (recorded with each, and named when
    // a newer release's database is refused). Default: unknown.
    std::string release;
    // Fault points of the migrations (ApplyMigrations). May be null.
    FaultInjector* faults = nullptr;
    // Tests: applies the migrations up to this version only (none: all;
    // ApplyMigrations).
    std::optional<int> target_version;
    // Time as SQL sees it: `sheetlog_now_micros()` in triggers and statements returns
    // this clock's NowMicros(). Default: SystemClock.
    Clock* clock = nullptr;
  };

  // Opens (creating if needed) the database and applies the emulator's and
  // `options.migrations`.
  // Fails with FailedPrecondition if the file comes from a newer sheetlog.
  static Result<std::unique_ptr<Database>> Open(const Options& options);
  ~Database() override;

  using WorkFn = Work;

  // Runs `work` in a write transaction shared with concurrent callers. If `work` returns
  // an error its changes are rolled back and that error is returned; otherwise returns
  // OK once the transaction is durable. `work` may run on another caller's thread.
  Status Write(const WorkFn& work) override EXCLUDES(write_mu_);

  // Transactions::WriteAsync. A caller that finds no commit in progress commits its own
  // batch on its thread (no hand-off for a lone writer); otherwise its write is queued
  // and it returns at once. When an asynchronous write is next in line after a batch,
  // the database's committer thread (started on first use) takes the lead, so batches
  // follow each other back to back and no caller is held to lead; a synchronous Write
  // next in line is handed the lead as before. `done` runs outside every lock, after
  // the lead has passed on (so it may write), and must not throw. The destructor waits
  // for the writes left to the committer.
  void WriteAsync(WorkFn work, std::function<void(Status)> done) override
      EXCLUDES(write_mu_);

  // Runs `work` in a read transaction on a pooled read connection: it sees one
  // consistent committed state, never the writer's uncommitted changes.
  Status Read(const WorkFn& work) override EXCLUDES(read_mu_);

  // The same for work in SQLite's own SQL (tests and benchmarks: Prepare, Exec and
  // Statement): `work` takes the SqliteConnection itself.
  template <SqliteOnly SqliteWork>
  Status Write(SqliteWork&& work) EXCLUDES(write_mu_) {
    return Write(WorkFn([&work](Connection& conn) {
      return work(static_cast<SqliteConnection&>(conn));
    }));
  }
  template <SqliteOnly SqliteWork>
  void WriteAsync(SqliteWork work, std::function<void(Status)> done) EXCLUDES(write_mu_) {
    WriteAsync(WorkFn([work = std::move(work)](Connection& conn) {
                 return work(static_cast<SqliteConnection&>(conn));
               }),
               std::move(done));
  }
  template <SqliteOnly SqliteWork>
  Status Read(SqliteWork&& work) EXCLUDES(read_mu_) {
    return Read(WorkFn([&work](Connection& conn) {
      return work(static_cast<SqliteConnection&>(conn));
    }));
  }

  // Called (on the committing thread, outside any lock) after every committed write
  // batch that wrote a change-feed record. Used by the change feed to wake its readers.
  // A batch counts as such when one of its statements called sheetlog_now_micros(),
  // which only the change-feed triggers do (emulator/stream/stream_triggers.h, and the
  // hand-written entry triggers older data directories keep): batches that touch no
  // stream-fed table (checkpoints, queues, history) wake nobody.
  void AddCommitListener(std::function<void()> listener) override EXCLUDES(listeners_mu_);

  // Starts a DatabaseSnapshot: the instant is fixed when this returns.
  Result<std::unique_ptr<DatabaseSnapshot>> BeginSnapshot();

  // Current schema version.
  int schema_version() const { return schema_version_; }
  const std::string& path() const { return options_.path; }

  struct Stats {
    int64_t batches = 0;
    int64_t writes = 0;
  };
  Stats stats() const EXCLUDES(write_mu_);

 private:
  explicit Database(const Options& options);
  Status Init();
  Result<std::unique_ptr<SqliteConnection>> OpenConnection(bool writer);
  Status CommitBatch(std::vector<struct PendingWrite*>& batch);
  // REQUIRES: the caller holds write_mu_ and leads. Commits one batch from the front
  // of the queue, passes the lead on (to the next synchronous writer in line, or
  // releases it and leaves the rest to the committer thread), then, with no lock held,
  // wakes the batch's synchronous writers (except `self`, the caller's own) and runs
  // the asynchronous writers' `done`, then the commit listeners. Returns with write_mu_
  // released.
  void LeadBatch(struct PendingWrite* self) RELEASE(write_mu_) EXCLUDES(listeners_mu_);
  // The committer thread: leads whenever writes were left to it and nobody else leads.
  void CommitterLoop() EXCLUDES(write_mu_);
  static void NowFunction(sqlite3_context* ctx, int argc, sqlite3_value** argv);

  Options options_;
  int schema_version_ = 0;
  std::unique_ptr<SqliteConnection> writer_;

  // What the SQL functions of every connection see (user data of sheetlog_now_micros).
  struct SqlContext {
    Clock* clock = nullptr;
    // Set when a statement called sheetlog_now_micros() (a change-feed trigger fired);
    // read and cleared by the leader after each batch.
    std::atomic<bool> feed_written{false};
  };
  SqlContext sql_context_;

  // Group commit queue (leveldb style): one writer at a time leads, taking the queued
  // writers into its batch; when it is done it hands the lead to the next in line.
  mutable Mutex write_mu_;
  std::deque<struct PendingWrite*> writers_ GUARDED_BY(write_mu_);
  bool leader_active_ GUARDED_BY(write_mu_) = false;
  Stats stats_ GUARDED_BY(write_mu_);
  // Asynchronous writes were left queued with the lead released: the committer thread
  // takes the lead unless another writer has.
  bool committer_has_work_ GUARDED_BY(write_mu_) = false;
  bool committer_stopping_ GUARDED_BY(write_mu_) = false;
  CondVar committer_cv_;
  std::thread committer_;  // started by the first hand-off to it

  Mutex read_mu_;
  CondVar read_cv_;
  std::vector<std::unique_ptr<SqliteConnection>> idle_readers_ GUARDED_BY(read_mu_);

  Mutex listeners_mu_;
  std::vector<std::function<void()>> listeners_ GUARDED_BY(listeners_mu_);
};

}  // namespace sheetlog
