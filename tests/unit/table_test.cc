#include "emulator/table/table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <limits>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "emulator/postgres/postgres_database.h"
#include "emulator/sqlite/database.h"
#include "tests/support/postgres_test_server.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

// A log-like table (one-column sort key) and a table with a composite sort key, with
// one-letter DynamoDB names as seed 001 recommends.
const Table& LogTable() {
  static const Table table(TableSchema{"log",
                                       {"p"},
                                       {"n"},
                                       {{"p", "P"},
                                        {"n", "N"},
                                        {"body", "B"},
                                        {"counter", "C"},
                                        {"score", "S"},
                                        {"flag", "F"},
                                        {"data", "D"},
                                        {"label", "L"}}});
  return table;
}

const Table& PairTable() {
  static const Table table(TableSchema{
      "pair", {"p"}, {"a", "b"}, {{"p", "P"}, {"a", "A"}, {"b", "B"}, {"v", "V"}}});
  return table;
}

const Table& CounterTable() {
  static const Table table(
      TableSchema{"counter", {"id"}, {}, {{"id", "I"}, {"value", "V"}, {"note", "N"}}});
  return table;
}

// A table whose items a secondary index orders across partitions, as entry_by_seq
// orders a sheet's entries across its segments.
const Table& LedgerTable() {
  static const Table table(
      TableSchema{"ledger",
                  {"p", "seg"},
                  {"n"},
                  {{"p", "P"}, {"seg", ""}, {"n", "N"}, {"seq", "Q"}},
                  {{"ledger_by_seq", {"p"}, {"seq"}}}});
  return table;
}

// The same tables in each backend's SQL: on SQLite created in the emulator's test
// database, on PostgreSQL by a migration. Text keys sort bytewise on both
// (PostgreSQL: COLLATE "C").
constexpr const char* kSqliteTables =
    "CREATE TABLE log (p TEXT NOT NULL, n INTEGER NOT NULL, body TEXT,"
    " counter INTEGER, score REAL, flag INTEGER, data BLOB,"
    " label TEXT NOT NULL DEFAULT 'none',"
    " PRIMARY KEY (p, n)) WITHOUT ROWID;"
    "CREATE TABLE pair (p TEXT NOT NULL, a INTEGER NOT NULL,"
    " b INTEGER NOT NULL, v TEXT, PRIMARY KEY (p, a, b)) WITHOUT ROWID;"
    "CREATE TABLE counter (id TEXT NOT NULL PRIMARY KEY, value INTEGER,"
    " note TEXT) WITHOUT ROWID;"
    "CREATE TABLE ledger (p TEXT NOT NULL, seg INTEGER NOT NULL, n INTEGER NOT NULL,"
    " seq INTEGER NOT NULL, PRIMARY KEY (p, seg, n)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX ledger_by_seq ON ledger (p, seq);";
constexpr const char* kPostgresTables =
    "CREATE TABLE log (p text COLLATE \"C\" NOT NULL, n bigint NOT NULL, body text,"
    " counter bigint, score double precision, flag bigint, data bytea,"
    " label text NOT NULL DEFAULT 'none', PRIMARY KEY (p, n));"
    "CREATE TABLE pair (p text COLLATE \"C\" NOT NULL, a bigint NOT NULL,"
    " b bigint NOT NULL, v text, PRIMARY KEY (p, a, b));"
    "CREATE TABLE counter (id text COLLATE \"C\" NOT NULL PRIMARY KEY, value bigint,"
    " note text);"
    "CREATE TABLE ledger (p text COLLATE \"C\" NOT NULL, seg bigint NOT NULL,"
    " n bigint NOT NULL, seq bigint NOT NULL, PRIMARY KEY (p, seg, n));"
    "CREATE UNIQUE INDEX ledger_by_seq ON ledger (p, seq);";

// The table conformance tests run one source against both backends: Sqlite/TableTest.*
// on a SQLite file, Postgres/TableTest.* on a database of their own on the test
// PostgreSQL server (ctest's postgres fixture).
enum class TableBackend { kSqlite, kPostgres };
void PrintTo(TableBackend backend, std::ostream* os) {
  *os << (backend == TableBackend::kSqlite ? "sqlite" : "postgres");
}

class TableTest : public ::testing::TestWithParam<TableBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == TableBackend::kSqlite) {
      std::unique_ptr<Database> db =
          testing::OpenEmulatorTestDatabase(dir_.File("table.db"), /*clock=*/nullptr);
      ASSERT_NE(db, nullptr);
      ASSERT_OK(db->Write([](SqliteConnection& c) { return c.Exec(kSqliteTables); }));
      db_ = std::move(db);
      return;
    }
    const ::testing::TestInfo* test =
        ::testing::UnitTest::GetInstance()->current_test_info();
    postgres_ = std::make_unique<testing::PostgresTestDatabase>(test->name());
    ASSERT_FALSE(postgres_->conninfo().empty());
    PostgresDatabase::Options options;
    options.conninfo = postgres_->conninfo();
    options.migrations = {{100, "100_test_tables", kPostgresTables}};
    auto db = PostgresDatabase::Open(options);
    ASSERT_OK(db);
    db_ = std::move(db).value();
  }

  void TearDown() override { db_.reset(); }  // before the database is dropped

  Status Write(const Transactions::Work& fn) { return db_->Write(fn); }

  std::optional<Item> GetLog(const std::string& p, int64_t n) {
    std::optional<Item> out;
    Status s = db_->Read([&](Connection& c) {
      ASSIGN_OR_RETURN(out,
                       LogTable().Get(c, Key{{p}, {n}}, Consistency::kEventual, nullptr));
      return Status::OK();
    });
    EXPECT_OK(s);
    return out;
  }

  // Every n in partition `p` of the log table, via one unpaged query.
  std::vector<int64_t> AllLogNums(const std::string& p) {
    std::vector<int64_t> nums;
    Status s = db_->Read([&](Connection& c) {
      QueryRequest q;
      q.partition = {p};
      ASSIGN_OR_RETURN(QueryResult r, LogTable().Query(c, q, nullptr));
      for (const Item& item : r.items) nums.push_back(item.at("n").AsInt());
      return Status::OK();
    });
    EXPECT_OK(s);
    return nums;
  }

  Status PutLog(const Item& item, const std::vector<Condition>& conditions = {},
                UnitMeter* meter = nullptr) {
    return Write(
        [&](Connection& c) { return LogTable().Put(c, item, conditions, meter); });
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::PostgresTestDatabase> postgres_;
  std::unique_ptr<Transactions> db_;
};

INSTANTIATE_TEST_SUITE_P(Sqlite, TableTest, ::testing::Values(TableBackend::kSqlite));
INSTANTIATE_TEST_SUITE_P(Postgres, TableTest, ::testing::Values(TableBackend::kPostgres));

// ---------------------------------------------------------------------------
// Put

TEST_P(TableTest, PutIfAbsentOnExistingKeyFailsAndChangesNothing) {
  ASSERT_OK(Write([](Connection& c) {
    return LogTable().PutIfAbsent(c, {{"p", "s"}, {"n", 1}, {"body", "first"}}, nullptr);
  }));
  Status again = Write([](Connection& c) {
    return LogTable().PutIfAbsent(c, {{"p", "s"}, {"n", 1}, {"body", "second"}}, nullptr);
  });
  ASSERT_TRUE(again.IsConditionFailed()) << again.ToString();
  EXPECT_NE(again.message().find("log"), std::string::npos) << again.message();
  EXPECT_NE(again.message().find("attribute_not_exists(sk)"), std::string::npos)
      << again.message();
  auto item = GetLog("s", 1);
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->at("body").AsString(), "first");
}

TEST_P(TableTest, PutIfAbsentFailureInsideWriteLeavesOtherWorkIntact) {
  ASSERT_OK(PutLog({{"p", "s"}, {"n", 1}}));
  // The failed put is a value, not a rollback of the caller's transaction.
  ASSERT_TRUE(Write([](Connection& c) {
                Status lost = LogTable().PutIfAbsent(c, {{"p", "s"}, {"n", 1}}, nullptr);
                if (!lost.IsConditionFailed()) return Internal("expected a lost race");
                return LogTable().PutIfAbsent(c, {{"p", "s"}, {"n", 2}}, nullptr);
              }).ok());
  EXPECT_EQ(AllLogNums("s"), (std::vector<int64_t>{1, 2}));
}

TEST_P(TableTest, PutAllIfAbsentWritesTheAbsentOnesInOneStatementAndSaysWhich) {
  ASSERT_OK(PutLog({{"p", "s"}, {"n", 2}, {"body", "kept"}}));
  UnitMeter first, second;
  Result<std::vector<bool>> written = std::vector<bool>{};
  ASSERT_OK(Write([&](Connection& c) -> Status {
    written = LogTable().PutAllIfAbsent(c,
                                        {{{"p", "s"}, {"n", 1}, {"body", "one"}},
                                         {{"p", "s"}, {"n", 2}, {"body", "lost"}},
                                         {{"p", "t"}, {"n", 2}}},
                                        {&first, &second, nullptr});
    return written.status();
  }));
  EXPECT_EQ(*written, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(GetLog("s", 1)->at("body").AsString(), "one");
  EXPECT_EQ(GetLog("s", 2)->at("body").AsString(), "kept");
  // An attribute the others hold is absent where an item lacks it.
  ASSERT_TRUE(GetLog("t", 2).has_value());
  EXPECT_EQ(GetLog("t", 2)->count("body"), 0u);
  // Each item is charged as its own PutIfAbsent, written or not.
  EXPECT_EQ(first.write_units, 1);
  EXPECT_EQ(second.write_units, 1);
}

TEST_P(TableTest, QueryNewestFindsEachPartitionsNewestItemInOneStatement) {
  for (int n : {1, 3, 2}) ASSERT_OK(PutLog({{"p", "a"}, {"n", n}}));
  ASSERT_OK(PutLog({{"p", "b"}, {"n", 7}, {"body", "only"}}));
  UnitMeter a, missing;
  Result<std::vector<std::optional<Item>>> newest = std::vector<std::optional<Item>>{};
  ASSERT_OK(db_->Read([&](Connection& c) -> Status {
    newest = LogTable().QueryNewest(c, {{"b"}, {"none"}, {"a"}}, Consistency::kStrong,
                                    {nullptr, &missing, &a});
    return newest.status();
  }));
  ASSERT_EQ(newest->size(), 3u);
  ASSERT_TRUE((*newest)[0].has_value());
  EXPECT_EQ((*newest)[0]->at("n").AsInt(), 7);
  EXPECT_EQ((*newest)[0]->at("body").AsString(), "only");
  EXPECT_FALSE((*newest)[1].has_value());
  ASSERT_TRUE((*newest)[2].has_value());
  EXPECT_EQ((*newest)[2]->at("n").AsInt(), 3);
  // Each charged as a Query of its own: at least one unit, found or not.
  EXPECT_EQ(a.read_units, 1);
  EXPECT_EQ(missing.read_units, 1);
  Status twice = db_->Read([&](Connection& c) {
    return LogTable().QueryNewest(c, {{"a"}, {"a"}}, Consistency::kStrong, {}).status();
  });
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument) << twice.ToString();
}

// A query of ledger_by_seq's partition `p`.
QueryRequest LedgerBySeq(const std::string& p, bool forward = true, int limit = 0) {
  QueryRequest q;
  q.index = "ledger_by_seq";
  q.partition = {p};
  q.forward = forward;
  q.limit = limit;
  return q;
}

TEST_P(TableTest, QueryByAnIndexReadsAcrossTheTablesPartitionsInTheIndexsOrder) {
  // Partition "a" of the index spans the table's partitions (a, 0) and (a, 1); "b" is
  // another index partition.
  ASSERT_OK(Write([&](Connection& c) -> Status {
    for (auto [seg, n, seq] :
         {std::tuple{0, 0, 0}, {0, 1, 1}, {0, 2, 2}, {1, 0, 3}, std::tuple{1, 1, 4}}) {
      RETURN_IF_ERROR(LedgerTable().PutIfAbsent(
          c, {{"p", "a"}, {"seg", seg}, {"n", n}, {"seq", seq}}, nullptr));
    }
    return LedgerTable().PutIfAbsent(c, {{"p", "b"}, {"seg", 0}, {"n", 0}, {"seq", 9}},
                                     nullptr);
  }));
  auto seqs = [](const QueryResult& r) {
    std::vector<int64_t> out;
    for (const Item& item : r.items) out.push_back(item.at("seq").AsInt());
    return out;
  };
  auto query = [&](const QueryRequest& q) {
    Result<QueryResult> r = QueryResult{};
    EXPECT_OK(db_->Read([&](Connection& c) -> Status {
      r = LedgerTable().Query(c, q, nullptr);
      return r.status();
    }));
    return r.ok() ? *r : QueryResult{};
  };
  // The head: newest first, one item, whichever table partition holds it.
  QueryResult head = query(LedgerBySeq("a", /*forward=*/false, /*limit=*/1));
  EXPECT_EQ(seqs(head), std::vector<int64_t>({4}));
  ASSERT_EQ(head.items.size(), 1u);
  EXPECT_EQ(head.items[0].at("seg").AsInt(), 1);
  EXPECT_EQ(head.items[0].at("n").AsInt(), 1);
  EXPECT_EQ(seqs(query(LedgerBySeq("a"))), std::vector<int64_t>({0, 1, 2, 3, 4}));
  QueryRequest bounded = LedgerBySeq("a");
  bounded.sort_from = KeyValues{1};
  bounded.sort_to = KeyValues{3};
  EXPECT_EQ(seqs(query(bounded)), std::vector<int64_t>({1, 2, 3}));
  EXPECT_EQ(seqs(query(LedgerBySeq("b"))), std::vector<int64_t>({9}));
  EXPECT_TRUE(query(LedgerBySeq("none")).items.empty());
  // Pages of two continue from the index's sort key, each item once, in order.
  std::vector<int64_t> paged;
  QueryRequest page = LedgerBySeq("a", /*forward=*/false, /*limit=*/2);
  for (int pages = 0; pages < 5; ++pages) {
    QueryResult r = query(page);
    for (int64_t seq : seqs(r)) paged.push_back(seq);
    if (!r.last_evaluated) break;
    EXPECT_EQ(r.last_evaluated->size(), 1u);
    page.exclusive_start = r.last_evaluated;
  }
  EXPECT_EQ(paged, std::vector<int64_t>({4, 3, 2, 1, 0}));
}

TEST_P(TableTest, QueryByAnIndexRefusesConsistentReadsUnknownIndexesAndWrongKeys) {
  auto status_of = [&](const QueryRequest& q) {
    return db_->Read(
        [&](Connection& c) { return LedgerTable().Query(c, q, nullptr).status(); });
  };
  // As DynamoDB: a global secondary index has no consistent reads.
  QueryRequest strong = LedgerBySeq("a");
  strong.consistency = Consistency::kStrong;
  Status status = status_of(strong);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find("consistent"), std::string::npos) << status.ToString();
  QueryRequest unknown = LedgerBySeq("a");
  unknown.index = "ledger_by_n";
  status = status_of(unknown);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  // The index's partition key is (p), not the table's (p, seg).
  QueryRequest table_key = LedgerBySeq("a");
  table_key.partition = {"a", 0};
  status = status_of(table_key);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  QueryRequest table_start = LedgerBySeq("a");
  table_start.exclusive_start = KeyValues{0, 1};
  status = status_of(table_start);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
}

TEST(TableSchemaTest, AnIndexOnAColumnTheTableLacksMakesEveryOperationInvalid) {
  const Table table(
      TableSchema{"t", {"p"}, {}, {{"p", "P"}, {"v", "V"}}, {{"t_by_w", {"p"}, {"w"}}}});
  testing::TempDir dir;
  std::unique_ptr<Database> db =
      testing::OpenEmulatorTestDatabase(dir.File("t.db"), /*clock=*/nullptr);
  ASSERT_NE(db, nullptr);
  Transactions& transactions = *db;
  Status status = transactions.Read([&](Connection& c) {
    return table.Get(c, Key{{"x"}, {}}, Consistency::kEventual, nullptr).status();
  });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find("t_by_w"), std::string::npos) << status.ToString();
}

TEST_P(TableTest, PutAllIfAbsentRefusesTwoItemsWithOneKeyAndWritesNothing) {
  Status status = Write([&](Connection& c) -> Status {
    return LogTable()
        .PutAllIfAbsent(c, {{{"p", "s"}, {"n", 1}}, {{"p", "s"}, {"n", 1}}}, {})
        .status();
  });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_TRUE(AllLogNums("s").empty());
}

TEST_P(TableTest, PutReplacesTheWholeItemAndDefaultsMissingColumns) {
  ASSERT_OK(
      PutLog({{"p", "s"}, {"n", 1}, {"body", "x"}, {"counter", 4}, {"label", "custom"}}));
  ASSERT_OK(PutLog({{"p", "s"}, {"n", 1}, {"body", "y"}}));
  auto item = GetLog("s", 1);
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->at("body").AsString(), "y");
  EXPECT_EQ(item->count("counter"), 0u);            // removed, as PutItem does
  EXPECT_EQ(item->at("label").AsString(), "none");  // the SQL DEFAULT
}

TEST_P(TableTest, PutRejectsUnknownColumnsMissingKeysAndHugeItems) {
  EXPECT_EQ(PutLog({{"p", "s"}, {"n", 1}, {"nope", 1}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PutLog({{"p", "s"}, {"body", "x"}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(PutLog({{"p", "s"}, {"n", 1}, {"body", std::string(401 * 1024, 'x')}}).code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(AllLogNums("s").empty());
}

TEST_P(TableTest, ValuesRoundTripAndNullsAreAbsent) {
  ASSERT_TRUE(PutLog({{"p", "s"},
                      {"n", 1},
                      {"body", "héllo"},
                      {"score", 2.5},
                      {"flag", true},
                      {"data", Value::Bytes(std::string("\0\x01\xff", 3))},
                      {"counter", Value::Null()}})
                  .ok());
  auto item = GetLog("s", 1);
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->at("body").type(), Value::Type::kString);
  EXPECT_EQ(item->at("body").AsString(), "héllo");
  EXPECT_EQ(item->at("score").type(), Value::Type::kDouble);
  EXPECT_EQ(item->at("score").AsDouble(), 2.5);
  // An integer column cannot tell a bool from an integer: it reads back as kInt 1.
  EXPECT_EQ(item->at("flag").type(), Value::Type::kInt);
  EXPECT_TRUE(item->at("flag").AsBool());
  EXPECT_TRUE(item->at("flag") == Value(true));
  EXPECT_EQ(item->at("data").type(), Value::Type::kBytes);
  EXPECT_EQ(item->at("data").AsString(), std::string("\0\x01\xff", 3));
  EXPECT_EQ(item->count("counter"), 0u);
}

// Every row statement binds values as parameters and reads columns through SqlRow:
// the edges of each type come back as they went, on both backends.
TEST_P(TableTest, ValuesAtTheEdgesRoundTrip) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  // Text that looks like SQL is only ever a parameter, a key included.
  const std::string sqlish = "it's \"quoted\" ?1 ?2 ? $1 -- not /* a comment */";
  const std::string bytes("\0'\"?\xff", 5);
  ASSERT_OK(PutLog({{"p", sqlish},
                    {"n", kMax},
                    {"body", ""},
                    {"counter", kMin},
                    {"score", 1e300},
                    {"flag", 3.0},
                    {"data", Value::Bytes(bytes)}}));
  ASSERT_OK(PutLog(
      {{"p", sqlish}, {"n", -1}, {"score", -1.0 / 3}, {"data", Value::Bytes("")}}));

  auto item = GetLog(sqlish, kMax);
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->at("p").AsString(), sqlish);
  EXPECT_EQ(item->at("n").AsInt(), kMax);
  EXPECT_EQ(item->at("body").type(), Value::Type::kString);  // "" is not NULL
  EXPECT_EQ(item->at("body").AsString(), "");
  EXPECT_EQ(item->at("counter").AsInt(), kMin);
  EXPECT_EQ(item->at("score").type(), Value::Type::kDouble);
  EXPECT_EQ(item->at("score").AsDouble(), 1e300);
  // A whole double in an integer column reads back as that integer (table.h).
  EXPECT_EQ(item->at("flag").type(), Value::Type::kInt);
  EXPECT_EQ(item->at("flag").AsInt(), 3);
  EXPECT_EQ(item->at("data").type(), Value::Type::kBytes);
  EXPECT_EQ(item->at("data").AsString(), bytes);
  EXPECT_EQ(item->at("label").AsString(), "none");

  auto other = GetLog(sqlish, -1);
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->at("score").AsDouble(), -1.0 / 3);        // exactly
  EXPECT_EQ(other->at("data").type(), Value::Type::kBytes);  // empty bytes, not NULL
  EXPECT_EQ(other->at("data").AsString(), "");
  EXPECT_EQ(other->count("body"), 0u);
  EXPECT_EQ(other->count("counter"), 0u);

  EXPECT_EQ(AllLogNums(sqlish), (std::vector<int64_t>{-1, kMax}));
  // The same values through an update's RETURNING and a delete's.
  Item updated;
  ASSERT_OK(Write([&](Connection& c) -> Status {
    UpdateRequest u;
    u.key = Key{{sqlish}, {kMax}};
    u.set = {{"body", sqlish}, {"counter", Value::Null()}};
    ASSIGN_OR_RETURN(updated, LogTable().Update(c, u, nullptr));
    return LogTable().Delete(c, Key{{sqlish}, {-1}}, {Condition::Exists("data")},
                             nullptr);
  }));
  EXPECT_EQ(updated.at("body").AsString(), sqlish);
  EXPECT_EQ(updated.count("counter"), 0u);
  EXPECT_EQ(updated.at("data").AsString(), bytes);
  EXPECT_EQ(updated, *GetLog(sqlish, kMax));
  EXPECT_EQ(AllLogNums(sqlish), (std::vector<int64_t>{kMax}));
}

// ---------------------------------------------------------------------------
// Conditions

struct ConditionCase {
  Condition condition;
  bool holds_on_item;    // item: counter = 5, body = "m", no score
  bool holds_on_absent;  // no item at all
};

TEST_P(TableTest, EveryConditionOpOnPresentAndAbsentItems) {
  using Op = Condition::Op;
  const std::vector<ConditionCase> cases = {
      {Condition::ItemExists(), true, false},
      {Condition::ItemNotExists(), false, true},
      {Condition::Exists("counter"), true, false},
      {Condition::Exists("score"), false, false},
      {Condition::NotExists("counter"), false, true},
      {Condition::NotExists("score"), true, true},
      {Condition::Equals("counter", 5), true, false},
      {Condition::Equals("counter", 5.0), true, false},  // one N type on DynamoDB
      {Condition::Equals("counter", 6), false, false},
      {Condition::Equals("counter", "5"), false, false},  // different kinds
      {Condition::Compare(Op::kNotEquals, "counter", 6), true, true},
      {Condition::Compare(Op::kNotEquals, "counter", 5), false, true},
      {Condition::Compare(Op::kNotEquals, "score", 1), true, true},  // missing: not equal
      {Condition::Compare(Op::kLess, "counter", 6), true, false},
      {Condition::Compare(Op::kLess, "counter", 5), false, false},
      {Condition::Compare(Op::kLessOrEqual, "counter", 5), true, false},
      {Condition::Compare(Op::kLessOrEqual, "counter", 4), false, false},
      {Condition::Compare(Op::kGreater, "counter", 4), true, false},
      {Condition::Compare(Op::kGreater, "counter", 5), false, false},
      {Condition::Compare(Op::kGreaterOrEqual, "counter", 5), true, false},
      {Condition::Compare(Op::kGreaterOrEqual, "counter", 6), false, false},
      {Condition::Compare(Op::kLess, "body", "n"), true, false},  // strings bytewise
      {Condition::Compare(Op::kGreater, "body", "a"), true, false},
      {Condition::Compare(Op::kLess, "counter", "9"), false, false},  // never ordered
      {Condition::Compare(Op::kLess, "score", 1), false, false},      // missing attribute
  };
  int64_t n = 0;
  for (const ConditionCase& c : cases) {
    SCOPED_TRACE(c.condition.ToString());
    // Against an existing item: a put that must change `body` iff the condition holds.
    ++n;
    ASSERT_OK(PutLog({{"p", "c"}, {"n", n}, {"counter", 5}, {"body", "m"}}));
    Status on_item =
        PutLog({{"p", "c"}, {"n", n}, {"counter", 5}, {"body", "z"}}, {c.condition});
    EXPECT_EQ(on_item.ok(), c.holds_on_item) << on_item.ToString();
    if (!on_item.ok()) {
      EXPECT_TRUE(on_item.IsConditionFailed());
      EXPECT_EQ(on_item.message(), "put on log: " + c.condition.ToString() + " failed");
    }
    EXPECT_EQ(GetLog("c", n)->at("body").AsString(), c.holds_on_item ? "z" : "m");

    // Against no item: the put creates it iff the condition holds.
    ++n;
    Status on_absent = PutLog({{"p", "c"}, {"n", n}, {"counter", 5}}, {c.condition});
    EXPECT_EQ(on_absent.ok(), c.holds_on_absent) << on_absent.ToString();
    EXPECT_EQ(GetLog("c", n).has_value(), c.holds_on_absent);
  }
}

TEST_P(TableTest, ConditionsAreAndedAndNameTheFirstFailure) {
  ASSERT_OK(PutLog({{"p", "s"}, {"n", 1}, {"counter", 5}}));
  Status s = PutLog({{"p", "s"}, {"n", 1}, {"counter", 6}},
                    {Condition::ItemExists(), Condition::Equals("counter", 5),
                     Condition::Equals("body", "x")});
  ASSERT_TRUE(s.IsConditionFailed());
  EXPECT_EQ(s.message(), "put on log: body = \"x\" failed");
  EXPECT_EQ(GetLog("s", 1)->at("counter").AsInt(), 5);
}

TEST(ConditionTest, ToStringSpellsDynamoDbExpressions) {
  using Op = Condition::Op;
  EXPECT_EQ(Condition::ItemNotExists().ToString(), "attribute_not_exists(sk)");
  EXPECT_EQ(Condition::ItemExists().ToString(), "attribute_exists(sk)");
  EXPECT_EQ(Condition::Exists("archive").ToString(), "attribute_exists(archive)");
  EXPECT_EQ(Condition::Equals("increment", 3).ToString(), "increment = 3");
  EXPECT_EQ(Condition::Compare(Op::kNotEquals, "type", "Snapshot").ToString(),
            "type <> \"Snapshot\"");
  EXPECT_EQ(Condition::Compare(Op::kGreaterOrEqual, "x", 1.5).ToString(), "x >= 1.5");
}

// ---------------------------------------------------------------------------
// TransactWrite

TEST_P(TableTest, TransactionWithOneFailedConditionWritesNothing) {
  ASSERT_OK(PutLog({{"p", "t"}, {"n", 5}, {"counter", 1}}));
  ASSERT_OK(Write([](Connection& c) {
    return CounterTable().Put(c, {{"id", "k"}, {"value", 10}}, {}, nullptr);
  }));
  Status s = Write([](Connection& c) {
    UpdateRequest bump;
    bump.key = Key{{"k"}, {}};
    bump.add = {{"value", 1}};
    return TransactWrite(c,
                         {TransactItem::PutIfAbsent(LogTable(), {{"p", "t"}, {"n", 6}}),
                          TransactItem::PutIfAbsent(LogTable(), {{"p", "t"}, {"n", 5}}),
                          TransactItem::Update(CounterTable(), bump)},
                         nullptr);
  });
  ASSERT_TRUE(s.IsConditionFailed()) << s.ToString();
  EXPECT_EQ(s.message(),
            "transaction cancelled: item 1 (log): attribute_not_exists(sk) failed");
  EXPECT_EQ(AllLogNums("t"), (std::vector<int64_t>{5}));
  EXPECT_EQ(GetLog("t", 5)->count("body"), 0u);
  int64_t value = 0;
  ASSERT_TRUE(db_->Read([&](Connection& c) {
                   ASSIGN_OR_RETURN(auto item,
                                    CounterTable().Get(c, Key{{"k"}, {}},
                                                       Consistency::kStrong, nullptr));
                   value = item->at("value").AsInt();
                   return Status::OK();
                 })
                  .ok());
  EXPECT_EQ(value, 10);
}

TEST_P(TableTest, CallerWorkContinuesAfterACancelledTransaction) {
  ASSERT_OK(PutLog({{"p", "t"}, {"n", 1}}));
  ASSERT_TRUE(Write([](Connection& c) {
                Status tx = TransactWrite(
                    c,
                    {TransactItem::PutIfAbsent(LogTable(), {{"p", "t"}, {"n", 2}}),
                     TransactItem::Check(LogTable(), Key{{"t"}, {1}},
                                         {Condition::NotExists("n")})},
                    nullptr);
                if (!tx.IsConditionFailed()) return Internal("expected cancellation");
                if (tx.message().find("item 1 (log): attribute_not_exists(n) failed") ==
                    std::string::npos) {
                  return Internal("unexpected message: " + tx.message());
                }
                return LogTable().PutIfAbsent(c, {{"p", "t"}, {"n", 3}}, nullptr);
              }).ok());
  EXPECT_EQ(AllLogNums("t"), (std::vector<int64_t>{1, 3}));  // 2 rolled back, 3 kept
}

TEST_P(TableTest, TransactionCommitsEveryKindOfItem) {
  ASSERT_OK(PutLog({{"p", "t"}, {"n", 1}, {"counter", 7}}));
  ASSERT_OK(PutLog({{"p", "t"}, {"n", 2}}));
  UnitMeter meter;
  Status s = Write([&](Connection& c) {
    UpdateRequest update;
    update.key = Key{{"t"}, {1}};
    update.set = {{"body", "updated"}};
    update.conditions = {Condition::Equals("counter", 7)};
    return TransactWrite(
        c,
        {TransactItem::Check(PairTable(), Key{{"x"}, {1, 1}},
                             {Condition::ItemNotExists()}),
         TransactItem::Update(LogTable(), update),
         TransactItem::Delete(LogTable(), Key{{"t"}, {2}}, {Condition::ItemExists()}),
         TransactItem::Put(LogTable(), {{"p", "t"}, {"n", 4}})},
        &meter);
  });
  ASSERT_OK(s);
  EXPECT_EQ(AllLogNums("t"), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(GetLog("t", 1)->at("body").AsString(), "updated");
  // Four small items, each 1 WRU, doubled in a transaction.
  EXPECT_EQ(meter.write_units, 8);
  EXPECT_EQ(meter.by_table["pair"].second, 2);
  EXPECT_EQ(meter.by_table["log"].second, 6);
}

TEST_P(TableTest, TransactionRejectsInvalidItemsBeforeChargingAnything) {
  UnitMeter meter;
  Status twice = Write([&](Connection& c) {
    return TransactWrite(c,
                         {TransactItem::PutIfAbsent(LogTable(), {{"p", "t"}, {"n", 1}}),
                          TransactItem::Delete(LogTable(), Key{{"t"}, {1}})},
                         &meter);
  });
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument) << twice.ToString();
  Status bad_key = Write([&](Connection& c) {
    return TransactWrite(c,
                         {TransactItem::PutIfAbsent(LogTable(), {{"p", "t"}, {"n", 1}}),
                          TransactItem::Update(LogTable(), UpdateRequest{})},  // no key
                         &meter);
  });
  EXPECT_EQ(bad_key.code(), StatusCode::kInvalidArgument) << bad_key.ToString();
  EXPECT_TRUE(AllLogNums("t").empty());
  EXPECT_EQ(meter.write_units, 0);
}

// ---------------------------------------------------------------------------
// Query and Scan

// Pages through `request` with its limit, checking each page's contract.
std::vector<Item> QueryAll(Connection& c, const Table& table, QueryRequest request) {
  std::vector<Item> out;
  for (int pages = 0; pages < 1000; ++pages) {
    auto page = table.Query(c, request, nullptr);
    EXPECT_OK(page);
    if (!page.ok()) break;
    if (request.limit > 0) {
      EXPECT_LE(page->items.size(), static_cast<size_t>(request.limit));
      // DynamoDB: a page that reaches the limit always says more may follow.
      EXPECT_EQ(page->last_evaluated.has_value(),
                page->items.size() == static_cast<size_t>(request.limit));
    }
    out.insert(out.end(), page->items.begin(), page->items.end());
    if (!page->last_evaluated) break;
    request.exclusive_start = page->last_evaluated;
  }
  return out;
}

TEST_P(TableTest, QueryPagingReturnsEveryItemOnceInOrder) {
  constexpr int kItems = 12;
  ASSERT_TRUE(
      Write([](Connection& c) {
        for (int n = 0; n < kItems; ++n) {
          RETURN_IF_ERROR(LogTable().PutIfAbsent(c, {{"p", "q"}, {"n", n}}, nullptr));
        }
        // Neighbouring partitions that must never leak into the results.
        RETURN_IF_ERROR(LogTable().PutIfAbsent(c, {{"p", "a"}, {"n", 5}}, nullptr));
        return LogTable().PutIfAbsent(c, {{"p", "r"}, {"n", 5}}, nullptr);
      }).ok());

  struct Bounds {
    std::optional<int64_t> from, to;
  };
  for (Bounds b : {Bounds{}, Bounds{3, std::nullopt}, Bounds{std::nullopt, 8},
                   Bounds{3, 8}, Bounds{5, 5}, Bounds{9, 2}, Bounds{20, std::nullopt}}) {
    for (bool forward : {true, false}) {
      std::vector<int64_t> expected;
      for (int64_t n = 0; n < kItems; ++n) {
        if ((!b.from || n >= *b.from) && (!b.to || n <= *b.to)) expected.push_back(n);
      }
      if (!forward) std::reverse(expected.begin(), expected.end());
      for (int limit = 0; limit <= kItems + 1; ++limit) {
        SCOPED_TRACE("from " + std::to_string(b.from.value_or(-1)) + " to " +
                     std::to_string(b.to.value_or(-1)) + " forward " +
                     std::to_string(forward) + " limit " + std::to_string(limit));
        QueryRequest q;
        q.partition = {"q"};
        if (b.from) q.sort_from = KeyValues{*b.from};
        if (b.to) q.sort_to = KeyValues{*b.to};
        q.forward = forward;
        q.limit = limit;
        std::vector<int64_t> got;
        ASSERT_TRUE(db_->Read([&](Connection& c) {
                         for (const Item& item : QueryAll(c, LogTable(), q)) {
                           EXPECT_EQ(item.at("p").AsString(), "q");
                           got.push_back(item.at("n").AsInt());
                         }
                         return Status::OK();
                       })
                        .ok());
        EXPECT_EQ(got, expected);
      }
    }
  }
}

TEST_P(TableTest, QueryPagingOnACompositeSortKey) {
  using Pair = std::pair<int64_t, int64_t>;
  std::vector<Pair> all;
  ASSERT_TRUE(
      Write([&](Connection& c) {
        for (int a = 0; a < 4; ++a) {
          for (int b = 0; b < 4; ++b) {
            all.emplace_back(a, b);
            RETURN_IF_ERROR(PairTable().PutIfAbsent(
                c, {{"p", "x"}, {"a", a}, {"b", b}, {"v", "x"}}, nullptr));
          }
        }
        return PairTable().PutIfAbsent(c, {{"p", "y"}, {"a", 1}, {"b", 1}}, nullptr);
      }).ok());

  struct Bounds {
    std::optional<KeyValues> from, to;
    std::function<bool(const Pair&)> in;
  };
  const std::vector<Bounds> bounds = {
      {std::nullopt, std::nullopt, [](const Pair&) { return true; }},
      // Full tuples compare lexicographically: (1,2) <= (a,b) <= (3,1).
      {KeyValues{1, 2}, KeyValues{3, 1},
       [](const Pair& p) {
         return p >= Pair{1, 2} && p <= Pair{3, 1};
       }},
      // Prefix bounds bound the leading column only: 1 <= a <= 2.
      {KeyValues{1}, KeyValues{2},
       [](const Pair& p) { return p.first >= 1 && p.first <= 2; }},
      {KeyValues{2, 3}, std::nullopt,
       [](const Pair& p) {
         return p >= Pair{2, 3};
       }},
  };
  for (size_t bi = 0; bi < bounds.size(); ++bi) {
    for (bool forward : {true, false}) {
      std::vector<Pair> expected;
      std::copy_if(all.begin(), all.end(), std::back_inserter(expected), bounds[bi].in);
      if (!forward) std::reverse(expected.begin(), expected.end());
      for (int limit = 0; limit <= 17; ++limit) {
        SCOPED_TRACE("bounds " + std::to_string(bi) + " forward " +
                     std::to_string(forward) + " limit " + std::to_string(limit));
        QueryRequest q;
        q.partition = {"x"};
        q.sort_from = bounds[bi].from;
        q.sort_to = bounds[bi].to;
        q.forward = forward;
        q.limit = limit;
        std::vector<Pair> got;
        ASSERT_TRUE(db_->Read([&](Connection& c) {
                         for (const Item& item : QueryAll(c, PairTable(), q)) {
                           got.emplace_back(item.at("a").AsInt(), item.at("b").AsInt());
                         }
                         return Status::OK();
                       })
                        .ok());
        EXPECT_EQ(got, expected);
      }
    }
  }
}

TEST_P(TableTest, QueryPageStopsAtOneMegabyte) {
  // Five items of ~300 KB: 3 fit under 1 MB (900 KB), the 4th would cross it.
  ASSERT_TRUE(Write([](Connection& c) {
                for (int n = 0; n < 5; ++n) {
                  RETURN_IF_ERROR(LogTable().PutIfAbsent(
                      c, {{"p", "big"}, {"n", n}, {"body", std::string(300 * 1024, 'b')}},
                      nullptr));
                }
                return Status::OK();
              }).ok());
  ASSERT_TRUE(db_->Read([](Connection& c) {
                   QueryRequest q;
                   q.partition = {"big"};
                   ASSIGN_OR_RETURN(QueryResult first, LogTable().Query(c, q, nullptr));
                   EXPECT_EQ(first.items.size(), 3u);
                   EXPECT_TRUE(first.last_evaluated.has_value());
                   EXPECT_EQ(first.last_evaluated, (KeyValues{2}));
                   q.exclusive_start = first.last_evaluated;
                   ASSIGN_OR_RETURN(QueryResult second, LogTable().Query(c, q, nullptr));
                   EXPECT_EQ(second.items.size(), 2u);
                   EXPECT_FALSE(second.last_evaluated.has_value());
                   return Status::OK();
                 })
                  .ok());
}

TEST_P(TableTest, QueryRejectsMalformedKeys) {
  ASSERT_TRUE(db_->Read([](Connection& c) {
                   QueryRequest q;  // no partition value
                   EXPECT_EQ(LogTable().Query(c, q, nullptr).status().code(),
                             StatusCode::kInvalidArgument);
                   q.partition = {"x"};
                   q.exclusive_start =
                       KeyValues{1};  // PairTable's sort key has two columns
                   EXPECT_EQ(PairTable().Query(c, q, nullptr).status().code(),
                             StatusCode::kInvalidArgument);
                   q.exclusive_start.reset();
                   q.sort_from = KeyValues{1, 2, 3};
                   EXPECT_EQ(PairTable().Query(c, q, nullptr).status().code(),
                             StatusCode::kInvalidArgument);
                   return Status::OK();
                 })
                  .ok());
}

TEST_P(TableTest, ScanPagesThroughEveryItemInKeyOrder) {
  std::vector<std::tuple<std::string, int64_t, int64_t>> expected;
  ASSERT_TRUE(Write([&](Connection& c) {
                for (std::string p : {"b", "a", "c"}) {
                  for (int a = 2; a >= 0; --a) {
                    for (int b = 0; b < 2; ++b) {
                      RETURN_IF_ERROR(PairTable().PutIfAbsent(
                          c, {{"p", p}, {"a", a}, {"b", b}}, nullptr));
                      expected.emplace_back(p, a, b);
                    }
                  }
                }
                return Status::OK();
              }).ok());
  std::sort(expected.begin(), expected.end());
  for (int limit = 0; limit <= 19; ++limit) {
    SCOPED_TRACE(limit);
    std::vector<std::tuple<std::string, int64_t, int64_t>> got;
    ASSERT_TRUE(
        db_->Read([&](Connection& c) {
             std::optional<KeyValues> start;
             for (int pages = 0; pages < 100; ++pages) {
               ASSIGN_OR_RETURN(
                   QueryResult page,
                   PairTable().Scan(c, start, limit, Consistency::kEventual, nullptr));
               for (const Item& i : page.items) {
                 got.emplace_back(i.at("p").AsString(), i.at("a").AsInt(),
                                  i.at("b").AsInt());
               }
               if (!page.last_evaluated) break;
               EXPECT_EQ(page.last_evaluated->size(), 3u);  // full key
               start = page.last_evaluated;
             }
             return Status::OK();
           })
            .ok());
    EXPECT_EQ(got, expected);
  }
}

// ---------------------------------------------------------------------------
// Update, Add, Delete

TEST_P(TableTest, UpdateSetsRemovesAddsAndReturnsAllNew) {
  ASSERT_OK(
      PutLog({{"p", "u"}, {"n", 1}, {"body", "b"}, {"score", 1.5}, {"counter", 2}}));
  Item item;
  ASSERT_TRUE(Write([&](Connection& c) {
                UpdateRequest u;
                u.key = Key{{"u"}, {1}};
                u.set = {{"body", "new"}, {"flag", false}};
                u.remove = {"score"};
                u.add = {{"counter", 40}};
                u.conditions = {Condition::Equals("counter", 2)};
                ASSIGN_OR_RETURN(item, LogTable().Update(c, u, nullptr));
                return Status::OK();
              }).ok());
  EXPECT_EQ(item.at("body").AsString(), "new");
  EXPECT_EQ(item.at("counter").AsInt(), 42);
  EXPECT_EQ(item.at("flag").AsInt(), 0);
  EXPECT_EQ(item.count("score"), 0u);
  EXPECT_EQ(item.at("label").AsString(), "none");
  EXPECT_EQ(item, *GetLog("u", 1));  // ALL_NEW is what is stored
}

TEST_P(TableTest, UpdateWithoutCreateIfMissingFailsOnAMissingItem) {
  Status s = Write([](Connection& c) {
    UpdateRequest u;
    u.key = Key{{"u"}, {9}};
    u.set = {{"body", "x"}};
    u.create_if_missing = false;
    return LogTable().Update(c, u, nullptr).status();
  });
  ASSERT_TRUE(s.IsConditionFailed()) << s.ToString();
  EXPECT_EQ(s.message(), "update on log: attribute_exists(sk) failed");
  EXPECT_FALSE(GetLog("u", 9).has_value());

  // create_if_missing (the default) creates it.
  ASSERT_OK(Write([](Connection& c) {
    UpdateRequest u;
    u.key = Key{{"u"}, {9}};
    u.set = {{"body", "x"}};
    return LogTable().Update(c, u, nullptr).status();
  }));
  EXPECT_EQ(GetLog("u", 9)->at("body").AsString(), "x");
}

TEST_P(TableTest, UpdateFailuresChangeNothing) {
  ASSERT_OK(PutLog({{"p", "u"}, {"n", 1}, {"body", "text"}, {"counter", 1}}));
  auto update = [&](UpdateRequest u) {
    u.key = Key{{"u"}, {1}};
    return Write(
        [&](Connection& c) { return LogTable().Update(c, u, nullptr).status(); });
  };
  UpdateRequest lost;
  lost.set = {{"counter", 100}};
  lost.conditions = {Condition::Equals("counter", 0)};
  EXPECT_TRUE(update(lost).IsConditionFailed());

  UpdateRequest key_change;
  key_change.set = {{"n", 2}};
  EXPECT_EQ(update(key_change).code(), StatusCode::kInvalidArgument);

  UpdateRequest overlap;
  overlap.set = {{"counter", 3}};
  overlap.add = {{"counter", 1}};
  EXPECT_EQ(update(overlap).code(), StatusCode::kInvalidArgument);

  UpdateRequest add_to_string;
  add_to_string.add = {{"body", 1}};
  EXPECT_EQ(update(add_to_string).code(), StatusCode::kInvalidArgument);

  // label is NOT NULL: removing it is a malformed item, not a lost race.
  UpdateRequest remove_required;
  remove_required.remove = {"label"};
  Status s = update(remove_required);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();

  auto item = GetLog("u", 1);
  EXPECT_EQ(item->at("label").AsString(), "none");
  EXPECT_EQ(item->at("counter").AsInt(), 1);
  EXPECT_EQ(item->at("body").AsString(), "text");
}

TEST_P(TableTest, AddReturnsIncreasingValuesAndCreatesTheItem) {
  for (int64_t expected = 1; expected <= 5; ++expected) {
    int64_t got = 0;
    ASSERT_TRUE(Write([&](Connection& c) {
                  ASSIGN_OR_RETURN(got, CounterTable().Add(c, Key{{"k"}, {}}, "value", 1,
                                                           {{"note", "n"}}, nullptr));
                  return Status::OK();
                }).ok());
    EXPECT_EQ(got, expected);
  }
}

TEST_P(TableTest, ConcurrentAddNeverReturnsTheSameValueTwice) {
  constexpr int kThreads = 4;
  constexpr int kAddsPerThread = 50;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAddsPerThread; ++i) {
        int64_t v = 0;
        Status s = db_->Write([&](Connection& c) {
          ASSIGN_OR_RETURN(
              v, CounterTable().Add(c, Key{{"shared"}, {}}, "value", 1, {}, nullptr));
          return Status::OK();
        });
        EXPECT_OK(s);
        seen[t].push_back(v);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<int64_t> all;
  for (const auto& values : seen) {
    EXPECT_TRUE(std::is_sorted(values.begin(), values.end()));  // increasing per caller
    all.insert(values.begin(), values.end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kAddsPerThread));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kAddsPerThread);
}

TEST_P(TableTest, DeleteHonoursConditions) {
  ASSERT_OK(PutLog({{"p", "d"}, {"n", 1}, {"counter", 3}}));
  Status s = Write([](Connection& c) {
    return LogTable().Delete(c, Key{{"d"}, {1}}, {Condition::Equals("counter", 4)},
                             nullptr);
  });
  ASSERT_TRUE(s.IsConditionFailed());
  EXPECT_EQ(s.message(), "delete on log: counter = 4 failed");
  EXPECT_TRUE(GetLog("d", 1).has_value());
  ASSERT_TRUE(Write([](Connection& c) {
                return LogTable().Delete(c, Key{{"d"}, {1}},
                                         {Condition::Equals("counter", 3)}, nullptr);
              }).ok());
  EXPECT_FALSE(GetLog("d", 1).has_value());
  // Deleting a missing item is fine without conditions, and fails attribute_exists.
  EXPECT_OK(Write([](Connection& c) {
    return LogTable().Delete(c, Key{{"d"}, {1}}, {}, nullptr);
  }));
  EXPECT_TRUE(
      Write([](Connection& c) {
        return LogTable().Delete(c, Key{{"d"}, {1}}, {Condition::ItemExists()}, nullptr);
      }).IsConditionFailed());
}

// ---------------------------------------------------------------------------
// Request units, computed by hand from seed 001's rules.
//
// Item sizes in the log table: name length + value size per attribute.
//   "p" -> name "P" (1) + "k" (1)                      = 2
//   "n" -> name "N" (1) + NumberSize("1") = (1+1)/2+1  = 3   (any one-digit n)
//   "body" -> name "B" (1) + L bytes                   = 1 + L
// so an item {p:"k", n:<digit>, body: L bytes} is 6 + L bytes.

Item SizedItem(int64_t n, int64_t total_bytes) {
  return Item{{"p", "k"}, {"n", n}, {"body", std::string(total_bytes - 6, 'x')}};
}

TEST_P(TableTest, ItemSizeFollowsDynamoDbRules) {
  EXPECT_EQ(LogTable().ItemSize(SizedItem(1, 1536)), 1536);
  EXPECT_EQ(LogTable().ItemSize({{"p", "héllo"}}), 1 + 6);  // UTF-8 bytes: é is 2
  EXPECT_EQ(LogTable().ItemSize({{"flag", true}, {"counter", Value::Null()}}), 1 + 1);
  EXPECT_EQ(LogTable().ItemSize({{"data", Value::Bytes("abc")}}), 1 + 3);
  EXPECT_EQ(NumberSize("7"), 2);           // (1+1)/2 + 1
  EXPECT_EQ(NumberSize("1234"), 3);        // (4+1)/2 + 1
  EXPECT_EQ(NumberSize("12345"), 4);       // (5+1)/2 + 1
  EXPECT_EQ(NumberSize("-0012.3400"), 3);  // significant 1234
  EXPECT_EQ(NumberSize("1000000"), 2);     // trailing zeros are not stored
  EXPECT_EQ(NumberSize("0"), 2);
  for (int64_t v :
       {0L, 7L, -7L, 1234L, 1000000L, 123456789012345L, INT64_MIN, INT64_MAX}) {
    EXPECT_EQ(IntegerNumberSize(v), NumberSize(std::to_string(v))) << v;
  }
  EXPECT_EQ(Value(1.5).DynamoSize(), 2);  // "1.5": 15 -> (2+1)/2 + 1
}

TEST_P(TableTest, PutOfOneAndAHalfKilobytesCostsTwoWriteUnits) {
  UnitMeter meter;
  // 1536 bytes / 1024 = 1.5, rounded up = 2 WRU.
  ASSERT_TRUE(Write([&](Connection& c) {
                return LogTable().PutIfAbsent(c, SizedItem(1, 1536), &meter);
              }).ok());
  EXPECT_EQ(meter.write_units, 2);
  EXPECT_EQ(meter.read_units, 0);
  EXPECT_EQ(meter.by_table["log"].second, 2);
}

TEST_P(TableTest, TableTotalsAccumulateEveryCharge) {
  // The tables are process-wide statics shared by the tests: compare differences.
  double reads_before = LogTable().total_read_units();
  double writes_before = LogTable().total_write_units();
  ASSERT_OK(PutLog(SizedItem(1, 1536)));   // 2 WRU
  ASSERT_OK(db_->Read([](Connection& c) {  // 0.5 RRU
    return LogTable().Get(c, Key{{"k"}, {1}}, Consistency::kEventual, nullptr).status();
  }));
  EXPECT_EQ(LogTable().total_write_units() - writes_before, 2);
  EXPECT_EQ(LogTable().total_read_units() - reads_before, 0.5);
}

TEST_P(TableTest, TheSamePutInATransactionCostsFour) {
  UnitMeter meter;
  // ceil(1536 / 1024) = 2 WRU, doubled in a transaction = 4.
  ASSERT_TRUE(Write([&](Connection& c) {
                return TransactWrite(
                    c, {TransactItem::PutIfAbsent(LogTable(), SizedItem(1, 1536))},
                    &meter);
              }).ok());
  EXPECT_EQ(meter.write_units, 4);
}

TEST_P(TableTest, FailedConditionalPutStillCharges) {
  ASSERT_OK(PutLog(SizedItem(1, 1536)));
  UnitMeter meter;
  // Fast path: ceil(1536 / 1024) = 2 WRU for the attempted item, even though it lost.
  Status lost = Write([&](Connection& c) {
    return LogTable().PutIfAbsent(c, SizedItem(1, 1536), &meter);
  });
  ASSERT_TRUE(lost.IsConditionFailed());
  EXPECT_EQ(meter.write_units, 2);
  // General path: the larger of old (1536) and new (100) = ceil(1536 / 1024) = 2 WRU.
  lost = PutLog(SizedItem(1, 100), {Condition::Equals("counter", 1)}, &meter);
  ASSERT_TRUE(lost.IsConditionFailed());
  EXPECT_EQ(meter.write_units, 4);
  // A failed transaction: 2 WRU for the item, doubled = 4 more.
  lost = Write([&](Connection& c) {
    return TransactWrite(c, {TransactItem::PutIfAbsent(LogTable(), SizedItem(1, 1536))},
                         &meter);
  });
  ASSERT_TRUE(lost.IsConditionFailed());
  EXPECT_EQ(meter.write_units, 8);
}

TEST_P(TableTest, QueryOfTenOneKilobyteItemsCostsThreeOrOneAndAHalf) {
  ASSERT_TRUE(Write([](Connection& c) {
                for (int n = 0; n < 10; ++n) {
                  RETURN_IF_ERROR(LogTable().PutIfAbsent(c, SizedItem(n, 1024), nullptr));
                }
                return Status::OK();
              }).ok());
  QueryRequest q;
  q.partition = {"k"};
  // 10 x 1024 = 10240 bytes summed, then rounded up: ceil(10240 / 4096) = 3 RRU.
  UnitMeter strong;
  q.consistency = Consistency::kStrong;
  ASSERT_TRUE(Write([&](Connection& c) {
                ASSIGN_OR_RETURN(QueryResult r, LogTable().Query(c, q, &strong));
                EXPECT_EQ(r.items.size(), 10u);
                return Status::OK();
              }).ok());
  EXPECT_EQ(strong.read_units, 3);
  // Eventually consistent: half, 1.5 RRU.
  UnitMeter eventual;
  q.consistency = Consistency::kEventual;
  ASSERT_OK(db_->Read(
      [&](Connection& c) { return LogTable().Query(c, q, &eventual).status(); }));
  EXPECT_EQ(eventual.read_units, 1.5);
  // Rounding per item would have given 10 x 1 = 10; the sum is what DynamoDB charges.

  // An empty result still costs the minimum: 1 strong, 0.5 eventual.
  UnitMeter empty;
  q.partition = {"nobody"};
  ASSERT_OK(
      db_->Read([&](Connection& c) { return LogTable().Query(c, q, &empty).status(); }));
  EXPECT_EQ(empty.read_units, 0.5);
}

TEST_P(TableTest, GetOfFiveKilobytesCostsTwoOrOne) {
  ASSERT_OK(PutLog(SizedItem(1, 5120)));
  // ceil(5120 / 4096) = 2 RRU strongly consistent, half = 1 eventually consistent.
  UnitMeter strong, eventual, missing;
  ASSERT_OK(Write([&](Connection& c) {
    return LogTable().Get(c, Key{{"k"}, {1}}, Consistency::kStrong, &strong).status();
  }));
  ASSERT_TRUE(db_->Read([&](Connection& c) {
                   RETURN_IF_ERROR(
                       LogTable()
                           .Get(c, Key{{"k"}, {1}}, Consistency::kEventual, &eventual)
                           .status());
                   return LogTable()
                       .Get(c, Key{{"k"}, {2}}, Consistency::kEventual, &missing)
                       .status();
                 })
                  .ok());
  EXPECT_EQ(strong.read_units, 2);
  EXPECT_EQ(eventual.read_units, 1);
  EXPECT_EQ(missing.read_units, 0.5);  // an absent item still costs the minimum
}

TEST_P(TableTest, UpdateAndDeleteChargeByTheLargerItem) {
  ASSERT_OK(PutLog(SizedItem(1, 3000)));
  UnitMeter meter;
  // Shrinking a 3000-byte item to 6 + 1 + 10 = 17 bytes: max(3000, 17) -> ceil(3000/1024)
  // = 3 WRU.
  ASSERT_OK(Write([&](Connection& c) {
    UpdateRequest u;
    u.key = Key{{"k"}, {1}};
    u.set = {{"body", std::string(10, 'y')}};
    return LogTable().Update(c, u, &meter).status();
  }));
  EXPECT_EQ(meter.write_units, 3);
  // Deleting the 17-byte item: 1 WRU (the minimum); deleting nothing: 1 WRU too.
  ASSERT_TRUE(Write([&](Connection& c) {
                RETURN_IF_ERROR(LogTable().Delete(c, Key{{"k"}, {1}}, {}, &meter));
                return LogTable().Delete(c, Key{{"k"}, {1}}, {}, &meter);
              }).ok());
  EXPECT_EQ(meter.write_units, 5);
}

}  // namespace
}  // namespace sheetlog
