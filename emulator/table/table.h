// emulator/table: DynamoDB's item operations over SQLite tables — exactly the ones the
// seeds use: conditional put (put-if-absent), get, query by partition key with a
// sort-key range, direction, limit and paging, conditional update, atomic ADD, delete,
// and all-or-nothing transact-write. Every call reports the request units DynamoDB
// would charge for it (seed 001's rules; see request_units.h).
//
// A Table describes an existing SQL table (created by schema/ migrations): which columns
// form the partition key and the sort key, and the short DynamoDB attribute name of
// every column (seed 001 stores attributes under one-letter names to keep items small;
// sizes are computed with those names).
//
// Operations take a Connection that is already inside a transaction: Database::Write
// for writes and strongly consistent reads, Database::Read for eventually consistent
// reads. A failed operation changes nothing (each write runs in its own SAVEPOINT).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "emulator/sqlite/database.h"
#include "emulator/status.h"
#include "emulator/table/request_units.h"

namespace sheetlog {

// A DynamoDB attribute value: NULL, N (integer or decimal), S, B, or BOOL.
class Value {
 public:
  enum class Type { kNull, kInt, kDouble, kString, kBytes, kBool };

  Value() = default;
  Value(int64_t v) : v_(v) {}  // NOLINT: implicit conversions keep call sites short
  Value(int v) : v_(static_cast<int64_t>(v)) {}   // NOLINT
  Value(double v) : v_(v) {}                      // NOLINT
  Value(bool v) : v_(v) {}                        // NOLINT
  Value(std::string v) : v_(std::move(v)) {}      // NOLINT
  Value(const char* v) : v_(std::string(v)) {}    // NOLINT
  static Value Bytes(std::string bytes);
  static Value Null() { return Value(); }

  Type type() const;
  bool is_null() const { return type() == Type::kNull; }
  // REQUIRES: the matching type (AsInt also accepts kBool).
  int64_t AsInt() const;
  double AsDouble() const;  // kInt or kDouble
  bool AsBool() const;
  const std::string& AsString() const;  // kString or kBytes

  // Size in bytes by DynamoDB's rules (see request_units.h).
  int64_t DynamoSize() const;

  bool operator==(const Value& other) const;
  bool operator<(const Value& other) const;  // same-type ordering for conditions
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

struct TableSchema {
  std::string table;                       // SQL table name
  std::vector<std::string> partition_key;  // columns forming the partition key
  std::vector<std::string> sort_key;       // columns forming the sort key (a tuple)
  std::vector<Attribute> attributes;       // every column, keys included
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

  static Condition ItemExists() { return {Op::kItemExists, "", {}}; }
  static Condition ItemNotExists() { return {Op::kItemNotExists, "", {}}; }
  static Condition Exists(std::string a) { return {Op::kAttributeExists, std::move(a), {}}; }
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

enum class Consistency { kEventual, kStrong };

struct QueryRequest {
  KeyValues partition;
  // Inclusive bounds on the sort key tuple; either may be absent.
  std::optional<KeyValues> sort_from;
  std::optional<KeyValues> sort_to;
  bool forward = true;  // ScanIndexForward
  // Most items to return; 0 = no count limit. Pages also end at 1 MB of items, as on
  // DynamoDB.
  int limit = 0;
  // The sort key of the last item of the previous page (its last_evaluated).
  std::optional<KeyValues> exclusive_start;
  Consistency consistency = Consistency::kEventual;
};

struct QueryResult {
  std::vector<Item> items;
  // Set when more items may follow: pass as exclusive_start to continue.
  std::optional<KeyValues> last_evaluated;
};

struct UpdateRequest {
  Key key;
  std::map<std::string, Value> set;         // SET attr = value
  std::vector<std::string> remove;          // REMOVE attr
  std::map<std::string, int64_t> add;       // ADD attr delta (absent counts as 0)
  std::vector<Condition> conditions;        // all must hold, else ConditionFailed
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

class Table {
 public:
  explicit Table(TableSchema schema);

  const TableSchema& schema() const { return schema_; }
  const std::string& name() const { return schema_.table; }

  // PutItem: writes `item` (must hold every key column) if all `conditions` hold.
  // Fails with ConditionFailed (naming the condition) and changes nothing otherwise.
  // Write units are charged even when the condition fails, as on DynamoDB.
  Status Put(Connection& conn, const Item& item, const std::vector<Condition>& conditions,
             UnitMeter* meter) const;
  // Put with attribute_not_exists(sk): the seed's conditional append.
  Status PutIfAbsent(Connection& conn, const Item& item, UnitMeter* meter) const {
    return Put(conn, item, {Condition::ItemNotExists()}, meter);
  }

  // GetItem. nullopt if absent.
  Result<std::optional<Item>> Get(Connection& conn, const Key& key, Consistency consistency,
                                  UnitMeter* meter) const;

  // Query: items of one partition in sort-key order (or reverse), bounded, paged.
  Result<QueryResult> Query(Connection& conn, const QueryRequest& request,
                            UnitMeter* meter) const;

  // Scan: every item in primary-key order, after `exclusive_start` (a full key: partition
  // values then sort values), at most `limit` (0 = no limit; pages also end at 1 MB).
  // Read units as for Query.
  Result<QueryResult> Scan(Connection& conn, const std::optional<KeyValues>& exclusive_start,
                           int limit, Consistency consistency, UnitMeter* meter) const;

  // UpdateItem with ReturnValues=ALL_NEW.
  Result<Item> Update(Connection& conn, const UpdateRequest& request, UnitMeter* meter) const;

  // UpdateItem "ADD attr delta" (creating the item if missing) plus optional SETs;
  // returns the attribute's new value. Two concurrent callers never see the same value:
  // the basis of seed 002's duplicate detection.
  Result<int64_t> Add(Connection& conn, const Key& key, const std::string& attribute,
                      int64_t delta, const std::map<std::string, Value>& set,
                      UnitMeter* meter) const;

  // DeleteItem if all conditions hold. Deleting a missing item is OK (no conditions).
  Status Delete(Connection& conn, const Key& key, const std::vector<Condition>& conditions,
                UnitMeter* meter) const;

  // Size of `item` in bytes by DynamoDB's rules, with the schema's attribute names.
  int64_t ItemSize(const Item& item) const;

  // Units consumed through this table since start (for /metrics and cost).
  double total_read_units() const { return total_read_units_.load(); }
  double total_write_units() const { return total_write_units_.load(); }

 private:
  friend Status TransactWrite(Connection&, const std::vector<TransactItem>&, UnitMeter*);
  void Charge(UnitMeter* meter, double read_units, double write_units) const;

  TableSchema schema_;
  mutable std::atomic<double> total_read_units_{0};
  mutable std::atomic<double> total_write_units_{0};
};

// TransactWriteItems: every item commits or none does. A failed condition returns
// ConditionFailed whose message names the item's index, table and condition, e.g.
// "transaction cancelled: item 1 (segment): attribute_not_exists(sk) failed".
// Charged at twice the write units of the items, as on DynamoDB.
Status TransactWrite(Connection& conn, const std::vector<TransactItem>& items,
                     UnitMeter* meter);

}  // namespace sheetlog
