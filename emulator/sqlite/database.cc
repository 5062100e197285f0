#include "emulator/sqlite/database.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include "emulator/env/clock.h"

namespace sheetlog {

// ---------------------------------------------------------------------------
// Statement

Statement::~Statement() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Statement& Statement::BindNull(int i) {
  sqlite3_bind_null(stmt_, i);
  return *this;
}

Statement& Statement::Bind(int i, int64_t v) {
  sqlite3_bind_int64(stmt_, i, v);
  return *this;
}

Statement& Statement::Bind(int i, double v) {
  sqlite3_bind_double(stmt_, i, v);
  return *this;
}

Statement& Statement::Bind(int i, std::string_view text) {
  sqlite3_bind_text64(stmt_, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Statement& Statement::BindBlob(int i, std::string_view bytes) {
  sqlite3_bind_blob64(stmt_, i, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  return *this;
}

Result<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteStatus(db_, rc, sqlite3_sql(stmt_));
}

Status Statement::Run() {
  while (true) {
    Result<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::OK();
  }
}

bool Statement::IsNull(int col) const {
  return sqlite3_column_type(stmt_, col) == SQLITE_NULL;
}
int64_t Statement::ColumnInt(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::ColumnDouble(int col) const {
  return sqlite3_column_double(stmt_, col);
}
std::string Statement::ColumnText(int col) const { return std::string(ColumnView(col)); }
std::string_view Statement::ColumnView(int col) const {
  const void* data = sqlite3_column_blob(stmt_, col);
  int size = sqlite3_column_bytes(stmt_, col);
  if (data == nullptr) return {};
  return std::string_view(static_cast<const char*>(data), static_cast<size_t>(size));
}
int Statement::ColumnType(int col) const { return sqlite3_column_type(stmt_, col); }
int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }

// ---------------------------------------------------------------------------
// SqliteConnection

Status SqliteStatus(sqlite3* db, int rc, std::string_view what) {
  if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) return Status::OK();
  std::string message = "sqlite: ";
  message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  message += " (";
  message += what.substr(0, 120);
  message += ")";
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Unavailable(message);
  if (primary == SQLITE_CONSTRAINT) return ConditionFailed(message);
  // A full disk is SQLITE_FULL, or an I/O error whose errno says so (a failed fsync or
  // WAL-index grow); either way nothing was committed and retrying after space is
  // freed succeeds.
  const int system_errno = db != nullptr ? sqlite3_system_errno(db) : 0;
  if (primary == SQLITE_FULL ||
      (primary == SQLITE_IOERR && (system_errno == ENOSPC || system_errno == EDQUOT))) {
    return InsufficientStorage("the disk is full: " + message);
  }
  return Internal(message);
}

SqliteConnection::~SqliteConnection() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Result<Statement> SqliteConnection::Prepare(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return Statement(db_, it->second);
  std::string key(sql);
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, key.data(), static_cast<int>(key.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(db_, rc, sql);
  cache_.emplace(std::move(key), stmt);
  return Statement(db_, stmt);
}

Status SqliteConnection::Exec(std::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return Status::OK();
  std::string message = error != nullptr ? error : sqlite3_errstr(rc);
  sqlite3_free(error);
  Status status = SqliteStatus(db_, rc, text);
  return Status(status.code(), "sqlite: " + message + " (" + text.substr(0, 120) + ")");
}

// ---------------------------------------------------------------------------
// Database

namespace {

// sheetlog_hash(a, b, ...): FNV-1a over the text of every argument, as a non-negative
// integer. Stable across versions and platforms: stream shards are derived from it.
void HashFunction(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  uint64_t h = 1469598103934665603ULL;
  for (int i = 0; i < argc; ++i) {
    const unsigned char* text = sqlite3_value_text(argv[i]);
    int n = sqlite3_value_bytes(argv[i]);
    for (int j = 0; j < n; ++j) {
      h ^= text[j];
      h *= 1099511628211ULL;
    }
    h ^= 0xff;  // argument separator: ("ab","c") differs from ("a","bc")
    h *= 1099511628211ULL;
  }
  sqlite3_result_int64(ctx, static_cast<int64_t>(h & 0x7fffffffffffffffULL));
}

// Futex wait and wake on a writer's state word (Linux): a follower sleeps on its own
// word, so waking it takes no shared lock (no convoy on write_mu_ after a commit).
void FutexWait(std::atomic<int>* word, int expected) {
  syscall(SYS_futex, reinterpret_cast<int*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}
void FutexWake(std::atomic<int>* word) {
  syscall(SYS_futex, reinterpret_cast<int*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
}

}  // namespace

// sheetlog_now_micros(): the injected clock, so triggers timestamp stream records with
// the same time the rest of the system sees (a ManualClock in tests). Only the
// change-feed triggers call it: the call also marks the batch as having fed the feed.
void Database::NowFunction(sqlite3_context* ctx, int, sqlite3_value**) {
  auto* context = static_cast<SqlContext*>(sqlite3_user_data(ctx));
  context->feed_written.store(true, std::memory_order_relaxed);
  sqlite3_result_int64(ctx, context->clock->NowMicros());
}

namespace {

const char* SyncPragma(SyncMode mode) {
  switch (mode) {
    case SyncMode::kOff:
      return "PRAGMA synchronous=OFF";
    case SyncMode::kNormal:
      return "PRAGMA synchronous=NORMAL";
    case SyncMode::kFull:
      return "PRAGMA synchronous=FULL";
  }
  return "PRAGMA synchronous=NORMAL";
}

}  // namespace

struct PendingWrite {
  enum : int { kQueued = 0, kDone = 1, kLead = 2 };
  const Database::WorkFn* work = nullptr;
  Status status;  // written by the leader before it stores kDone
  // kQueued until the leader that committed this write stores kDone (release), or the
  // previous leader hands over the lead with kLead. Waited on with a futex.
  std::atomic<int> state{kQueued};
  // WriteAsync: the write owns its work, nobody waits on `state`, and `done` is told
  // the outcome; the leader deletes it after `done`.
  Database::WorkFn owned_work;
  std::function<void(Status)> done;

  bool is_async() const { return static_cast<bool>(done); }
};

Database::Database(const Options& options) : options_(options) {
  if (options_.clock == nullptr) options_.clock = SystemClock::Default();
  sql_context_.clock = options_.clock;
}

Database::~Database() {
  MutexLock lock(&write_mu_);
  committer_stopping_ = true;
  committer_cv_.NotifyAll();
  lock.Unlock();
  // The committer finishes what was handed to it (every queued asynchronous write)
  // before it exits.
  if (committer_.joinable()) committer_.join();
}

Result<std::unique_ptr<Database>> Database::Open(const Options& options) {
  // SQLite's memory statistics (sqlite3_memory_used, which sheetlog never reads) take
  // a process-wide mutex around every allocation of every connection: off, before the
  // library initializes (a later call is refused, harmlessly).
  static const int kNoMemStatus = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  (void)kNoMemStatus;
  std::unique_ptr<Database> db(new Database(options));
  RETURN_IF_ERROR(db->Init());
  return db;
}

Result<std::unique_ptr<SqliteConnection>> Database::OpenConnection(bool writer) {
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
  if (writer) flags |= SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(options_.path.c_str(), &raw, flags, nullptr);
  auto conn = std::make_unique<SqliteConnection>(raw);
  if (rc != SQLITE_OK) return SqliteStatus(raw, rc, "open " + options_.path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_create_function_v2(raw, "sheetlog_hash", -1,
                             SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS,
                             nullptr, HashFunction, nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(raw, "sheetlog_now_micros", 0,
                             SQLITE_UTF8 | SQLITE_INNOCUOUS, &sql_context_, NowFunction,
                             nullptr, nullptr, nullptr);
  RETURN_IF_ERROR(conn->Exec("PRAGMA busy_timeout=10000"));
  RETURN_IF_ERROR(conn->Exec("PRAGMA temp_store=MEMORY"));
  RETURN_IF_ERROR(conn->Exec("PRAGMA cache_size=-16000"));
  if (writer) {
    RETURN_IF_ERROR(conn->Exec("PRAGMA journal_mode=WAL"));
    RETURN_IF_ERROR(conn->Exec(SyncPragma(options_.sync)));
  } else {
    RETURN_IF_ERROR(conn->Exec("PRAGMA query_only=1"));
  }
  return conn;
}

Status Database::Init() {
  ASSIGN_OR_RETURN(writer_, OpenConnection(/*writer=*/true));
  // Each migration a Write of its own: the group commit is ready (no reader is needed).
  std::vector<Migration> migrations = EmulatorMigrations();
  migrations.insert(migrations.end(), options_.migrations.begin(),
                    options_.migrations.end());
  MigrationOptions migrating;
  migrating.release = options_.release;
  migrating.faults = options_.faults;
  migrating.target_version = options_.target_version;
  migrating.database = "the database " + options_.path;
  migrating.instead = "another --data-dir";
  ASSIGN_OR_RETURN(schema_version_,
                   ApplyMigrations(*this, std::move(migrations), migrating));
  for (int i = 0; i < std::max(1, options_.read_connections); ++i) {
    ASSIGN_OR_RETURN(auto reader, OpenConnection(/*writer=*/false));
    MutexLock lock(&read_mu_);  // not shared yet; the analysis wants it all the same
    idle_readers_.push_back(std::move(reader));
  }
  return Status::OK();
}

namespace {

// Runs one cached transaction-control statement (BEGIN, SAVEPOINT, COMMIT ...): prepared
// once per connection instead of parsed by sqlite3_exec on every call.
Status Control(SqliteConnection& conn, std::string_view sql) {
  Result<Statement> stmt = conn.Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  return stmt->Run();
}

// The work function of one write, exceptions turned into Internal.
Status RunWork(const Database::WorkFn& work, SqliteConnection& conn) {
  try {
    return work(conn);
  } catch (const std::exception& e) {
    return Internal(std::string("write failed with exception: ") + e.what());
  }
}

}  // namespace

Status Database::CommitBatch(std::vector<PendingWrite*>& batch) {
  SqliteConnection& conn = *writer_;
  RETURN_IF_ERROR(Control(conn, "BEGIN IMMEDIATE"));
  if (batch.size() == 1) {
    // A batch of one needs no savepoint: if the work fails, the whole transaction is
    // its own and is rolled back.
    PendingWrite* w = batch.front();
    w->status = RunWork(*w->work, conn);
    if (!w->status.ok()) {
      Status undo = Control(conn, "ROLLBACK");
      // After SQLITE_FULL SQLite has already rolled the transaction back: the write
      // failed for the work's reason, a full disk.
      if (!undo.ok()) {
        return w->status.code() == StatusCode::kInsufficientStorage ? w->status : undo;
      }
      return Status::OK();
    }
  } else {
    for (PendingWrite* w : batch) {
      Status status = Control(conn, "SAVEPOINT sheetlog_write");
      if (status.ok()) {
        status = RunWork(*w->work, conn);
        if (status.ok()) {
          status = Control(conn, "RELEASE sheetlog_write");
        } else {
          Status undo = Control(conn, "ROLLBACK TO sheetlog_write");
          if (undo.ok()) undo = Control(conn, "RELEASE sheetlog_write");
          if (!undo.ok()) {
            // The transaction is in an unknown state: fail the whole batch. After
            // SQLITE_FULL SQLite has already rolled the transaction back (savepoint
            // included): the batch failed for the work's reason, a full disk.
            (void)Control(conn, "ROLLBACK");
            return status.code() == StatusCode::kInsufficientStorage ? status : undo;
          }
        }
      }
      w->status = status;
    }
  }
  Status commit = Control(conn, "COMMIT");
  if (!commit.ok()) {
    (void)Control(conn, "ROLLBACK");
    return commit;
  }
  return Status::OK();
}

Status Database::Write(const WorkFn& work) {
  PendingWrite self;
  self.work = &work;
  write_mu_.Lock();
  writers_.push_back(&self);
  if (leader_active_) {
    // Another writer leads: wait until it committed this write, or handed the lead here.
    write_mu_.Unlock();
    int state;
    while ((state = self.state.load(std::memory_order_acquire)) ==
           PendingWrite::kQueued) {
      FutexWait(&self.state, PendingWrite::kQueued);
    }
    if (state == PendingWrite::kDone) return self.status;
    write_mu_.Lock();
  } else {
    leader_active_ = true;
  }
  // This writer leads (and is at the front): it commits itself and everyone queued
  // behind it (up to a bound).
  LeadBatch(&self);
  return self.status;
}

void Database::WriteAsync(WorkFn work, std::function<void(Status)> done) {
  auto* write = new PendingWrite;
  write->owned_work = std::move(work);
  write->work = &write->owned_work;
  write->done = std::move(done);
  write_mu_.Lock();
  writers_.push_back(write);
  if (leader_active_) {  // the leader, or the one it hands over to, commits it
    write_mu_.Unlock();
    return;
  }
  leader_active_ = true;
  LeadBatch(nullptr);
}

void Database::LeadBatch(PendingWrite* self) {
  std::vector<PendingWrite*> batch;
  while (!writers_.empty() && static_cast<int>(batch.size()) < options_.max_batch) {
    batch.push_back(writers_.front());
    writers_.pop_front();
  }
  if (self != nullptr && std::find(batch.begin(), batch.end(), self) == batch.end()) {
    // A synchronous writer that found no leader but asynchronous writes left queued
    // (for the committer) leads from behind them: its own write must be in the batch
    // it commits, or it would return before its write ran.
    writers_.erase(std::find(writers_.begin(), writers_.end(), self));
    batch.push_back(self);
  }
  write_mu_.Unlock();
  sql_context_.feed_written.store(false, std::memory_order_relaxed);
  Status batch_status = CommitBatch(batch);
  const bool fed = sql_context_.feed_written.exchange(false, std::memory_order_relaxed);
  write_mu_.Lock();
  ++stats_.batches;
  stats_.writes += static_cast<int64_t>(batch.size());
  PendingWrite* next = nullptr;
  bool wake_committer = false;
  if (!writers_.empty() && !writers_.front()->is_async()) {
    next = writers_.front();  // keeps leader_active_ for it
  } else {
    // The lead is released while `done` callbacks run, so that one may write (a
    // synchronous Write from a callback would otherwise wait for a lead its own thread
    // holds). Nobody waits on an asynchronous write to take the lead: the committer
    // thread is told to, unless a new writer takes it first.
    leader_active_ = false;
    if (!writers_.empty()) {
      committer_has_work_ = true;
      wake_committer = true;
      if (!committer_.joinable()) committer_ = std::thread([this] { CommitterLoop(); });
    }
  }
  write_mu_.Unlock();

  // Wake the followers outside the lock: each sleeps on its own word.
  std::vector<PendingWrite*> finished_async;
  for (PendingWrite* w : batch) {
    if (!batch_status.ok()) w->status = batch_status;
    if (w->is_async()) {
      finished_async.push_back(w);
      continue;
    }
    if (w == self) continue;
    w->state.store(PendingWrite::kDone, std::memory_order_release);
    FutexWake(&w->state);  // the word may be gone already; a futex wake never reads it
  }
  if (next != nullptr) {
    next->state.store(PendingWrite::kLead, std::memory_order_release);
    FutexWake(&next->state);
  }
  if (wake_committer) committer_cv_.NotifyOne();
  for (PendingWrite* w : finished_async) {
    w->done(w->status);
    delete w;
  }

  if (batch_status.ok() && fed) {
    std::vector<std::function<void()>> listeners;
    {
      MutexLock guard(&listeners_mu_);
      listeners = listeners_;
    }
    for (auto& listener : listeners) listener();
  }
}

void Database::CommitterLoop() {
  write_mu_.Lock();
  while (true) {
    while (!committer_has_work_ && !committer_stopping_) committer_cv_.Wait(write_mu_);
    if (!committer_has_work_) {  // stopping, and nothing left to it
      write_mu_.Unlock();
      return;
    }
    committer_has_work_ = false;
    // A writer that arrived meanwhile may lead already; it passes the work on again.
    if (leader_active_ || writers_.empty()) continue;
    leader_active_ = true;
    LeadBatch(nullptr);
    write_mu_.Lock();
  }
}

Result<std::unique_ptr<DatabaseSnapshot>> Database::BeginSnapshot() {
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteConnection> conn,
                   OpenConnection(/*writer=*/false));
  // BEGIN is deferred: the read transaction, and with it the instant, starts at the
  // first read.
  RETURN_IF_ERROR(conn->Exec("BEGIN"));
  ASSIGN_OR_RETURN(Statement read, conn->Prepare("SELECT COUNT(*) FROM sqlite_schema"));
  RETURN_IF_ERROR(read.Step().status());
  return std::unique_ptr<DatabaseSnapshot>(new DatabaseSnapshot(std::move(conn)));
}

DatabaseSnapshot::~DatabaseSnapshot() {
  if (conn_) (void)conn_->Exec("ROLLBACK");
}

Result<int64_t> DatabaseSnapshot::CopyTo(const std::string& path) {
  ::unlink(path.c_str());
  sqlite3* dest = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &dest,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> closer(dest, sqlite3_close_v2);
  if (rc != SQLITE_OK) return SqliteStatus(dest, rc, "open " + path);
  // The backup reads the source through its open read transaction (it begins one
  // only when there is none), so the copy is the snapshot's instant.
  sqlite3_backup* backup = sqlite3_backup_init(dest, "main", conn_->raw(), "main");
  if (backup == nullptr)
    return SqliteStatus(dest, sqlite3_errcode(dest), "backup to " + path);
  rc = sqlite3_backup_step(backup, -1);
  int finished = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) return SqliteStatus(dest, rc, "backup to " + path);
  if (finished != SQLITE_OK) return SqliteStatus(dest, finished, "backup to " + path);
  rc = sqlite3_exec(dest, "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(dest, rc, "journal mode of " + path);
  closer.reset();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Internal("open " + path + ": " + std::strerror(errno));
  struct stat st;
  const bool ok = ::fsync(fd) == 0 && ::fstat(fd, &st) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return Internal("sync " + path + ": " + std::strerror(err));
  return static_cast<int64_t>(st.st_size);
}

Status Database::Read(const WorkFn& work) {
  std::unique_ptr<SqliteConnection> conn;
  {
    MutexLock lock(&read_mu_);
    while (idle_readers_.empty()) read_cv_.Wait(read_mu_);
    conn = std::move(idle_readers_.back());
    idle_readers_.pop_back();
  }
  Status status = Control(*conn, "BEGIN");
  if (status.ok()) {
    try {
      status = work(*conn);
    } catch (const std::exception& e) {
      status = Internal(std::string("read failed with exception: ") + e.what());
    }
    Status end = Control(*conn, "COMMIT");
    if (!end.ok()) (void)Control(*conn, "ROLLBACK");
  }
  {
    MutexLock lock(&read_mu_);
    idle_readers_.push_back(std::move(conn));
  }
  read_cv_.NotifyOne();
  return status;
}

void Database::AddCommitListener(std::function<void()> listener) {
  MutexLock guard(&listeners_mu_);
  listeners_.push_back(std::move(listener));
}

Database::Stats Database::stats() const {
  MutexLock lock(&write_mu_);
  return stats_;
}

}  // namespace sheetlog
