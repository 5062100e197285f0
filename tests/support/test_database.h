// A real SQLite database in a test's directory (no mock: the same Database, with the
// same application schema, the server opens), with syncs off by default so unit tests do
// not wait for the disk. Unit tests open their database with these rather than by hand
// (the tests of Database::Open itself aside).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "emulator/env/clock.h"
#include "emulator/postgres/postgres_database.h"
#include "emulator/sqlite/database.h"
#include "tests/support/postgres_test_server.h"

namespace sheetlog::testing {

// Opens (creating) the database at `path` on `clock` with the application's schema
// (src/app/schema.h: schema/ migrations, the `entry` stream). Records a test failure and
// returns null if it cannot be opened.
std::unique_ptr<Database> OpenTestDatabase(const std::string& path, Clock* clock,
                                           SyncMode sync = SyncMode::kOff);

// The same without the application's schema: the emulator's own tables only
// (emulator/schema/), for the tests of the emulator's services (queues, tables, the
// execution history, the function runtime) that sit below the application. `clock` may
// be null (SystemClock).
std::unique_ptr<Database> OpenEmulatorTestDatabase(const std::string& path, Clock* clock,
                                                   SyncMode sync = SyncMode::kOff);

// The backends a conformance suite runs on from one source (same behaviour, same
// tests): INSTANTIATE_TEST_SUITE_P(Sqlite, Suite, Values(Backend::kSqlite)) and
// (Postgres, Suite, Values(Backend::kPostgres)); ctest starts the PostgreSQL server for
// cases named Postgres* (the `postgres` fixture).
enum class Backend { kSqlite, kPostgres };
// Names the backend where gtest prints a parameter: case names read
// "Postgres/QueueTest.Case/postgres" in ctest, not "/4-byte object <01-00 00-00>".
inline void PrintTo(Backend backend, std::ostream* os) {
  *os << (backend == Backend::kSqlite ? "sqlite" : "postgres");
}

// The emulator's own tables (and `migrations`, in the backend's SQL, if given) on
// `backend`: a SQLite file `path` on `clock`, or a new database of the test PostgreSQL
// server named after the running test, dropped when this is destroyed. Records a test
// failure (get() is null) if it cannot be opened.
class BackendTestDatabase {
 public:
  BackendTestDatabase(Backend backend, const std::string& path, Clock* clock,
                      const std::vector<Migration>& migrations = {});
  ~BackendTestDatabase();  // closes the database, then drops it
  BackendTestDatabase(const BackendTestDatabase&) = delete;
  BackendTestDatabase& operator=(const BackendTestDatabase&) = delete;

  Transactions* get() const { return db_.get(); }
  // The SQLite Database; null on PostgreSQL.
  Database* sqlite() const { return sqlite_; }
  // The PostgreSQL database; null on SQLite.
  PostgresDatabase* postgres() const { return postgres_; }
  // The PostgreSQL database's connection string ("" on SQLite), to open a second
  // PostgresDatabase on it (another node).
  std::string conninfo() const;
  // Opens the same database again (a restart), after closing this one.
  void Reopen();

 private:
  void Open();

  const Backend backend_;
  const std::string path_;
  Clock* const clock_;
  const std::vector<Migration> migrations_;
  std::unique_ptr<PostgresTestDatabase> server_database_;
  std::unique_ptr<Transactions> db_;
  Database* sqlite_ = nullptr;
  PostgresDatabase* postgres_ = nullptr;
};

// The emulator's tables and the application's `entry` table with its change feed
// attached (AttachEntryStream) on `backend`: on SQLite the application's schema
// (schema/); on PostgreSQL, until the application's tables are there
// (schema/postgres/), a table of entry's columns and key made for the tests.
std::unique_ptr<BackendTestDatabase> OpenEntryTestDatabase(Backend backend,
                                                           const std::string& path,
                                                           Clock* clock);

}  // namespace sheetlog::testing
