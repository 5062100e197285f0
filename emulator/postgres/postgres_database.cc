#include "emulator/postgres/postgres_database.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "emulator/env/clock.h"

namespace sheetlog {

namespace {

// The advisory lock key migrations hold (any constant no other code uses: "shtlog").
constexpr int64_t kMigrationLock = 0x7368746c6f67;

Result<int> MigrateLocked(PostgresConnection& conn,
                          const std::vector<Migration>& migrations,
                          const std::string& release) {
  const Value lock_key(kMigrationLock);
  RETURN_IF_ERROR(conn.Run("SELECT pg_advisory_xact_lock($1)", {&lock_key}).status());
  RETURN_IF_ERROR(
      conn.Exec("CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY,"
                " name text NOT NULL, release text)"));
  int current = 0;
  std::string writer;
  RETURN_IF_ERROR(conn.Run("SELECT version, COALESCE(release, '') FROM schema_version"
                           " ORDER BY version DESC LIMIT 1",
                           {},
                           [&](const PostgresRow& row) {
                             current = static_cast<int>(row.ValueAt(0).AsInt());
                             writer = std::string(row.Text(1));
                             return false;
                           })
                      .status());
  int newest_known = 0;
  for (const Migration& m : migrations) newest_known = std::max(newest_known, m.version);
  if (current > newest_known) {
    return FailedPrecondition(
        "the PostgreSQL database at " + conn.where() +
        " is newer than this binary: it has schema version " + std::to_string(current) +
        ", written by sheetlog " +
        (writer.empty() ? std::string("(a newer release)") : writer) +
        "; this is sheetlog " + (release.empty() ? std::string("(unknown)") : release) +
        ", which knows schema versions up to " + std::to_string(newest_known) +
        ". Run that release (or a newer one), or use another database");
  }
  int version = current;
  for (const Migration& m : migrations) {
    if (m.version <= current) continue;
    RETURN_IF_ERROR(
        conn.Exec(m.sql).Annotate(std::string("applying migration ") + m.name));
    const Value v(static_cast<int64_t>(m.version));
    const Value name(m.name);
    const Value by(release);
    RETURN_IF_ERROR(
        conn.Run(
                "INSERT INTO schema_version (version, name, release) VALUES ($1, $2, $3)",
                {&v, &name, &by})
            .status());
    version = std::max(version, m.version);
  }
  return version;
}

}  // namespace

Result<int> ApplyPostgresMigrations(PostgresConnection& conn,
                                    const std::vector<Migration>& migrations,
                                    const std::string& release) {
  std::vector<Migration> ordered = migrations;
  std::sort(ordered.begin(), ordered.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  for (size_t i = 1; i < ordered.size(); ++i) {
    if (ordered[i].version == ordered[i - 1].version) {
      return InvalidArgument("two migrations have version " +
                             std::to_string(ordered[i].version));
    }
  }
  RETURN_IF_ERROR(conn.Begin(""));
  Result<int> version = MigrateLocked(conn, ordered, release);
  if (!version.ok()) {
    conn.Rollback();
    return version.status();
  }
  RETURN_IF_ERROR(conn.Commit());
  return version;
}

PostgresDatabase::PostgresDatabase(const Options& options) : options_(options) {
  if (options_.clock == nullptr) options_.clock = SystemClock::Default();
}

PostgresDatabase::~PostgresDatabase() {
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

Result<std::unique_ptr<PostgresDatabase>> PostgresDatabase::Open(const Options& options) {
  if (options.connections < 1) {
    return InvalidArgument("a PostgreSQL database needs at least one connection");
  }
  ASSIGN_OR_RETURN(std::string where, DescribePostgresConninfo(options.conninfo));
  std::unique_ptr<PostgresDatabase> db(new PostgresDatabase(options));
  db->where_ = std::move(where);
  ASSIGN_OR_RETURN(std::unique_ptr<PostgresConnection> conn, db->Acquire());
  std::vector<Migration> migrations = EmulatorPostgresMigrations();
  migrations.insert(migrations.end(), options.migrations.begin(),
                    options.migrations.end());
  Result<int> version = ApplyPostgresMigrations(*conn, migrations, options.release);
  db->Release(std::move(conn));
  if (!version.ok()) return version.status();
  db->schema_version_ = *version;
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

Status PostgresDatabase::Run(const Work& work, const std::string& mode, bool write) {
  // The node's clock travels with the transaction (sheetlog_now_micros()).
  const std::string clock_setting = "SELECT set_config('sheetlog.now_micros', '" +
                                    std::to_string(options_.clock->NowMicros()) +
                                    "', true)";
  std::unique_ptr<PostgresConnection> conn;
  Status status;
  // An idle connection may have been lost meanwhile (the server restarted, failed
  // over): nothing has run on it yet, so another one is tried, up to the whole pool
  // and then a new one.
  for (int attempt = 0; attempt <= options_.connections; ++attempt) {
    ASSIGN_OR_RETURN(conn, Acquire());
    status = conn->Begin(mode, clock_setting);
    if (status.ok() || conn->usable()) break;
    Release(std::move(conn));
  }
  if (conn == nullptr) return status;
  bool fed = false;
  if (status.ok()) {
    status = work(*conn);
    if (status.ok()) {
      // A commit that fed the change feed wakes the other nodes' readers too.
      status = write ? conn->CommitProbing("sheetlog.feed_written", &fed,
                                           RemoteChangePayload(RemoteChange::kChangeFeed))
                     : conn->Commit();
    } else {
      conn->Rollback();
    }
  }
  Release(std::move(conn));
  if (fed) {
    std::vector<std::function<void()>> listeners;
    {
      MutexLock lock(&listeners_mu_);
      listeners = listeners_;
    }
    for (auto& listener : listeners) listener();
  }
  return status;
}

Status PostgresDatabase::Write(const Work& work) { return Run(work, "", /*write=*/true); }

Status PostgresDatabase::Read(const Work& work) {
  return Run(work, "ISOLATION LEVEL REPEATABLE READ READ ONLY", /*write=*/false);
}

void PostgresDatabase::AddCommitListener(std::function<void()> listener) {
  MutexLock lock(&listeners_mu_);
  listeners_.push_back(std::move(listener));
}

}  // namespace sheetlog
