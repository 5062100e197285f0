// The shared throwaway PostgreSQL server of the tests (scripts/postgres; ctest's
// postgres fixture starts it before the Postgres* cases and stops it after them). Each
// caller gets a database of its own, so cases running in parallel never meet.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "emulator/status.h"

namespace sheetlog::testing {

// The libpq connection string of the running server's `postgres` database, read from
// DIR/conninfo, DIR being $SHEETLOG_TEST_POSTGRES_DIR or else <build>/postgres (where
// ctest's fixture starts it). Fails the test (and returns "") when no server runs there.
std::string PostgresTestConninfo();

// True if DIR/conninfo (as above) names a server: for cases that skip, rather than
// fail, when run without ctest's fixture. Records no failure.
bool PostgresTestServerRunning();

// A new, empty database on the test server named after `purpose` and a random suffix,
// never dropped (the server is thrown away whole by ctest's fixture); its conninfo.
// For servers a case starts and restarts on one database. Fails the test (and returns
// "") if it cannot be created.
std::string NewPostgresTestDatabase(const std::string& purpose);

// A new database on the test server named after `purpose` and a random suffix, holding
// what `template_key`'s template holds: the first caller on the server (of any process)
// makes the template database by running `prepare` on it (e.g. migrations), every later
// one copies it (CREATE DATABASE ... TEMPLATE), which costs one file copy instead of a
// migration per case. `template_key` must name what `prepare` makes (e.g. a hash of the
// migrations). Never dropped, like NewPostgresTestDatabase. Fails the test (and returns
// "") if the template or the copy cannot be made.
using PrepareTemplate = std::function<Status(const std::string& conninfo)>;
std::string NewPostgresTestDatabaseFrom(const std::string& purpose,
                                        const std::string& template_key,
                                        const PrepareTemplate& prepare);

// A key for templates made from `parts` (e.g. migrations' SQL): stable within a build.
std::string TemplateKey(const std::vector<std::string>& parts);

// A new database on the test server named after `purpose` and a random suffix, dropped
// (its sessions ended) when this is destroyed: empty, or a copy of `template_key`'s
// template (NewPostgresTestDatabaseFrom). Fails the test if it cannot be created
// (conninfo() is "" then).
class PostgresTestDatabase {
 public:
  explicit PostgresTestDatabase(const std::string& purpose);
  PostgresTestDatabase(const std::string& purpose, const std::string& template_key,
                       const PrepareTemplate& prepare);
  ~PostgresTestDatabase();
  PostgresTestDatabase(const PostgresTestDatabase&) = delete;
  PostgresTestDatabase& operator=(const PostgresTestDatabase&) = delete;

  const std::string& conninfo() const { return conninfo_; }

 private:
  std::string admin_;  // the server's `postgres` database
  std::string name_;
  std::string conninfo_;
};

}  // namespace sheetlog::testing
