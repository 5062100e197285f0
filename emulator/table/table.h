// emulator/table: DynamoDB's item operations over SQL tables — exactly the ones the
// seeds use: conditional put (put-if-absent), get, query by partition key with a
// sort-key range, direction, limit and paging (of the table or a secondary index),
// conditional update, atomic ADD, delete, and all-or-nothing transact-write. Every call reports the request units DynamoDB
// would charge for it (seed 001's rules; see request_units.h).
//
// A Table describes an existing SQL table (created by migrations): which columns form
// the partition key and the sort key, and the short DynamoDB attribute name of every
// column (sizes are computed with those names). Operations take a Connection already
// inside a transaction: Transactions::Write for writes and strongly consistent reads,
// Transactions::Read for eventually consistent reads, on either backend. A failed
// operation changes nothing, and a condition is judged on an item that cannot change
// before the write (TransactWrite runs in its own nested SAVEPOINT).
//
// Values: an absent attribute is a NULL column (setting an attribute to Null() removes
// it; returned Items never contain kNull). A bool reads back as kInt (AsBool() accepts
// kInt; conditions compare kBool with kInt as 0/1); on SQLite column affinity applies
// too (3.0 written to an INTEGER column reads back as kInt 3). PostgreSQL's text holds
// no NUL byte: a kString with one is InvalidArgument there (bytes belong in kBytes).
// How the statements are built and run, and each value's SQL type: docs/cluster.md
// "The seam: one narrow `Connection`, one SQL text per statement".
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "emulator/env/mutex.h"
#include "emulator/status.h"
#include "emulator/table/request_units.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Connection;  // connection.h: a backend's transaction in progress
class SqlRow;      // connection.h: a row of a statement's result

// Which SQL a backend speaks (Connection::dialect).
enum class SqlDialect { kSqlite, kPostgres };

// A DynamoDB attribute value: NULL, N (integer or decimal), S, B, or BOOL.
class Value {
 public:
  enum class Type { kNull, kInt, kDouble, kString, kBytes, kBool };

  Value() = default;
  Value(int64_t v) : v_(v) {}  // NOLINT: implicit conversions keep call sites short
  Value(int v) : v_(static_cast<int64_t>(v)) {}  // NOLINT
  Value(double v) : v_(v) {}                     // NOLINT
  Value(bool v) : v_(v) {}                       // NOLINT
  Value(std::string v) : v_(std::move(v)) {}     // NOLINT
  Value(const char* v) : v_(std::string(v)) {}   // NOLINT
  static Value Bytes(std::string bytes);
  static Value Null() { return Value(); }

  Type type() const;
  bool is_null() const { return type() == Type::kNull; }
  // REQUIRES: the matching type (AsInt also accepts kBool; AsBool also accepts kInt,
  // since bools read back from SQLite as integers). A mismatch asserts in debug builds
  // and returns 0 / false / "" otherwise.
  int64_t AsInt() const;
  double AsDouble() const;  // kInt or kDouble
  bool AsBool() const;
  const std::string& AsString() const;  // kString or kBytes

  // Size in bytes by DynamoDB's rules (see request_units.h). Null and bool: 1.
  int64_t DynamoSize() const;

  // DynamoDB comparison: numbers (kInt, kDouble, and kBool as 0/1) compare by value,
  // strings and bytes bytewise; values of different kinds are not comparable
  // (nullopt). Returns <0, 0 or >0.
  static std::optional<int> Compare(const Value& a, const Value& b);

  // Equal if comparable and Compare() == 0 (so Value(1) == Value(1.0)); two nulls are
  // equal.
  bool operator==(const Value& other) const;
  // A total order for containers: by kind (null, number, string, bytes), then Compare.
  bool operator<(const Value& other) const;
  // 3, 1.5, "text", b"6869" (hex), true, NULL.
  std::string DebugString() const;

 private:
  struct BytesTag {
    std::string bytes;
    bool operator==(const BytesTag& o) const { return bytes == o.bytes; }
  };
  std::variant<std::monostate, int64_t, double, std::string, BytesTag, bool> v_;
};

// column name -> value. A column that is absent (or NULL) is "attribute not present".
using Item = std::map<std::string, Value>;

struct Attribute {
  std::string column;       // SQL column
  std::string dynamo_name;  // attribute name on DynamoDB, used for item sizes
};

// A global secondary index: the table's items keyed by other columns, for Query
// (QueryRequest::index). Here it is a UNIQUE SQL index over (partition_key, sort_key)
// that the migrations create, on columns that are NOT NULL, so an index partition is
// ordered by its sort key alone and pages continue from its sort key values. As on
// DynamoDB an index is read eventually consistent only; unlike DynamoDB's it is
// written in the writer's transaction, so a read of it sees every commit before it.
struct SecondaryIndex {
  std::string name;                        // the SQL index's name
  std::vector<std::string> partition_key;  // columns of the table
  std::vector<std::string> sort_key;
};

struct TableSchema {
  std::string table;                       // SQL table name
  std::vector<std::string> partition_key;  // columns forming the partition key
  std::vector<std::string> sort_key;       // columns forming the sort key (a tuple)
  std::vector<Attribute> attributes;       // every column, keys included
  std::vector<SecondaryIndex> indexes = {};
};

using KeyValues = std::vector<Value>;

struct Key {
  KeyValues partition;
  KeyValues sort;
};

// One term of a condition expression. Conditions in a list are ANDed.
struct Condition {
  enum class Op {
    kItemExists,          // attribute_exists(<sort key>)
    kItemNotExists,       // attribute_not_exists(<sort key>)
    kAttributeExists,     // attribute_exists(attr)
    kAttributeNotExists,  // attribute_not_exists(attr)
    kEquals,
    kNotEquals,
    kLess,
    kLessOrEqual,
    kGreater,
    kGreaterOrEqual,
  };
  Op op;
  std::string attribute;  // column; unused for kItemExists / kItemNotExists
  Value value;            // comparison operand

  // Evaluated against the current item (nullopt if absent), as DynamoDB does: on an
  // absent item or attribute, attribute_exists fails, attribute_not_exists holds, `<>`
  // holds (missing is "not equal"), and =, <, <=, >, >= fail. Values of different kinds
  // are not equal and never ordered.

  static Condition ItemExists() { return {Op::kItemExists, "", {}}; }
  static Condition ItemNotExists() { return {Op::kItemNotExists, "", {}}; }
  static Condition Exists(std::string a) {
    return {Op::kAttributeExists, std::move(a), {}};
  }
  static Condition NotExists(std::string a) {
    return {Op::kAttributeNotExists, std::move(a), {}};
  }
  static Condition Equals(std::string a, Value v) {
    return {Op::kEquals, std::move(a), std::move(v)};
  }
  static Condition Compare(Op op, std::string a, Value v) {
    return {op, std::move(a), std::move(v)};
  }
  // "attribute_not_exists(sk)", "increment = 3", ... for error messages.
  std::string ToString() const;
};

// True if every condition holds on `item` (nullopt = no item). On failure, *failed
// (if not null) points at the first condition that does not hold.
bool ConditionsHold(const std::vector<Condition>& conditions,
                    const std::optional<Item>& item, const Condition** failed);

enum class Consistency { kEventual, kStrong };

struct QueryRequest {
  // Empty: the table's own key. Else the name of one of its SecondaryIndexes, whose
  // key the partition, bounds and exclusive_start below are then values of
  // (InvalidArgument with Consistency::kStrong, as on DynamoDB).
  std::string index;
  KeyValues partition;
  // Inclusive bounds on the sort key tuple; either may be absent. A bound may be a
  // prefix of the sort key (e.g. {segment} of (segment, entry)): it then bounds those
  // leading columns only.
  std::optional<KeyValues> sort_from;
  std::optional<KeyValues> sort_to;
  bool forward = true;  // ScanIndexForward
  // Most items to return; 0 = no count limit. Pages also end at 1 MB of items, as on
  // DynamoDB.
  int limit = 0;
  // The sort key of the last item of the previous page (its last_evaluated): a full
  // sort key.
  std::optional<KeyValues> exclusive_start;
  Consistency consistency = Consistency::kEventual;
};

struct QueryResult {
  std::vector<Item> items;
  // Set when more items may follow: pass as exclusive_start to continue. As on
  // DynamoDB it is set whenever the page reached `limit` (even if nothing follows) or
  // was cut at 1 MB; it is the sort key of the last item (Scan: its full key).
  std::optional<KeyValues> last_evaluated;
};

struct UpdateRequest {
  Key key;
  std::map<std::string, Value> set;    // SET attr = value (Null() removes)
  std::vector<std::string> remove;     // REMOVE attr
  std::map<std::string, int64_t> add;  // ADD attr delta (absent counts as 0)
  // The conditions see the item as it was before this update. Key columns cannot be
  // updated, and one attribute may appear in only one of set / remove / add
  // (InvalidArgument otherwise, as DynamoDB's overlapping-paths error).
  std::vector<Condition> conditions;  // all must hold, else ConditionFailed
  // DynamoDB's UpdateItem creates a missing item; false adds an implicit
  // attribute_exists condition (update only).
  bool create_if_missing = true;
};

struct TransactItem {
  enum class Kind { kPut, kUpdate, kDelete, kConditionCheck };
  Kind kind;
  const class Table* table;
  Item item;                          // kPut
  UpdateRequest update;               // kUpdate
  Key key;                            // kDelete, kConditionCheck
  std::vector<Condition> conditions;  // kPut, kDelete, kConditionCheck

  static TransactItem Put(const Table& t, Item item, std::vector<Condition> c = {});
  static TransactItem PutIfAbsent(const Table& t, Item item);
  static TransactItem Update(const Table& t, UpdateRequest u);
  static TransactItem Delete(const Table& t, Key key, std::vector<Condition> c = {});
  static TransactItem Check(const Table& t, Key key, std::vector<Condition> c);
};

// Thread-safe: a Table holds no per-connection state, so one instance (usually a
// function-local static) serves every connection. Requires at most 64 attributes.
class Table {
 public:
  // A schema that names a key column missing from `attributes`, has no partition key,
  // repeats a column, or has more than 64 attributes makes every operation fail with
  // InvalidArgument.
  explicit Table(TableSchema schema);

  const TableSchema& schema() const { return schema_; }
  const std::string& name() const { return schema_.table; }

  // PutItem: writes `item` (must hold every key column) if all `conditions` hold,
  // replacing any existing item (columns missing from `item` take their SQL DEFAULT,
  // usually NULL). Fails with ConditionFailed ("put on <table>: <condition> failed")
  // and changes nothing otherwise. InvalidArgument for an unknown column, a missing
  // key, or a row the SQL schema refuses (NOT NULL, CHECK); a conflict on another
  // unique index is ConditionFailed. ResourceExhausted above 400 KB. Units: the larger of
  // the old and new item sizes, rounded up to 1 KB; charged even when the condition
  // fails, as on DynamoDB.
  Status Put(Connection& conn, const Item& item, const std::vector<Condition>& conditions,
             UnitMeter* meter) const;
  // Put with attribute_not_exists(sk): the seed's conditional append. One
  // INSERT ... ON CONFLICT DO NOTHING, no read; units by the new item's size.
  Status PutIfAbsent(Connection& conn, const Item& item, UnitMeter* meter) const {
    return Put(conn, item, {Condition::ItemNotExists()}, meter);
  }
  // PutIfAbsent of many items in one statement (group commit's conditional appends):
  // `written[i]` says whether items[i] was written; one whose key exists is left out,
  // its condition failed, and the others are written. Not a DynamoDB operation (there:
  // a PutItem each). An attribute some items hold and others lack is NULL in those
  // (REQUIRES: the table's columns default to NULL). Any other failure (an invalid
  // item, a conflict on another unique index, more than kMaxKeysPerStatement) fails
  // the call, and on PostgreSQL the transaction with it: callers run it inside a
  // savepoint. Units: each item's as PutIfAbsent's, charged to `meters[i]` (may be
  // null; `meters` is empty or as long as `items`).
  // Most items (PutAllIfAbsent) or partitions (QueryNewest) one statement takes: each
  // binds every key, and a statement's parameters are bounded on both backends.
  static constexpr size_t kMaxKeysPerStatement = 256;
  Result<std::vector<bool>> PutAllIfAbsent(Connection& conn,
                                           const std::vector<Item>& items,
                                           const std::vector<UnitMeter*>& meters) const;

  // GetItem. nullopt if absent. Units: the item size rounded up to 4 KB (an absent
  // item still costs the minimum), halved if eventually consistent.
  Result<std::optional<Item>> Get(Connection& conn, const Key& key,
                                  Consistency consistency, UnitMeter* meter) const;

  // Query: items of one partition of the table or of an index, in sort-key order (or
  // reverse), bounded, paged. Units: the sizes of the returned items summed, then rounded up to 4 KB (at least
  // one unit), halved if eventually consistent.
  Result<QueryResult> Query(Connection& conn, const QueryRequest& request,
                            UnitMeter* meter) const;

  // Query with limit 1 newest first (ScanIndexForward false), for many partitions in
  // one statement: newest[i] is the item of partitions[i] with the greatest sort key
  // (the one item, for a table without one), or nullopt. Not a DynamoDB operation
  // (there: a Query each); each is charged to `meters[i]` as that Query would be
  // (`meters` is empty or as long as `partitions`). InvalidArgument for a partition
  // given twice or more than kMaxKeysPerStatement of them.
  Result<std::vector<std::optional<Item>>> QueryNewest(
      Connection& conn, const std::vector<KeyValues>& partitions, Consistency consistency,
      const std::vector<UnitMeter*>& meters) const;

  // Scan: every item in primary-key order, after `exclusive_start` (a full key: partition
  // values then sort values), at most `limit` (0 = no limit; pages also end at 1 MB).
  // Read units as for Query.
  Result<QueryResult> Scan(Connection& conn,
                           const std::optional<KeyValues>& exclusive_start, int limit,
                           Consistency consistency, UnitMeter* meter) const;

  // UpdateItem with ReturnValues=ALL_NEW (the row as stored, after column affinity).
  // ConditionFailed ("update on <table>: <condition> failed") if a condition fails, or
  // if the item is missing and !create_if_missing (attribute_exists(sk)). Units: the
  // larger of the sizes before and after, rounded up to 1 KB; charged on failure too.
  Result<Item> Update(Connection& conn, const UpdateRequest& request,
                      UnitMeter* meter) const;

  // UpdateItem "ADD attr delta" (creating the item if missing) plus optional SETs;
  // returns the attribute's new value. Two concurrent callers never see the same value:
  // the basis of seed 002's duplicate detection.
  Result<int64_t> Add(Connection& conn, const Key& key, const std::string& attribute,
                      int64_t delta, const std::map<std::string, Value>& set,
                      UnitMeter* meter) const;

  // DeleteItem if all conditions hold. Deleting a missing item is OK (no conditions).
  // Units: the deleted (or existing) item's size rounded up to 1 KB, at least 1.
  Status Delete(Connection& conn, const Key& key,
                const std::vector<Condition>& conditions, UnitMeter* meter) const;
  // Deletes every item in one statement; returns how many. Not a DynamoDB operation
  // (there: a Scan and a DeleteItem per item, or the table deleted and created
  // again): an owner's part of the admin reset (App::Reset). Uncharged.
  Result<int64_t> DeleteAll(Connection& conn) const;

  // Size of `item` in bytes by DynamoDB's rules, with the schema's attribute names:
  // sum of (dynamo_name length + value size). A Null() value is an absent attribute
  // (a NULL column) and counts 0; an unknown column counts with its SQL name.
  int64_t ItemSize(const Item& item) const;

  // Units consumed through this table since start (for /metrics and cost).
  double total_read_units() const { return total_read_units_.load(); }
  double total_write_units() const { return total_write_units_.load(); }

 private:
  friend Status TransactWrite(Connection&, const std::vector<TransactItem>&, UnitMeter*);
  // Adds to `meter` (if not null) and to this table's running totals.
  void Charge(UnitMeter* meter, double read_units, double write_units) const;

  // The operations without charging: *write_units is set even when a condition fails.
  // A failed condition is ConditionFailed("<condition> failed"); callers add context.
  Status PutUncharged(Connection& conn, const Item& item,
                      const std::vector<Condition>& conditions,
                      double* write_units) const;
  Result<Item> UpdateUncharged(Connection& conn, const UpdateRequest& request,
                               double* write_units) const;
  // The item `request` makes of `current` (nullopt: absent), before the SQL types.
  Result<Item> Updated(const UpdateRequest& request,
                       const std::optional<Item>& current) const;
  Status DeleteUncharged(Connection& conn, const Key& key,
                         const std::vector<Condition>& conditions,
                         double* write_units) const;
  Status CheckUncharged(Connection& conn, const Key& key,
                        const std::vector<Condition>& conditions,
                        double* write_units) const;

  // Current item (nullopt if absent) and its size; no charge. `for_write`: see
  // LoadRow.
  Result<std::optional<Item>> Load(Connection& conn, const Key& key, bool for_write,
                                   int64_t* size) const;
  Status ValidateKey(const Key& key) const;
  Status ValidateItem(const Item& item) const;
  Status ValidateConditions(const std::vector<Condition>& conditions) const;
  Key KeyOf(const Item& item) const;
  int ColumnIndex(const std::string& column) const;  // -1 if unknown
  // The key a kQuery of `shape` reads by: the table's, or the index its shape names
  // (table_sql.h, kIndexShift).
  const std::vector<std::string>& QueryPartitionKey(uint64_t shape) const;
  const std::vector<std::string>& QuerySortKey(uint64_t shape) const;
  // A Query (`scan` false) or Scan page: the statement of the table_sql.h query
  // `shape`, with `binds` in order and `limit` if the shape has one.
  Result<QueryResult> RunPage(Connection& conn, bool scan, uint64_t shape,
                              const std::vector<const Value*>& binds, int limit,
                              Consistency consistency, UnitMeter* meter) const;

  // The statement shapes, each one statement of standard SQL that both backends run,
  // with `?1`, `?2`, ... bound in the order the row primitives pass their values.
  // `shape` is the column mask for inserts and updates, the table_sql.h query bits for
  // kQuery and kScan, 0 otherwise; `rows` is kInsertAllIfAbsent's row count (1
  // otherwise).
  enum class Sql {
    kGet,
    kGetForUpdate,  // kGet that locks the row (PostgreSQL; the same as kGet on SQLite)
    kDelete,        // RETURNING the row
    kInsertIfAbsent,
    kReplace,
    kInsertReturning,    // if absent, RETURNING the row
    kInsertAllIfAbsent,  // `rows` rows, RETURNING the key of each row written
    kQueryNewest,        // the newest item of each of `rows` partitions
    kUpdate,             // RETURNING the row
    kQuery,
    kScan
  };
  // The SQL of a shape in `dialect`, built once per table and kept (table_sql.cc).
  const std::string& SqlFor(SqlDialect dialect, Sql kind, uint64_t shape,
                            size_t rows = 1) const;
  std::string BuildSql(SqlDialect dialect, Sql kind, uint64_t shape, size_t rows) const;

  // The row primitives (table_rows.cc), each one statement of SqlFor run through
  // Connection::RunSql in the connection's transaction. Rows come back as Items with
  // every non-NULL column (RowItem); `mask` selects columns by attribute index (bit i =
  // attribute i of the schema). A primitive that fails changes nothing.
  //
  // The row with `key`, or nullopt. `for_write`: the caller will judge conditions on it
  // and write: the row must stay as read until the transaction ends (PostgreSQL locks
  // it, FOR UPDATE; SQLite's single writer needs nothing).
  Result<std::optional<Item>> LoadRow(Connection& conn, const Key& key,
                                      bool for_write) const;
  // Inserts the masked columns of `item` unless a row with its key exists: false then,
  // and nothing is written (the conditional append).
  Result<bool> InsertIfAbsent(Connection& conn, uint64_t mask, const Item& item) const;
  // Inserts `item`, or replaces the whole row with its key (columns outside `mask` take
  // their SQL DEFAULT).
  Status Replace(Connection& conn, uint64_t mask, const Item& item) const;
  // InsertIfAbsent returning the row as stored; nullopt if a row with the key exists.
  Result<std::optional<Item>> InsertReturning(Connection& conn, uint64_t mask,
                                              const Item& item) const;
  // Sets the masked columns to `values`' (absent = NULL) on the row with `key`,
  // returning the row as stored. NotFound if there is no such row.
  Result<Item> UpdateReturning(Connection& conn, uint64_t mask, const Item& values,
                               const Key& key) const;
  // Deletes the row with `key`, returning it (nullopt if there was none).
  Result<std::optional<Item>> DeleteReturning(Connection& conn, const Key& key) const;
  // The first row `kind` returns (any others are dropped), or nullopt.
  Result<std::optional<Item>> FirstRow(Connection& conn, Sql kind, uint64_t shape,
                                       const std::vector<const Value*>& params) const;
  // A row of every column, in schema order, as an Item (NULL columns left out).
  Item RowItem(const SqlRow& row) const;

  TableSchema schema_;
  Status schema_status_;
  std::map<std::string, int> column_index_;
  std::vector<int> key_columns_;  // partition key then sort key, as attribute indexes
  std::string select_list_;       // every column, quoted, in schema order
  mutable Mutex sql_mu_;
  mutable std::map<std::tuple<int, int, uint64_t, size_t>, std::string> sql_
      GUARDED_BY(sql_mu_);
  mutable std::atomic<double> total_read_units_{0};
  mutable std::atomic<double> total_write_units_{0};
};

// TransactWriteItems: every item commits or none does. A failed condition returns
// ConditionFailed whose message names the item's index, table and condition, e.g.
// "transaction cancelled: item 1 (segment): attribute_not_exists(sk) failed".
// Charged at twice the write units of the items, as on DynamoDB (a condition check
// counts as a write of the checked item); a cancelled transaction is charged for the
// items up to and including the one that failed. The caller's transaction continues
// after a failure: the items run inside a nested SAVEPOINT that is rolled back.
// InvalidArgument (nothing charged) for more than 100 items, two operations on the
// same item, or an invalid item.
Status TransactWrite(Connection& conn, const std::vector<TransactItem>& items,
                     UnitMeter* meter);

}  // namespace sheetlog
