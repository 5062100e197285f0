#include "emulator/sqlite/migrations.h"

#include "emulator/env/faults.h"
#include "emulator/sqlite/database.h"

namespace sheetlog {

namespace {

// The newest version recorded and the release that applied it ("" if unknown: data
// directories from before the column). Adds the `release` column to an older table.
Result<std::pair<int, std::string>> CurrentVersion(SqliteConnection& conn) {
  RETURN_IF_ERROR(
      conn.Exec("CREATE TABLE IF NOT EXISTS schema_version ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, release TEXT)"));
  bool has_release = false;
  {
    ASSIGN_OR_RETURN(Statement columns,
                     conn.Prepare("PRAGMA table_info(schema_version)"));
    while (true) {
      ASSIGN_OR_RETURN(bool row, columns.Step());
      if (!row) break;
      has_release |= columns.ColumnText(1) == "release";
    }
  }
  if (!has_release) {
    RETURN_IF_ERROR(conn.Exec("ALTER TABLE schema_version ADD COLUMN release TEXT"));
  }
  ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare("SELECT version, COALESCE(release, '') FROM schema_version"
                   " ORDER BY version DESC LIMIT 1"));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::make_pair(0, std::string());
  return std::make_pair(static_cast<int>(stmt.ColumnInt(0)), stmt.ColumnText(1));
}

}  // namespace

Result<int> ApplyMigrations(SqliteConnection& conn,
                            const std::vector<Migration>& migrations,
                            const std::string& release, FaultInjector* faults) {
  RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
  Result<std::pair<int, std::string>> current = CurrentVersion(conn);
  if (!current.ok()) {
    (void)conn.Exec("ROLLBACK");
    return current.status();
  }
  int newest_known = 0;
  for (const Migration& m : migrations) newest_known = std::max(newest_known, m.version);
  if (current->first > newest_known) {
    (void)conn.Exec("ROLLBACK");
    const std::string& writer = current->second;
    return FailedPrecondition(
        "the data directory is newer than this binary: its database has schema "
        "version " +
        std::to_string(current->first) + ", written by sheetlog " +
        (writer.empty() ? std::string("(a newer release)") : writer) +
        "; this is sheetlog " + (release.empty() ? std::string("(unknown)") : release) +
        ", which knows schema versions up to " + std::to_string(newest_known) +
        ". Run that release (or a newer one), or use another --data-dir");
  }
  RETURN_IF_ERROR(conn.Exec("COMMIT"));

  int version = current->first;
  for (const Migration& m : migrations) {
    if (m.version <= version) continue;
    RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
    Status status = conn.Exec(m.sql);
    if (status.ok()) {
      Result<Statement> record = conn.Prepare(
          "INSERT INTO schema_version(version, name, release) VALUES (?, ?, ?)");
      status = record.status();
      if (status.ok()) {
        status = record->Bind(1, m.version).Bind(2, m.name).Bind(3, release).Run();
      }
    }
    if (status.ok() && faults != nullptr)
      status = faults->Hit(FaultPoint::kMigrationBeforeCommit);
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
