// TranslateSqlParams (emulator/table/sql_params.h): the one translator of `?N`
// placeholders, on both dialects.
#include "emulator/table/sql_params.h"

#include <gtest/gtest.h>

#include <string>

#include "emulator/table/table.h"
#include "tests/support/status_matchers.h"

namespace sheetlog {
namespace {

using ::testing::HasSubstr;

// `sql` in `dialect`'s form, or "error: " and the status.
std::string TranslatedIn(SqlDialect dialect, std::string_view sql) {
  Result<std::string> out = TranslateSqlParams(sql, dialect);
  return out.ok() ? *out : "error: " + out.status().ToString();
}
std::string ForPostgres(std::string_view sql) {
  return TranslatedIn(SqlDialect::kPostgres, sql);
}
std::string ForSqlite(std::string_view sql) {
  return TranslatedIn(SqlDialect::kSqlite, sql);
}

// On SQLite, `?N` is SQLite's own: a valid text comes back as it is.
void ExpectUnchangedForSqlite(std::string_view sql) { EXPECT_EQ(ForSqlite(sql), sql); }

TEST(SqlParamsTest, NumbersBecomeDollarsOnPostgresAndStayOnSqlite) {
  const std::string sql = "SELECT a FROM t WHERE b = ?12 AND c = ?1";
  EXPECT_EQ(ForPostgres(sql), "SELECT a FROM t WHERE b = $12 AND c = $1");
  ExpectUnchangedForSqlite(sql);
}

TEST(SqlParamsTest, NumbersMayRepeatAndComeInAnyOrder) {
  const std::string sql = "INSERT INTO t (b, a) VALUES (?2, ?1), (?2 + 1, ?1 || '-2')";
  EXPECT_EQ(ForPostgres(sql),
            "INSERT INTO t (b, a) VALUES ($2, $1), ($2 + 1, $1 || '-2')");
  ExpectUnchangedForSqlite(sql);
  // Leading zeros and placeholders next to each other or to words.
  EXPECT_EQ(ForPostgres("SELECT ?01+?2,x=?3"), "SELECT $01+$2,x=$3");
  EXPECT_EQ(ForPostgres("SELECT ?32766"), "SELECT $32766");
}

TEST(SqlParamsTest, StringLiteralsAndQuotedIdentifiersAreLeftAlone) {
  const std::string sql =
      "SELECT '?1', \"?2\", 'it''s ?3', \"a\"\"?4\" FROM t WHERE x = ?5 AND y = '?'";
  EXPECT_EQ(
      ForPostgres(sql),
      "SELECT '?1', \"?2\", 'it''s ?3', \"a\"\"?4\" FROM t WHERE x = $5 AND y = '?'");
  ExpectUnchangedForSqlite(sql);
  // A column whose quoted name holds a `?`.
  EXPECT_EQ(ForPostgres("UPDATE t SET \"what?\" = ?1"), "UPDATE t SET \"what?\" = $1");
}

TEST(SqlParamsTest, CommentsAreLeftAlone) {
  const std::string sql =
      "SELECT ?1 -- not ?2 nor ? here\nFROM t /* ?3 ? */ WHERE x = ?2";
  EXPECT_EQ(ForPostgres(sql),
            "SELECT $1 -- not ?2 nor ? here\nFROM t /* ?3 ? */ WHERE x = $2");
  ExpectUnchangedForSqlite(sql);
  // A comment at the end, without a newline.
  EXPECT_EQ(ForPostgres("SELECT ?1 -- ?"), "SELECT $1 -- ?");
  EXPECT_EQ(ForPostgres("SELECT ?1 /* ?"), "SELECT $1 /* ?");  // unterminated: as it is
}

TEST(SqlParamsTest, EachDialectReadsItsOwnQuotes) {
  // PostgreSQL nests block comments; SQLite ends one at the first */.
  EXPECT_EQ(ForPostgres("SELECT 1 /* a /* ? */ ?2 */ + ?1"),
            "SELECT 1 /* a /* ? */ ?2 */ + $1");
  EXPECT_THAT(TranslateSqlParams("SELECT 1 /* a /* ? */ ? */ + ?1", SqlDialect::kSqlite),
              StatusIs(StatusCode::kInvalidArgument));
  ExpectUnchangedForSqlite("SELECT 1 /* a /* ? */ ?2 */ + ?1");
  // PostgreSQL: E'...' takes backslash escapes; dollar-quoted bodies are text.
  EXPECT_EQ(ForPostgres("SELECT E'it\\'s ?1', 'x' WHERE a = ?1"),
            "SELECT E'it\\'s ?1', 'x' WHERE a = $1");
  EXPECT_EQ(ForPostgres("CREATE FUNCTION f() RETURNS int AS $body$ SELECT ? $x$ ?1 $body$"
                        " LANGUAGE sql; SELECT $$ ?2 $$, ?1"),
            "CREATE FUNCTION f() RETURNS int AS $body$ SELECT ? $x$ ?1 $body$"
            " LANGUAGE sql; SELECT $$ ?2 $$, $1");
  // A `$` inside an identifier is part of it (PostgreSQL, SQLite).
  EXPECT_EQ(ForPostgres("SELECT a$1, b$$ FROM t WHERE c = ?1"),
            "SELECT a$1, b$$ FROM t WHERE c = $1");
  ExpectUnchangedForSqlite("SELECT a$1 FROM t WHERE c = ?1");
  // SQLite: `...` and [...] are identifiers too.
  ExpectUnchangedForSqlite("SELECT `a?`, [b?] FROM t WHERE c = ?1");
}

TEST(SqlParamsTest, AnythingButOneConventionIsRefused) {
  for (SqlDialect dialect : {SqlDialect::kSqlite, SqlDialect::kPostgres}) {
    for (const char* sql : {"SELECT ? FROM t",            // anonymous
                            "SELECT ?1 WHERE a = ?",      // anonymous, at the end
                            "SELECT ?? FROM t",           // two anonymous
                            "SELECT ? 1",                 // not a number
                            "SELECT data ?| array['a']",  // jsonb's ?|
                            "SELECT ?0",                  // numbers start at 1
                            "SELECT ?32767",              // too large
                            "SELECT ?99999999999999999",  // no overflow
                            "SELECT $1 FROM t",           // PostgreSQL's own form
                            "SELECT a FROM t WHERE b=$2"}) {
      EXPECT_THAT(TranslateSqlParams(sql, dialect),
                  StatusIs(StatusCode::kInvalidArgument, HasSubstr("?1, ?2")))
          << sql;
    }
  }
  EXPECT_THAT(TranslateSqlParams("SELECT ?1, ?", SqlDialect::kPostgres),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("offset 11")));
}

TEST(SqlParamsTest, TextWithoutPlaceholdersIsUnchanged) {
  for (const char* sql : {"", "SELECT 1", "COMMIT", "SELECT 'a''b', \"c\" -- d"}) {
    EXPECT_EQ(ForPostgres(sql), sql);
    ExpectUnchangedForSqlite(sql);
  }
}

}  // namespace
}  // namespace sheetlog
