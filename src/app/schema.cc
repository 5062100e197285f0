#include "src/app/schema.h"

#include "emulator/stream/stream_triggers.h"

namespace sheetlog {

const std::vector<Migration>& SheetlogMigrations(SqlDialect dialect) {
  return dialect == SqlDialect::kPostgres ? SheetlogPostgresMigrations()
                                          : SheetlogMigrations();
}

Status AttachEntryStream(Connection& conn) {
  StreamSource entry;
  entry.table = "entry";
  entry.partition_key = {"sheet_id", "segment"};
  entry.sort_key = {"num"};
  // columns empty: every column of the table, as the images had before (schema/007).
  return AttachStream(conn, entry, StreamSettings{});
}

Result<std::unique_ptr<Database>> OpenSheetlogDatabase(Database::Options options) {
  options.migrations = SheetlogMigrations();
  ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(options));
  RETURN_IF_ERROR(db->Write(AttachEntryStream));
  return db;
}

Result<std::unique_ptr<PostgresDatabase>> OpenSheetlogPostgresDatabase(
    PostgresDatabase::Options options) {
  options.migrations = SheetlogPostgresMigrations();
  ASSIGN_OR_RETURN(std::unique_ptr<PostgresDatabase> db, PostgresDatabase::Open(options));
  RETURN_IF_ERROR(db->Write(AttachEntryStream));
  return db;
}

}  // namespace sheetlog
