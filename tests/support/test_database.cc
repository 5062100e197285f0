#include "tests/support/test_database.h"

#include <gtest/gtest.h>

#include "src/app/schema.h"

namespace sheetlog::testing {

std::unique_ptr<Database> OpenTestDatabase(const std::string& path, Clock* clock,
                                           SyncMode sync) {
  Database::Options options;
  options.path = path;
  options.clock = clock;
  options.sync = sync;
  Result<std::unique_ptr<Database>> db = OpenSheetlogDatabase(options);
  if (!db.ok()) {
    ADD_FAILURE() << "opening " << path << ": " << db.status().ToString();
    return nullptr;
  }
  return std::move(db).value();
}

}  // namespace sheetlog::testing
