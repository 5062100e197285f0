// The application's schema, handed to the emulator's Database by the composition root:
// the migrations of schema/sqlite/ and schema/postgres/ (the event log's tables,
// uploads, sheet deletion; the emulator applies its own from emulator/schema/ in the
// same version order: emulator/table/migrations.h) and the change-feed attachment of
// `entry`, the stream seed 000's snapshot pipeline and the live updates read.
#pragma once

#include <memory>
#include <vector>

#include "emulator/postgres/postgres_database.h"
#include "emulator/sqlite/database.h"
#include "emulator/status.h"
#include "emulator/table/migrations.h"

namespace sheetlog {

// schema/sqlite/*.sql in version order. Defined in generated code
// (cmake/embed_schema.cmake). The application's, so declared here rather than beside
// the emulator's lists (emulator/ never names src/).
const std::vector<Migration>& SheetlogMigrations();
// The same tables in PostgreSQL's SQL (schema/postgres/*.sql), the same versions.
const std::vector<Migration>& SheetlogPostgresMigrations();
// The one of the two in `dialect`'s SQL.
const std::vector<Migration>& SheetlogMigrations(SqlDialect dialect);

// Attaches the `entry` table to the change feed (4 shards by (sheet_id, segment), so a
// segment's entries are in one shard in order; 24 hours of retention; every column in
// the images). A no-op when attached already. On either backend (the table's
// PostgreSQL form: schema/postgres/).
// REQUIRES: `conn` is in a write transaction.
Status AttachEntryStream(Connection& conn);

// Database::Open with the application's migrations, then AttachEntryStream: the
// database every sheetlog process (and every test of the layers above the emulator)
// works on. `options.migrations` is replaced.
Result<std::unique_ptr<Database>> OpenSheetlogDatabase(Database::Options options);
// The same on PostgreSQL: PostgresDatabase::Open with schema/postgres/, then
// AttachEntryStream. Several processes may open one database at once.
Result<std::unique_ptr<PostgresDatabase>> OpenSheetlogPostgresDatabase(
    PostgresDatabase::Options options);

}  // namespace sheetlog
