#include "tests/support/test_database.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/table/migrations.h"
#include "src/app/schema.h"

namespace sheetlog::testing {
namespace {

// `open` (Database::Open or OpenSheetlogDatabase) on `path`; a failure is recorded and
// gives null.
template <typename OpenFn>
std::unique_ptr<Database> OpenOrFail(OpenFn open, const std::string& path, Clock* clock,
                                     SyncMode sync) {
  Database::Options options;
  options.path = path;
  options.clock = clock;
  options.sync = sync;
  Result<std::unique_ptr<Database>> db = open(options);
  if (!db.ok()) {
    ADD_FAILURE() << "opening " << path << ": " << db.status().ToString();
    return nullptr;
  }
  return std::move(db).value();
}

}  // namespace

std::unique_ptr<Database> OpenTestDatabase(const std::string& path, Clock* clock,
                                           SyncMode sync) {
  return OpenOrFail(OpenSheetlogDatabase, path, clock, sync);
}

std::unique_ptr<Database> OpenEmulatorTestDatabase(const std::string& path, Clock* clock,
                                                   SyncMode sync) {
  return OpenOrFail(
      [](const Database::Options& options) { return Database::Open(options); }, path,
      clock, sync);
}

BackendTestDatabase::BackendTestDatabase(Backend backend, const std::string& path,
                                         Clock* clock,
                                         const std::vector<Migration>& migrations)
    : backend_(backend), path_(path), clock_(clock), migrations_(migrations) {
  if (backend_ == Backend::kPostgres) {
    const ::testing::TestInfo* test =
        ::testing::UnitTest::GetInstance()->current_test_info();
    // A copy of a template with these migrations applied: Open() then finds them in
    // place (PostgresDatabase::Open applies the emulator's own as well).
    std::vector<std::string> parts = {"backend"};
    for (const auto* list : {&EmulatorPostgresMigrations(), &migrations_}) {
      for (const Migration& migration : *list) {
        parts.push_back(std::to_string(migration.version) + migration.name +
                        migration.sql);
      }
    }
    const std::vector<Migration> migrations = migrations_;
    server_database_ = std::make_unique<PostgresTestDatabase>(
        test == nullptr ? std::string("backend") : test->name(), TemplateKey(parts),
        [migrations](const std::string& conninfo) {
          PostgresDatabase::Options options;
          options.conninfo = conninfo;
          options.migrations = migrations;
          return PostgresDatabase::Open(options).status();
        });
  }
  Open();
}

BackendTestDatabase::~BackendTestDatabase() {
  db_.reset();  // before the PostgreSQL database is dropped
}

std::string BackendTestDatabase::conninfo() const {
  return server_database_ == nullptr ? std::string() : server_database_->conninfo();
}

void BackendTestDatabase::Reopen() {
  db_.reset();
  sqlite_ = nullptr;
  postgres_ = nullptr;
  Open();
}

void BackendTestDatabase::Open() {
  if (backend_ == Backend::kSqlite) {
    Database::Options options;
    options.path = path_;
    options.clock = clock_;
    options.sync = SyncMode::kOff;
    options.migrations = migrations_;
    Result<std::unique_ptr<Database>> db = Database::Open(options);
    if (!db.ok()) {
      ADD_FAILURE() << "opening " << path_ << ": " << db.status().ToString();
      return;
    }
    sqlite_ = db->get();
    db_ = std::move(db).value();
    return;
  }
  if (server_database_->conninfo().empty()) return;  // the failure is recorded
  PostgresDatabase::Options options;
  options.conninfo = server_database_->conninfo();
  options.migrations = migrations_;
  options.clock = clock_;
  Result<std::unique_ptr<PostgresDatabase>> db = PostgresDatabase::Open(options);
  if (!db.ok()) {
    ADD_FAILURE() << "opening " << server_database_->conninfo() << ": "
                  << db.status().ToString();
    return;
  }
  postgres_ = db->get();
  db_ = std::move(db).value();
}

std::unique_ptr<BackendTestDatabase> OpenEntryTestDatabase(Backend backend,
                                                           const std::string& path,
                                                           Clock* clock) {
  std::vector<Migration> migrations;
  if (backend == Backend::kSqlite) {
    migrations = SheetlogMigrations();
  } else {
    migrations = {
        {1, "001_entry_for_tests",
         "CREATE TABLE entry (sheet_id text COLLATE \"C\" NOT NULL, segment bigint NOT "
         "NULL, num bigint NOT NULL, seq bigint NOT NULL, created bigint NOT NULL, "
         "external text, type text NOT NULL, version bigint NOT NULL, body text, "
         "snapshot_root text, metadata text, PRIMARY KEY (sheet_id, segment, num))"}};
  }
  auto db = std::make_unique<BackendTestDatabase>(backend, path, clock, migrations);
  if (db->get() != nullptr) {
    Status attached = db->get()->Write(AttachEntryStream);
    if (!attached.ok()) ADD_FAILURE() << "attaching entry: " << attached.ToString();
  }
  return db;
}

}  // namespace sheetlog::testing
