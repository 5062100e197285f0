#include "emulator/table/migrations.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "emulator/env/faults.h"
#include "emulator/table/connection.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

namespace {

// The advisory lock key migrating on PostgreSQL holds (any constant no other code uses:
// "shtlog").
constexpr int64_t kMigrationAdvisoryLock = 0x7368746c6f67;

// The newest version recorded and the release that applied it ("" if unknown: SQLite
// data directories from before the column).
struct RecordedVersion {
  int version = 0;
  std::string release;
};

// In the transaction of `c`: on PostgreSQL, waits for the migration lock; creates
// `schema_version` if missing (its columns as each dialect has always had them; an
// older SQLite table gains `release`), and reads the newest row.
Result<RecordedVersion> LockAndReadVersion(Connection& c) {
  if (c.dialect() == SqlDialect::kPostgres) {
    RETURN_IF_ERROR(c.RunSql("SELECT pg_advisory_xact_lock(" +
                                 std::to_string(kMigrationAdvisoryLock) + ")",
                             {})
                        .status());
    RETURN_IF_ERROR(
        c.RunScript("CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY "
                    "KEY, name text NOT NULL, release text)"));
  } else {
    RETURN_IF_ERROR(
        c.RunScript("CREATE TABLE IF NOT EXISTS schema_version ("
                    " version INTEGER PRIMARY KEY, name TEXT NOT NULL, release TEXT)"));
    bool has_release = false;
    RETURN_IF_ERROR(
        c.RunSql("PRAGMA table_info(schema_version)", {}, [&](const SqlRow& row) {
           has_release |= row.Text(1) == "release";
           return true;
         }).status());
    if (!has_release) {
      RETURN_IF_ERROR(c.RunScript("ALTER TABLE schema_version ADD COLUMN release TEXT"));
    }
  }
  RecordedVersion recorded;
  RETURN_IF_ERROR(c.RunSql("SELECT version, COALESCE(release, '') FROM schema_version"
                           " ORDER BY version DESC LIMIT 1",
                           {},
                           [&](const SqlRow& row) {
                             recorded.version = static_cast<int>(row.Int(0));
                             recorded.release = row.Text(1);
                             return false;
                           })
                      .status());
  return recorded;
}

Status NewerDatabase(const RecordedVersion& recorded, int newest_known,
                     const MigrationOptions& options) {
  return FailedPrecondition(
      options.database + " is newer than this binary: it has schema version " +
      std::to_string(recorded.version) + ", written by sheetlog " +
      (recorded.release.empty() ? std::string("(a newer release)") : recorded.release) +
      "; this is sheetlog " +
      (options.release.empty() ? std::string("(unknown)") : options.release) +
      ", which knows schema versions up to " + std::to_string(newest_known) +
      ". Run that release (or a newer one), or use " + options.instead);
}

}  // namespace

const std::vector<Migration>& EmulatorMigrations(SqlDialect dialect) {
  return dialect == SqlDialect::kPostgres ? EmulatorPostgresMigrations()
                                          : EmulatorMigrations();
}

Result<int> ApplyMigrations(Transactions& db, std::vector<Migration> migrations,
                            const MigrationOptions& options) {
  std::sort(migrations.begin(), migrations.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  for (size_t i = 1; i < migrations.size(); ++i) {
    if (migrations[i].version == migrations[i - 1].version) {
      return InvalidArgument(std::string("two migrations have version ") +
                             std::to_string(migrations[i].version) + ": " +
                             migrations[i - 1].name + " and " + migrations[i].name);
    }
  }
  const int newest_known = migrations.empty() ? 0 : migrations.back().version;
  const int target = options.target_version.value_or(newest_known);

  // One transaction per migration; the last finds nothing left to apply (it changes
  // nothing, and is where a newer database is refused when nothing is pending).
  while (true) {
    int version = 0;                  // in force when the transaction began
    const Migration* next = nullptr;  // applied by it, if any
    Status status = db.Write([&](Connection& c) -> Status {
      // From scratch on every run of the work (a Write may run it again).
      version = 0;
      next = nullptr;
      ASSIGN_OR_RETURN(RecordedVersion recorded, LockAndReadVersion(c));
      version = recorded.version;
      if (recorded.version > newest_known) {
        return NewerDatabase(recorded, newest_known, options);
      }
      auto pending =
          std::upper_bound(migrations.begin(), migrations.end(), recorded.version,
                           [](int v, const Migration& m) { return v < m.version; });
      if (pending == migrations.end() || pending->version > target) return Status::OK();
      next = &*pending;
      RETURN_IF_ERROR(c.RunScript(next->sql));
      RETURN_IF_ERROR(
          c.RunSql("INSERT INTO schema_version (version, name, release)"
                   " VALUES (?1, ?2, ?3)",
                   {Value(next->version), Value(next->name), Value(options.release)})
              .status());
      if (options.faults != nullptr) {
        RETURN_IF_ERROR(options.faults->Hit(FaultPoint::kMigrationBeforeCommit));
      }
      return Status::OK();
    });
    if (!status.ok()) {
      // The refusal names itself; anything else happened while applying `next`.
      if (next == nullptr) return status;
      return status.Annotate(std::string("applying migration ") + next->name);
    }
    if (next == nullptr) return version;
  }
}

}  // namespace sheetlog
