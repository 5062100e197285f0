#include "emulator/postgres/postgres_database.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "emulator/env/clock.h"

namespace sheetlog {

namespace {

// Full-jitter exponential backoff: uniform in [0, min(cap, base * 2^attempt)].
int64_t AbortBackoffMicros(int attempt, int64_t base, int64_t cap) {
  thread_local std::mt19937_64 rng(std::random_device{}());
  int64_t ceiling = std::max<int64_t>(base, 0) << std::min(attempt, 20);
  ceiling = std::min(ceiling, cap);
  std::uniform_int_distribution<int64_t> dist(0, std::max<int64_t>(ceiling, 0));
  return dist(rng);
}

}  // namespace

PostgresDatabase::PostgresDatabase(const Options& options) : options_(options) {
  if (options_.clock == nullptr) options_.clock = SystemClock::Default();
}

PostgresDatabase::~PostgresDatabase() {
  std::thread sender;
  {
    MutexLock lock(&wake_mu_);
    stop_waking_ = true;
    sender = std::move(wake_thread_);
  }
  wake_cv_.NotifyAll();
  if (sender.joinable()) sender.join();
  std::thread listener;
  {
    MutexLock lock(&listeners_mu_);
    listener = std::move(listen_thread_);
  }
  if (listener.joinable()) {
    stop_listening_.store(true);
    const char byte = 1;
    (void)!write(stop_pipe_[1], &byte, 1);
    listener.join();
  }
  for (int fd : stop_pipe_) {
    if (fd >= 0) close(fd);
  }
}

void PostgresDatabase::AddRemoteCommitListener(RemoteChange kind,
                                               std::function<void()> listener) {
  // Registrations one at a time: none returns before the channel is listened on.
  MutexLock start(&listen_start_mu_);
  {
    MutexLock lock(&listeners_mu_);
    remote_listeners_[kind].push_back(std::move(listener));
    if (listen_thread_.joinable()) return;
  }
  if (pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    spdlog::error(
        "postgres: no pipe for the listening thread; other nodes' commits "
        "will be noticed at deadlines only");
    return;
  }
  // LISTEN before returning: whatever the listener's owner reads from here on, a later
  // commit of another node wakes it. Doing it in the thread instead would have to wake
  // every listener once it listens (nothing says what it missed), a spurious wake-up
  // at a time nobody chose.
  Result<std::unique_ptr<PostgresConnection>> conn = OpenListeningConnection();
  if (!conn.ok()) {
    spdlog::warn("postgres: listening for other nodes' commits failed (retrying): {}",
                 conn.status().ToString());
  }
  std::unique_ptr<PostgresConnection> listening = conn.ok() ? std::move(*conn) : nullptr;
  MutexLock lock(&listeners_mu_);
  listen_thread_ = std::thread(
      [this, first = std::move(listening)]() mutable { ListenLoop(std::move(first)); });
}

Result<std::unique_ptr<PostgresConnection>> PostgresDatabase::OpenListeningConnection() {
  ASSIGN_OR_RETURN(
      std::unique_ptr<PostgresConnection> conn,
      PostgresConnection::Open(options_.conninfo, options_.connect_timeout_seconds));
  RETURN_IF_ERROR(conn->Exec(std::string("LISTEN ") + kPostgresWakeChannel));
  return conn;
}

void PostgresDatabase::TellRemoteListeners(RemoteChange kind) {
  std::vector<std::function<void()>> listeners;
  {
    MutexLock lock(&listeners_mu_);
    listeners = remote_listeners_[kind];
  }
  for (auto& listener : listeners) listener();
}

bool PostgresDatabase::IsOwnBackend(int backend_pid) {
  MutexLock lock(&mu_);
  return own_backends_.count(backend_pid) > 0;
}

void PostgresDatabase::ListenLoop(std::unique_ptr<PostgresConnection> conn) {
  int backoff_ms = conn == nullptr ? 100 : 0;
  bool warned = conn == nullptr;  // AddRemoteCommitListener warned already
  while (!stop_listening_.load()) {
    if (conn == nullptr) {
      pollfd stop{stop_pipe_[0], POLLIN, 0};
      (void)poll(&stop, 1, backoff_ms);
      if (stop_listening_.load()) return;
      backoff_ms = std::min(backoff_ms * 2, 5000);
      Result<std::unique_ptr<PostgresConnection>> opened = OpenListeningConnection();
      if (!opened.ok()) {
        if (!warned) {
          spdlog::warn(
              "postgres: listening for other nodes' commits failed (retrying): {}",
              opened.status().ToString());
          warned = true;
        }
        continue;
      }
      conn = std::move(*opened);
      spdlog::info("postgres: listening for other nodes' commits again");
      warned = false;
      // Whatever other nodes committed while nobody listened.
      TellRemoteListeners(RemoteChange::kChangeFeed);
      TellRemoteListeners(RemoteChange::kQueue);
    }
    while (!stop_listening_.load()) {
      Result<std::vector<PostgresNotification>> received =
          conn->AwaitNotifications(stop_pipe_[0]);
      if (!received.ok()) {
        spdlog::warn("postgres: the listening connection was lost: {}",
                     received.status().ToString());
        conn.reset();
        backoff_ms = 100;
        break;
      }
      bool feed = false;
      bool queue = false;
      for (const PostgresNotification& n : *received) {
        if (IsOwnBackend(n.backend_pid)) continue;
        if (n.payload == RemoteChangePayload(RemoteChange::kChangeFeed)) feed = true;
        if (n.payload == RemoteChangePayload(RemoteChange::kQueue)) queue = true;
      }
      if (feed) TellRemoteListeners(RemoteChange::kChangeFeed);
      if (queue) TellRemoteListeners(RemoteChange::kQueue);
    }
  }
}

namespace {

// The wake sender's pause after each NOTIFY: what it sends meanwhile waits at most this
// long, and a node sends at most 1 / this many a second.
constexpr auto kWakeCoalesce = std::chrono::milliseconds(2);

}  // namespace

void PostgresDatabase::PostWakes(const std::vector<RemoteChange>& kinds) {
  if (kinds.empty()) return;
  {
    MutexLock lock(&wake_mu_);
    if (stop_waking_) return;
    wakes_pending_.insert(kinds.begin(), kinds.end());
    if (!wake_thread_.joinable()) wake_thread_ = std::thread([this] { WakeSendLoop(); });
  }
  wake_cv_.NotifyOne();
}

void PostgresDatabase::WakeSendLoop() {
  std::unique_ptr<PostgresConnection> conn;
  auto backoff = std::chrono::milliseconds(100);
  bool warned = false;
  MutexLock lock(&wake_mu_);
  while (true) {
    while (!stop_waking_ && wakes_pending_.empty()) wake_cv_.Wait(wake_mu_);
    if (stop_waking_) break;
    std::set<RemoteChange> kinds;
    kinds.swap(wakes_pending_);
    lock.Unlock();
    Status sent;
    if (conn == nullptr) {
      Result<std::unique_ptr<PostgresConnection>> opened =
          PostgresConnection::Open(options_.conninfo, options_.connect_timeout_seconds);
      if (opened.ok()) {
        conn = std::move(*opened);
        // Its notifications are this node's: its own listener skips them.
        MutexLock pool(&mu_);
        own_backends_.insert(conn->backend_pid());
      } else {
        sent = opened.status();
      }
    }
    if (conn != nullptr) {
      std::string notifies;
      for (RemoteChange kind : kinds) {
        if (!notifies.empty()) notifies += ", ";
        notifies += std::string("pg_notify('") + kPostgresWakeChannel + "', '" +
                    RemoteChangePayload(kind) + "')";
      }
      const std::string sql = "SELECT " + notifies;
      sent = conn->Exec(sql);
      if (sent.ok()) wakes_sent_.fetch_add(1, std::memory_order_relaxed);
    }
    lock.Lock();
    if (sent.ok()) {
      if (warned) spdlog::info("postgres: waking other nodes again");
      warned = false;
      backoff = std::chrono::milliseconds(100);
      // Commits meanwhile gather in wakes_pending_ and go out together.
      wake_cv_.WaitFor(wake_mu_, kWakeCoalesce);
      continue;
    }
    // Not sent: kept for the next try. Other nodes notice at their deadlines (and when
    // their own listening connection is restored) meanwhile.
    if (!warned) {
      spdlog::warn("postgres: waking other nodes failed (retrying): {}", sent.ToString());
      warned = true;
    }
    wakes_pending_.insert(kinds.begin(), kinds.end());
    if (conn != nullptr && !conn->usable()) {
      MutexLock pool(&mu_);
      own_backends_.erase(conn->backend_pid());
    }
    if (conn != nullptr && !conn->usable()) conn.reset();
    if (!stop_waking_) wake_cv_.WaitFor(wake_mu_, backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
  lock.Unlock();
  if (conn != nullptr) {
    MutexLock pool(&mu_);
    own_backends_.erase(conn->backend_pid());
  }
}

Result<std::unique_ptr<PostgresDatabase>> PostgresDatabase::Open(const Options& options) {
  if (options.connections < 1) {
    return InvalidArgument("a PostgreSQL database needs at least one connection");
  }
  ASSIGN_OR_RETURN(std::string where, DescribePostgresConninfo(options.conninfo));
  std::unique_ptr<PostgresDatabase> db(new PostgresDatabase(options));
  db->where_ = std::move(where);
  std::vector<Migration> migrations = EmulatorPostgresMigrations();
  migrations.insert(migrations.end(), options.migrations.begin(),
                    options.migrations.end());
  MigrationOptions migrating;
  migrating.release = options.release;
  migrating.faults = options.faults;
  migrating.target_version = options.target_version;
  migrating.database = "the PostgreSQL database at " + db->where_;
  ASSIGN_OR_RETURN(db->schema_version_,
                   ApplyMigrations(*db, std::move(migrations), migrating));
  return db;
}

Result<std::unique_ptr<PostgresConnection>> PostgresDatabase::Acquire() {
  {
    MutexLock lock(&mu_);
    while (idle_.empty() && open_ >= options_.connections) idle_cv_.Wait(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<PostgresConnection> conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
    ++open_;  // a slot for the connection opened below, outside the lock
  }
  Result<std::unique_ptr<PostgresConnection>> conn =
      PostgresConnection::Open(options_.conninfo, options_.connect_timeout_seconds);
  MutexLock lock(&mu_);
  if (!conn.ok()) {
    --open_;
    idle_cv_.NotifyOne();
  } else {
    own_backends_.insert((*conn)->backend_pid());
  }
  return conn;
}

void PostgresDatabase::Release(std::unique_ptr<PostgresConnection> conn) {
  MutexLock lock(&mu_);
  if (conn->usable()) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;  // lost: the next Acquire connects afresh
    own_backends_.erase(conn->backend_pid());
  }
  idle_cv_.NotifyOne();
}

Result<std::unique_ptr<PostgresConnection>> PostgresDatabase::BeginTransaction(
    const std::string& mode) {
  // The node's clock travels with the transaction (sheetlog_now_micros()): read for
  // each transaction, so a Write run again sees the time of its own BEGIN.
  const std::string clock_setting = "SELECT set_config('sheetlog.now_micros', '" +
                                    std::to_string(options_.clock->NowMicros()) +
                                    "', true)";
  Status status;
  // An idle connection may have been lost meanwhile (the server restarted, failed
  // over): nothing has run on it yet, so another one is tried, up to the whole pool
  // and then a new one.
  for (int attempt = 0; attempt <= options_.connections; ++attempt) {
    ASSIGN_OR_RETURN(std::unique_ptr<PostgresConnection> conn, Acquire());
    status = conn->Begin(mode, clock_setting);
    if (status.ok()) return conn;
    const bool usable = conn->usable();
    if (usable) conn->Rollback();  // whatever of the BEGIN's round trip took effect
    Release(std::move(conn));
    if (usable) break;  // the server refused the BEGIN itself
  }
  return status;
}

Status PostgresDatabase::Run(const Work& work, const std::string& mode, bool write) {
  ASSIGN_OR_RETURN(std::unique_ptr<PostgresConnection> conn, BeginTransaction(mode));
  bool fed = false;
  std::vector<RemoteChange> wakes;
  Status status = work(*conn);
  if (status.ok()) {
    wakes = conn->TakeWakesAtCommit();
    status = write ? conn->CommitProbing("sheetlog.feed_written", &fed) : conn->Commit();
  } else {
    conn->Rollback();
  }
  Release(std::move(conn));
  if (!status.ok()) return status;
  AfterCommit(fed, std::move(wakes));
  return status;
}

void PostgresDatabase::AfterCommit(bool fed, std::vector<RemoteChange> wakes) {
  // A commit that fed the change feed wakes the other nodes' readers too.
  if (fed) wakes.push_back(RemoteChange::kChangeFeed);
  PostWakes(wakes);
  if (!fed) return;
  std::vector<std::function<void()>> listeners;
  {
    MutexLock lock(&listeners_mu_);
    listeners = listeners_;
  }
  for (auto& listener : listeners) listener();
}

void PostgresDatabase::WriteAsync(Work work, std::function<void(Status)> done) {
  MutexLock lock(&batch_mu_);
  batch_queue_.push_back(QueuedWrite{std::move(work), std::move(done)});
  if (batch_running_) return;  // the running caller takes it into its next batch
  batch_running_ = true;
  const size_t limit = static_cast<size_t>(std::max(1, options_.batch_limit));
  while (!batch_queue_.empty()) {
    std::vector<QueuedWrite> batch;
    const size_t take = std::min(limit, batch_queue_.size());
    batch.reserve(take);
    for (size_t i = 0; i < take; ++i) batch.push_back(std::move(batch_queue_[i]));
    batch_queue_.erase(batch_queue_.begin(), batch_queue_.begin() + take);
    lock.Unlock();
    RunBatch(batch);
    lock.Lock();
  }
  batch_running_ = false;
}

void PostgresDatabase::RunBatch(std::vector<QueuedWrite>& batch) {
  batches_.fetch_add(1, std::memory_order_relaxed);
  batched_works_.fetch_add(static_cast<int64_t>(batch.size()), std::memory_order_relaxed);
  // Every work on its own (each its own transaction, Write's runs again): what a batch
  // that cannot commit as one falls back to.
  auto one_by_one = [&] {
    for (QueuedWrite& queued : batch) queued.done(Write(queued.work));
  };
  if (batch.size() == 1) return one_by_one();

  Result<std::unique_ptr<PostgresConnection>> begun = BeginTransaction("");
  if (!begun.ok()) {
    for (QueuedWrite& queued : batch) queued.done(begun.status());
    return;
  }
  std::unique_ptr<PostgresConnection> conn = std::move(*begun);
  Status status;
  std::vector<Status> outcomes(batch.size());
  bool alone = false;  // a work failed in a way the others cannot commit past
  for (size_t i = 0; i < batch.size() && !alone; ++i) {
    const int64_t writes_before = conn->possible_writes();
    outcomes[i] = batch[i].work(*conn);
    if (outcomes[i].ok()) continue;
    alone = outcomes[i].IsAborted() || conn->transaction_failed() ||
            conn->possible_writes() != writes_before;
  }
  if (alone) {
    conn->Rollback();
    Release(std::move(conn));
    return one_by_one();
  }
  std::vector<RemoteChange> wakes = conn->TakeWakesAtCommit();
  bool fed = false;
  status = conn->CommitProbing("sheetlog.feed_written", &fed);
  Release(std::move(conn));
  if (status.IsAborted()) return one_by_one();  // nothing committed: each on its own
  if (status.ok()) AfterCommit(fed, std::move(wakes));
  for (size_t i = 0; i < batch.size(); ++i) {
    // A work that failed alone keeps its own answer; the others share the commit's.
    batch[i].done(outcomes[i].ok() ? status : outcomes[i]);
  }
}

Status PostgresDatabase::Write(const Work& work) {
  const int attempts = std::max(1, options_.write_attempts);
  for (int attempt = 1;; ++attempt) {
    Status status = Run(work, "", /*write=*/true);
    // Aborted: rolled back whole by concurrency (status.h), nothing written; the work
    // decides again from what it reads. Any other error is the work's answer, and a
    // commit whose outcome is unknown is Unavailable, never run twice.
    if (!status.IsAborted() || attempt >= attempts) return status;
    aborted_writes_retried_.fetch_add(1, std::memory_order_relaxed);
    spdlog::debug(
        "postgres: a write was aborted ({}); running it again (attempt {} of {})",
        status.message(), attempt + 1, attempts);
    options_.clock->SleepForMicros(AbortBackoffMicros(attempt - 1,
                                                      options_.abort_backoff_base_micros,
                                                      options_.abort_backoff_cap_micros));
  }
}

Status PostgresDatabase::Read(const Work& work) {
  return Run(work, "ISOLATION LEVEL REPEATABLE READ READ ONLY", /*write=*/false);
}

Status PostgresDatabase::ReadEach(const Work& work) {
  Status status;
  // An idle connection may have been lost meanwhile (the server restarted): the work
  // only reads, so it runs once more on a new connection.
  for (int attempt = 0; attempt < 2; ++attempt) {
    ASSIGN_OR_RETURN(std::unique_ptr<PostgresConnection> conn, Acquire());
    conn->BeginStatements();
    status = work(*conn);
    const bool lost = !conn->usable();
    Release(std::move(conn));
    if (!lost || status.ok()) break;
  }
  return status;
}

void PostgresDatabase::AddCommitListener(std::function<void()> listener) {
  MutexLock lock(&listeners_mu_);
  listeners_.push_back(std::move(listener));
}

}  // namespace sheetlog
