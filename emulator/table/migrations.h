// Versioned schema migrations (NNN_name.sql), embedded in the binary at build time
// (cmake/embed_schema.cmake), and the one runner that applies them on every backend.
//
// Each dialect has its own SQL in the same layout: the emulator's own tables in
// emulator/schema/sqlite/ and emulator/schema/postgres/, the application's in
// schema/sqlite/ and schema/postgres/ (handed to Database::Open / PostgresDatabase::Open
// by src/app/schema.h). One version sequence: a version means the same tables, columns
// and keys on both dialects (tests/unit/schema_parity_test.cc checks it at every
// version), and the emulator's and the application's versions never collide.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "emulator/status.h"
#include "emulator/table/table.h"

namespace sheetlog {

class FaultInjector;
class Transactions;

struct Migration {
  int version;
  const char* name;
  const char* sql;
};

// The emulator's own migrations (queues, change feed, execution history, blob mirror,
// history owners), ordered by version. Defined in generated code: emulator/schema/sqlite/
// and emulator/schema/postgres/, the same versions.
const std::vector<Migration>& EmulatorMigrations();
const std::vector<Migration>& EmulatorPostgresMigrations();
// The one of the two in `dialect`'s SQL.
const std::vector<Migration>& EmulatorMigrations(SqlDialect dialect);

struct MigrationOptions {
  // The application release applying migrations: recorded with each, and named when a
  // newer release's database is refused. "" = unknown.
  std::string release;
  // Has the point "migration.before_commit": after a migration's statements and its
  // `schema_version` row, before its commit. May be null.
  FaultInjector* faults = nullptr;
  // Applies the migrations up to this version only (none: all). For tests (the schema
  // parity test migrates both dialects version by version; 0 applies none).
  std::optional<int> target_version;
  // How the refusal of a newer database names it ("the database at ...") and what to
  // use instead ("another --data-dir").
  std::string database = "the database";
  std::string instead = "another database";
};

// Brings `db` to the newest version in `migrations` (in any order; InvalidArgument,
// before anything is applied, if two have the same version), or to
// `options.target_version`. Returns the version now in force.
//
// Each migration runs in a Write of its own with its `schema_version(version, name,
// release)` row, so one interrupted by a failure or a crash is rolled back whole and
// applied by the next run. Each of those transactions first re-reads the newest
// version recorded; on PostgreSQL it takes a transaction-scoped advisory lock before
// that (pg_advisory_xact_lock), so processes starting at once apply each migration
// once: the second waits and then finds it applied. Applying twice is a no-op.
//
// Fails with FailedPrecondition if the database records a version newer than any in
// `migrations` (written by a newer release), naming both releases and versions; the
// database is not modified then.
//
// At open only: on SQLite a Write made concurrently would share a migration's
// transaction (group commit).
Result<int> ApplyMigrations(Transactions& db, std::vector<Migration> migrations,
                            const MigrationOptions& options);

}  // namespace sheetlog
