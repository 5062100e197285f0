// Connection::RunSql, the services' shared SQL (emulator/table/connection.h), on both
// backends from one source: placeholders, types, row counts, errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "emulator/table/connection.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

using testing::Backend;

const std::vector<Migration>& NoteMigrations(Backend backend) {
  static const std::vector<Migration> sqlite = {
      {100, "100_note",
       "CREATE TABLE note (id TEXT NOT NULL PRIMARY KEY, n INTEGER NOT NULL,"
       " score REAL, data BLOB, CHECK (n >= 0))"}};
  static const std::vector<Migration> postgres = {
      {100, "100_note",
       "CREATE TABLE note (id text COLLATE \"C\" NOT NULL PRIMARY KEY, n bigint NOT NULL,"
       " score double precision, data bytea, CHECK (n >= 0))"}};
  return backend == Backend::kSqlite ? sqlite : postgres;
}

class SqlStatementTest : public ::testing::TestWithParam<Backend> {
 protected:
  SqlStatementTest()
      : db_(GetParam(), dir_.File("sql.db"), /*clock=*/nullptr,
            NoteMigrations(GetParam())) {}

  Transactions& db() { return *db_.get(); }

  testing::TempDir dir_;
  testing::BackendTestDatabase db_;
};

TEST_P(SqlStatementTest, RowsComeBackWithTheirTypesAndPlaceholdersBindByNumber) {
  ASSERT_NE(db_.get(), nullptr);
  const std::string bytes("a\0b\xff", 4);
  ASSERT_OK(db().Write([&](Connection& c) -> Status {
    // ?2 before ?1, and ?1 twice: bound by number, not by position.
    ASSIGN_OR_RETURN(
        int64_t changed,
        c.RunSql("INSERT INTO note (n, id, score, data) VALUES (?2, ?1, ?3, ?4)"
                 " , (?2 + 1, ?1 || '-2', NULL, NULL)",
                 {"k", 7, 2.5, Value::Bytes(bytes)}));
    EXPECT_EQ(changed, 2);
    return Status::OK();
  }));
  std::vector<std::string> seen;
  ASSERT_OK(db().Read([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(int64_t rows,
                     c.RunSql("SELECT id, n, score, data FROM note WHERE id >= ?1 "
                              "ORDER BY id",
                              {"k"}, [&](const SqlRow& row) {
                                EXPECT_EQ(row.columns(), 4);
                                seen.push_back(row.Text(0));
                                EXPECT_EQ(row.Type(0), SqlType::kText);
                                EXPECT_EQ(row.Type(1), SqlType::kInt);
                                if (seen.size() == 1) {
                                  EXPECT_EQ(row.Int(1), 7);
                                  EXPECT_EQ(row.Double(2), 2.5);
                                  EXPECT_EQ(row.Text(3), bytes);
                                  EXPECT_EQ(row.Type(2), SqlType::kDouble);
                                  EXPECT_EQ(row.Type(3), SqlType::kBytes);
                                  EXPECT_EQ(row.ValueAt(3), Value::Bytes(bytes));
                                  EXPECT_EQ(row.ValueAt(0), Value("k"));
                                } else {
                                  EXPECT_EQ(row.Type(2), SqlType::kNull);
                                  EXPECT_TRUE(row.ValueAt(3).is_null());
                                  EXPECT_EQ(row.Int(1), 8);
                                  EXPECT_TRUE(row.IsNull(2));
                                  EXPECT_TRUE(row.IsNull(3));
                                  EXPECT_EQ(row.Text(3), "");
                                }
                                return true;
                              }));
    EXPECT_EQ(rows, 2);
    return Status::OK();
  }));
  EXPECT_EQ(seen, (std::vector<std::string>{"k", "k-2"}));
}

TEST_P(SqlStatementTest, CountsChangedRowsAndReturningRowsAndStopsWhenAsked) {
  ASSERT_NE(db_.get(), nullptr);
  ASSERT_OK(db().Write([&](Connection& c) -> Status {
    for (int i = 0; i < 5; ++i) {
      RETURN_IF_ERROR(c.RunSql("INSERT INTO note (id, n) VALUES (?1, ?2)",
                               {"r" + std::to_string(i), i})
                          .status());
    }
    ASSIGN_OR_RETURN(int64_t updated,
                     c.RunSql("UPDATE note SET n = n + 10 WHERE n < ?1", {3}));
    EXPECT_EQ(updated, 3);
    ASSIGN_OR_RETURN(int64_t none, c.RunSql("DELETE FROM note WHERE id = ?1", {"nope"}));
    EXPECT_EQ(none, 0);
    // RETURNING: the rows come back; stopping after the first keeps every change.
    int handed = 0;
    RETURN_IF_ERROR(c.RunSql("UPDATE note SET n = n + 100 RETURNING id, n", {},
                             [&](const SqlRow& row) {
                               ++handed;
                               EXPECT_GE(row.Int(1), 100);
                               return false;
                             })
                        .status());
    EXPECT_EQ(handed, 1);
    // An aggregate PostgreSQL types as numeric still reads as an integer.
    int64_t total = -1;
    RETURN_IF_ERROR(c.RunSql("SELECT sum(n) FROM note", {}, [&](const SqlRow& row) {
                       total = row.Int(0);
                       return true;
                     }).status());
    EXPECT_EQ(total, 0 + 1 + 2 + 30 + 3 + 4 + 500);
    return Status::OK();
  }));
}

TEST_P(SqlStatementTest, ConflictsAndRefusedValuesAreTheirCodesAndWriteNothing) {
  ASSERT_NE(db_.get(), nullptr);
  ASSERT_OK(db().Write([&](Connection& c) {
    return c.RunSql("INSERT INTO note (id, n) VALUES (?1, 1)", {"x"}).status();
  }));
  EXPECT_THAT(db().Write([&](Connection& c) {
    return c.RunSql("INSERT INTO note (id, n) VALUES (?1, 2)", {"x"}).status();
  }),
              StatusIs(StatusCode::kConditionFailed));
  EXPECT_THAT(db().Write([&](Connection& c) {
    return c.RunSql("INSERT INTO note (id, n) VALUES (?1, ?2)", {"y", -1}).status();
  }),
              StatusIs(StatusCode::kInvalidArgument));
  int64_t count = -1;
  ASSERT_OK(db().Read([&](Connection& c) {
    return c
        .RunSql("SELECT count(*), max(n) FROM note", {},
                [&](const SqlRow& row) {
                  count = row.Int(0);
                  EXPECT_EQ(row.Int(1), 1);
                  return true;
                })
        .status();
  }));
  EXPECT_EQ(count, 1);
}

// One placeholder convention on both backends (emulator/table/sql_params.h): anything
// else is refused before it runs; quotes and comments hold what they hold.
TEST_P(SqlStatementTest, OnlyNumberedPlaceholdersRunAndQuotesAndCommentsAreText) {
  ASSERT_NE(db_.get(), nullptr);
  for (const char* sql : {"INSERT INTO note (id, n) VALUES (?, 1)",
                          "INSERT INTO note (id, n) VALUES ($1, 1)",
                          "INSERT INTO note (id, n) VALUES (?1, ?0)"}) {
    EXPECT_THAT(db().Write([&](Connection& c) {
      return c.RunSql(sql, {"x", 1}).status();
    }),
                StatusIs(StatusCode::kInvalidArgument))
        << sql;
  }
  ASSERT_OK(db().Write([&](Connection& c) -> Status {
    ASSIGN_OR_RETURN(
        int64_t inserted,
        c.RunSql("INSERT INTO note (id, n) VALUES ('?1 it''s -- /*', ?1) -- ?2 ?\n",
                 {5}));
    EXPECT_EQ(inserted, 1);
    return Status::OK();
  }));
  std::vector<std::string> ids;
  ASSERT_OK(db().Read([&](Connection& c) {
    return c
        .RunSql("SELECT id FROM note /* ? ?2 */ WHERE n >= ?1 ORDER BY id", {0},
                [&](const SqlRow& row) {
                  ids.push_back(row.Text(0));
                  return true;
                })
        .status();
  }));
  EXPECT_EQ(ids, (std::vector<std::string>{"?1 it's -- /*"}));
}

INSTANTIATE_TEST_SUITE_P(Sqlite, SqlStatementTest, ::testing::Values(Backend::kSqlite));
INSTANTIATE_TEST_SUITE_P(Postgres, SqlStatementTest,
                         ::testing::Values(Backend::kPostgres));

}  // namespace
}  // namespace sheetlog
