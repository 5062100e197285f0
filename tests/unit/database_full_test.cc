// A full disk is InsufficientStorage, never ResourceExhausted (which
// the API answers with 413): SQLite's max_page_count makes the database "full" without
// a small filesystem; the real disk is in tests/integration/disk_full_http_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "emulator/sqlite/database.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace sheetlog {
namespace {

int64_t PageCount(SqliteConnection& c) {
  Result<Statement> s = c.Prepare("PRAGMA page_count");
  if (!s.ok()) return -1;
  Result<bool> row = s->Step();
  return row.ok() && *row ? s->ColumnInt(0) : -1;
}

TEST(DatabaseFullTest, AFullDatabaseIsInsufficientStorageAndRecoversWhenSpaceReturns) {
  testing::TempDir dir;
  Database::Options options;
  options.path = dir.File("full.db");
  Result<std::unique_ptr<Database>> opened = Database::Open(options);
  ASSERT_OK(opened);
  Database& db = **opened;
  ASSERT_TRUE(db.Write([](SqliteConnection& c) {
                  return c.Exec("CREATE TABLE filler (body BLOB)");
                }).ok());
  int64_t pages = -1;
  ASSERT_TRUE(db.Write([&](SqliteConnection& c) {
                  pages = PageCount(c);
                  return c.Exec("PRAGMA max_page_count = " + std::to_string(pages + 4));
                }).ok());
  ASSERT_GT(pages, 0);

  const std::string insert = "INSERT INTO filler VALUES (zeroblob(8192))";
  Status full;
  for (int i = 0; i < 100 && full.ok(); ++i) {
    full = db.Write([&](SqliteConnection& c) { return c.Exec(insert); });
  }
  EXPECT_EQ(full.code(), StatusCode::kInsufficientStorage) << "got " << full.ToString();
  EXPECT_NE(full.message().find("disk is full"), std::string::npos) << full.ToString();

  // Space returns: the same write succeeds on the same database.
  ASSERT_OK(db.Write(
      [&](SqliteConnection& c) { return c.Exec("PRAGMA max_page_count = 1000000"); }));
  Status after = db.Write([&](SqliteConnection& c) { return c.Exec(insert); });
  EXPECT_OK(after);
}

}  // namespace
}  // namespace sheetlog
