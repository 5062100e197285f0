#include "emulator/sqlite/migrations.h"

#include "emulator/sqlite/database.h"

namespace sheetlog {

namespace {

Result<int> CurrentVersion(Connection& conn) {
  RETURN_IF_ERROR(
      conn.Exec("CREATE TABLE IF NOT EXISTS schema_version ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL)"));
  ASSIGN_OR_RETURN(Statement stmt,
                   conn.Prepare("SELECT COALESCE(MAX(version), 0) FROM schema_version"));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row ? static_cast<int>(stmt.ColumnInt(0)) : 0;
}

}  // namespace

Result<int> ApplyMigrations(Connection& conn, const std::vector<Migration>& migrations) {
  RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
  Result<int> current = CurrentVersion(conn);
  if (!current.ok()) {
    (void)conn.Exec("ROLLBACK");
    return current.status();
  }
  int newest_known = 0;
  for (const Migration& m : migrations) newest_known = std::max(newest_known, m.version);
  if (*current > newest_known) {
    (void)conn.Exec("ROLLBACK");
    return FailedPrecondition("database schema version " + std::to_string(*current) +
                              " is newer than this sheetlog supports (" +
                              std::to_string(newest_known) +
                              "); upgrade sheetlog or use another --data-dir");
  }
  RETURN_IF_ERROR(conn.Exec("COMMIT"));

  int version = *current;
  for (const Migration& m : migrations) {
    if (m.version <= version) continue;
    RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
    Status status = conn.Exec(m.sql);
    if (status.ok()) {
      Result<Statement> record =
          conn.Prepare("INSERT INTO schema_version(version, name) VALUES (?, ?)");
      status = record.status();
      if (status.ok()) status = record->Bind(1, m.version).Bind(2, m.name).Run();
    }
    if (status.ok()) status = conn.Exec("COMMIT");
    if (!status.ok()) {
      (void)conn.Exec("ROLLBACK");
      return status.Annotate(std::string("applying migration ") + m.name);
    }
    version = m.version;
  }
  return version;
}

}  // namespace sheetlog
