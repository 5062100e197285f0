#include "tests/support/test_database.h"

#include <gtest/gtest.h>

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

}  // namespace sheetlog::testing
