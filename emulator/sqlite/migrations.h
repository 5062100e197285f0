// Versioned schema migrations (NNN_name.sql), embedded in the binary at build time
// (cmake/embed_schema.cmake): the emulator's own in emulator/schema/, the application's
// in schema/, handed to Database::Open. Both share one version sequence (one database):
// applied in version order at start-up inside one transaction each; the
// `schema_version` table records the highest applied version, so applying twice is a
// no-op.
#pragma once

#include <string>
#include <vector>

#include "emulator/status.h"

namespace sheetlog {

class SqliteConnection;
class FaultInjector;

struct Migration {
  int version;
  const char* name;
  const char* sql;
};

// The emulator's own migrations (emulator/schema/: queues, change feed, execution
// history), ordered by version. Defined in generated code.
const std::vector<Migration>& EmulatorMigrations();
// The same tables in PostgreSQL's SQL (emulator/postgres/schema/), the same versions;
// PostgresDatabase::Open applies them with the application's.
const std::vector<Migration>& EmulatorPostgresMigrations();

// Brings the database to the newest version in `migrations`. Returns the version now in
// force. Each migration commits in its own transaction with its `schema_version` row
// (recording `release`, the application release applying it), so one interrupted by a
// crash is rolled back whole and applied again by the next start. Fails with
// FailedPrecondition if the database records a version newer than any migration known
// here (written by a newer release), naming both releases and versions: it is never
// modified then. `faults` (may be null) has the point "migration.before_commit": after a
// migration's statements, before its commit.
Result<int> ApplyMigrations(SqliteConnection& conn,
                            const std::vector<Migration>& migrations,
                            const std::string& release = "",
                            FaultInjector* faults = nullptr);

}  // namespace sheetlog
