// Table: the item operations (table.h) on the SQL of table_sql.cc.
#include "emulator/table/table.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "emulator/table/connection.h"
#include "emulator/table/table_sql.h"

namespace sheetlog {

using namespace table_sql;  // NOLINT: the helpers of this module's own files

// ---------------------------------------------------------------------------
// Table: helpers

int64_t Table::ItemSize(const Item& item) const {
  int64_t size = 0;
  for (const auto& [column, value] : item) {
    if (value.is_null()) continue;  // NULL = attribute absent: not stored
    int index = ColumnIndex(column);
    size += index >= 0
                ? static_cast<int64_t>(schema_.attributes[index].dynamo_name.size())
                : static_cast<int64_t>(column.size());
    size += value.DynamoSize();
  }
  return size;
}

Status Table::ValidateKey(const Key& key) const {
  RETURN_IF_ERROR(schema_status_);
  if (key.partition.size() != schema_.partition_key.size() ||
      key.sort.size() != schema_.sort_key.size()) {
    return InvalidArgument("table " + name() + ": key needs " +
                           std::to_string(schema_.partition_key.size()) +
                           " partition and " + std::to_string(schema_.sort_key.size()) +
                           " sort values");
  }
  for (const auto* values : {&key.partition, &key.sort}) {
    for (const Value& v : *values) {
      if (v.is_null()) return InvalidArgument("table " + name() + ": null key value");
    }
  }
  return Status::OK();
}

Status Table::ValidateItem(const Item& item) const {
  RETURN_IF_ERROR(schema_status_);
  for (const auto& [column, value] : item) {
    if (ColumnIndex(column) < 0) {
      return InvalidArgument("table " + name() + " has no attribute " + column);
    }
  }
  for (int index : key_columns_) {
    const std::string& column = schema_.attributes[index].column;
    auto it = item.find(column);
    if (it == item.end() || it->second.is_null()) {
      return InvalidArgument("table " + name() + ": item lacks key attribute " + column);
    }
  }
  int64_t size = ItemSize(item);
  if (size > kMaxItemBytes) {
    return ResourceExhausted("table " + name() + ": item of " + std::to_string(size) +
                             " bytes exceeds DynamoDB's 400 KB item limit");
  }
  return Status::OK();
}

Status Table::ValidateConditions(const std::vector<Condition>& conditions) const {
  for (const Condition& c : conditions) {
    if (c.op == Condition::Op::kItemExists || c.op == Condition::Op::kItemNotExists)
      continue;
    if (ColumnIndex(c.attribute) < 0) {
      return InvalidArgument("table " + name() + ": condition " + c.ToString() +
                             " names an unknown attribute");
    }
  }
  return Status::OK();
}

Key Table::KeyOf(const Item& item) const {
  Key key;
  for (const std::string& c : schema_.partition_key) key.partition.push_back(item.at(c));
  for (const std::string& c : schema_.sort_key) key.sort.push_back(item.at(c));
  return key;
}

Result<std::optional<Item>> Table::Load(Connection& conn, const Key& key, bool for_write,
                                        int64_t* size) const {
  *size = 0;
  ASSIGN_OR_RETURN(std::optional<Item> item, LoadRow(conn, key, for_write));
  if (item) *size = ItemSize(*item);
  return item;
}

void Table::Charge(UnitMeter* meter, double read_units, double write_units) const {
  if (read_units == 0 && write_units == 0) return;
  if (meter != nullptr) meter->Add(name(), read_units, write_units);
  total_read_units_.fetch_add(read_units);
  total_write_units_.fetch_add(write_units);
}

// ---------------------------------------------------------------------------
// Table: writes

namespace {

// A write judged on an absent item inserts only if the item is still absent; another
// writer (another process, on PostgreSQL) may have created it since, and then the
// item is loaded and judged again, this many times at most.
constexpr int kJudgeRounds = 16;

Status TooMuchContention(const std::string& table) {
  return Aborted("table " + table + ": the item changed under " +
                 std::to_string(kJudgeRounds) + " attempts to write it; try again");
}

}  // namespace

Status Table::PutUncharged(Connection& conn, const Item& item,
                           const std::vector<Condition>& conditions,
                           double* write_units) const {
  *write_units = 0;
  RETURN_IF_ERROR(ValidateItem(item));
  RETURN_IF_ERROR(ValidateConditions(conditions));
  const int64_t new_size = ItemSize(item);
  const uint64_t mask = PresentMask(item, column_index_);

  if (conditions.size() == 1 && conditions[0].op == Condition::Op::kItemNotExists) {
    // The seed's append: one statement, no read. A conflict on the primary key does
    // nothing; any other constraint (a unique index) fails the statement.
    *write_units = WriteUnitsForItem(new_size);
    ASSIGN_OR_RETURN(bool inserted, InsertIfAbsent(conn, mask, item));
    if (!inserted) return ConditionFailedStatus(conditions[0]);
    return Status::OK();
  }

  const Key key = KeyOf(item);
  for (int round = 0; round < kJudgeRounds; ++round) {
    int64_t old_size = 0;
    ASSIGN_OR_RETURN(std::optional<Item> current,
                     Load(conn, key, /*for_write=*/true, &old_size));
    *write_units = WriteUnitsForItem(std::max(old_size, new_size));
    const Condition* failed = nullptr;
    if (!ConditionsHold(conditions, current, &failed))
      return ConditionFailedStatus(*failed);
    if (current) return Replace(conn, mask, item);  // the row is held
    ASSIGN_OR_RETURN(bool inserted, InsertIfAbsent(conn, mask, item));
    if (inserted) return Status::OK();
  }
  return TooMuchContention(name());
}

Result<Item> Table::UpdateUncharged(Connection& conn, const UpdateRequest& request,
                                    double* write_units) const {
  *write_units = 0;
  RETURN_IF_ERROR(ValidateKey(request.key));
  RETURN_IF_ERROR(ValidateConditions(request.conditions));

  // Validate every touched attribute before reading anything.
  uint64_t touched = 0;
  auto touch = [&](const std::string& column) -> Status {
    int index = ColumnIndex(column);
    if (index < 0)
      return InvalidArgument("table " + name() + " has no attribute " + column);
    if (std::find(key_columns_.begin(), key_columns_.end(), index) !=
        key_columns_.end()) {
      return InvalidArgument("table " + name() + ": cannot update key attribute " +
                             column);
    }
    uint64_t bit = uint64_t{1} << index;
    if (touched & bit) {
      return InvalidArgument("table " + name() + ": attribute " + column +
                             " appears twice in one update");
    }
    touched |= bit;
    return Status::OK();
  };
  for (const auto& [column, value] : request.set) RETURN_IF_ERROR(touch(column));
  for (const std::string& column : request.remove) RETURN_IF_ERROR(touch(column));
  for (const auto& [column, delta] : request.add) RETURN_IF_ERROR(touch(column));

  for (int round = 0; round < kJudgeRounds; ++round) {
    int64_t old_size = 0;
    ASSIGN_OR_RETURN(std::optional<Item> current,
                     Load(conn, request.key, /*for_write=*/true, &old_size));
    ASSIGN_OR_RETURN(Item next, Updated(request, current));
    const int64_t new_size = ItemSize(next);
    if (new_size > kMaxItemBytes) {
      return ResourceExhausted("table " + name() + ": item of " +
                               std::to_string(new_size) +
                               " bytes exceeds DynamoDB's 400 KB item limit");
    }

    *write_units = WriteUnitsForItem(std::max(old_size, new_size));
    if (!current && !request.create_if_missing) {
      return ConditionFailedStatus(Condition::ItemExists());
    }
    const Condition* failed = nullptr;
    if (!ConditionsHold(request.conditions, current, &failed)) {
      return ConditionFailedStatus(*failed);
    }
    if (current && touched == 0) return std::move(*current);  // nothing to write

    std::optional<Item> stored;
    if (current) {  // the row is held: the update cannot miss it
      ASSIGN_OR_RETURN(stored, UpdateReturning(conn, touched, next, request.key));
    } else {
      ASSIGN_OR_RETURN(stored,
                       InsertReturning(conn, PresentMask(next, column_index_), next));
      if (!stored) continue;  // created meanwhile by another writer: judge again
    }
    *write_units = WriteUnitsForItem(std::max(old_size, ItemSize(*stored)));
    return std::move(*stored);
  }
  return TooMuchContention(name());
}

Result<Item> Table::Updated(const UpdateRequest& request,
                            const std::optional<Item>& current) const {
  // The item as it would be after the update (ALL_NEW before the backend's types).
  Item next;
  if (current) {
    next = *current;
  } else {
    for (size_t i = 0; i < schema_.partition_key.size(); ++i) {
      next[schema_.partition_key[i]] = request.key.partition[i];
    }
    for (size_t i = 0; i < schema_.sort_key.size(); ++i) {
      next[schema_.sort_key[i]] = request.key.sort[i];
    }
  }
  for (const auto& [column, value] : request.set) {
    if (value.is_null()) {
      next.erase(column);
    } else {
      next[column] = value;
    }
  }
  for (const std::string& column : request.remove) next.erase(column);
  for (const auto& [column, delta] : request.add) {
    auto it = next.find(column);
    if (it == next.end()) {
      next[column] = Value(delta);
    } else if (it->second.type() == Value::Type::kInt) {
      int64_t sum = 0;
      if (__builtin_add_overflow(it->second.AsInt(), delta, &sum)) {
        return OutOfRange("table " + name() + ": ADD " + column + " overflows int64");
      }
      it->second = Value(sum);
    } else if (it->second.type() == Value::Type::kDouble) {
      it->second = Value(it->second.AsDouble() + static_cast<double>(delta));
    } else {
      return InvalidArgument("table " + name() + ": ADD on " + column + ", which holds " +
                             it->second.DebugString() + ", not a number");
    }
  }
  return next;
}

Status Table::DeleteUncharged(Connection& conn, const Key& key,
                              const std::vector<Condition>& conditions,
                              double* write_units) const {
  *write_units = 0;
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(ValidateConditions(conditions));
  if (!conditions.empty()) {
    int64_t old_size = 0;
    ASSIGN_OR_RETURN(std::optional<Item> current,
                     Load(conn, key, /*for_write=*/true, &old_size));
    *write_units = WriteUnitsForItem(old_size);
    const Condition* failed = nullptr;
    if (!ConditionsHold(conditions, current, &failed))
      return ConditionFailedStatus(*failed);
    if (!current) return Status::OK();
  }
  ASSIGN_OR_RETURN(std::optional<Item> deleted, DeleteReturning(conn, key));
  *write_units = WriteUnitsForItem(deleted ? ItemSize(*deleted) : 0);
  return Status::OK();
}

Status Table::CheckUncharged(Connection& conn, const Key& key,
                             const std::vector<Condition>& conditions,
                             double* write_units) const {
  *write_units = 0;
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(ValidateConditions(conditions));
  int64_t size = 0;
  ASSIGN_OR_RETURN(std::optional<Item> current,
                   Load(conn, key, /*for_write=*/true, &size));
  *write_units = WriteUnitsForItem(size);
  const Condition* failed = nullptr;
  if (!ConditionsHold(conditions, current, &failed))
    return ConditionFailedStatus(*failed);
  return Status::OK();
}

Status Table::Put(Connection& conn, const Item& item,
                  const std::vector<Condition>& conditions, UnitMeter* meter) const {
  double units = 0;
  Status status = PutUncharged(conn, item, conditions, &units);
  Charge(meter, 0, units);
  return status.Annotate("put on " + name());
}

namespace {

// The arguments every many-keys-in-one-statement call shares: `count` keys (items or
// partitions, each a `what`) and `meters` meters, none or one per key.
Status CheckKeysPerStatement(size_t count, size_t meters, const std::string& what) {
  if (meters != 0 && meters != count) {
    return InvalidArgument("one meter per " + what + ", or none");
  }
  if (count > Table::kMaxKeysPerStatement) {
    return InvalidArgument("more than " + std::to_string(Table::kMaxKeysPerStatement) +
                           " " + what + "s in one statement");
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<bool>> Table::PutAllIfAbsent(
    Connection& conn, const std::vector<Item>& items,
    const std::vector<UnitMeter*>& meters) const {
  auto fail = [&](Status status) { return status.Annotate("put all on " + name()); };
  RETURN_IF_ERROR(fail(CheckKeysPerStatement(items.size(), meters.size(), "item")));
  std::vector<bool> written(items.size(), false);
  if (items.empty()) return written;
  // Each item's position by its key (partition then sort values), to read back which
  // rows RETURNING names; and the columns any of them holds.
  std::map<std::vector<Value>, size_t> position;
  uint64_t mask = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    RETURN_IF_ERROR(fail(ValidateItem(items[i])));
    mask |= PresentMask(items[i], column_index_);
    Key key = KeyOf(items[i]);
    std::vector<Value> key_values = std::move(key.partition);
    key_values.insert(key_values.end(), key.sort.begin(), key.sort.end());
    if (!position.emplace(std::move(key_values), i).second) {
      return fail(InvalidArgument("two items with one key"));
    }
  }
  std::vector<const Value*> binds;
  for (const Item& item : items) {
    std::vector<const Value*> row = MaskedBinds(mask, schema_.attributes, item, nullptr);
    binds.insert(binds.end(), row.begin(), row.end());
  }
  std::vector<Value> key_values(key_columns_.size());
  Result<int64_t> ran =
      conn.RunSql(SqlFor(conn.dialect(), Sql::kInsertAllIfAbsent, mask, items.size()),
                  binds, [&](const SqlRow& row) {
                    for (size_t k = 0; k < key_columns_.size(); ++k) {
                      key_values[k] = row.ValueAt(static_cast<int>(k));
                    }
                    auto it = position.find(key_values);
                    if (it != position.end()) written[it->second] = true;
                    return true;
                  });
  // Charged as PutIfAbsent is, written or not.
  for (size_t i = 0; i < items.size() && !meters.empty(); ++i) {
    Charge(meters[i], 0, WriteUnitsForItem(ItemSize(items[i])));
  }
  RETURN_IF_ERROR(fail(ran.status()));
  return written;
}

Result<Item> Table::Update(Connection& conn, const UpdateRequest& request,
                           UnitMeter* meter) const {
  double units = 0;
  Result<Item> result = UpdateUncharged(conn, request, &units);
  Charge(meter, 0, units);
  if (!result.ok()) return result.status().Annotate("update on " + name());
  return result;
}

Result<int64_t> Table::Add(Connection& conn, const Key& key, const std::string& attribute,
                           int64_t delta, const std::map<std::string, Value>& set,
                           UnitMeter* meter) const {
  UpdateRequest request;
  request.key = key;
  request.set = set;
  request.add = {{attribute, delta}};
  ASSIGN_OR_RETURN(Item item, Update(conn, request, meter));
  auto it = item.find(attribute);
  if (it == item.end() || it->second.type() != Value::Type::kInt) {
    return Internal("add on " + name() + ": " + attribute +
                    " is not an integer after ADD");
  }
  return it->second.AsInt();
}

Status Table::Delete(Connection& conn, const Key& key,
                     const std::vector<Condition>& conditions, UnitMeter* meter) const {
  double units = 0;
  Status status = DeleteUncharged(conn, key, conditions, &units);
  Charge(meter, 0, units);
  return status.Annotate("delete on " + name());
}

Result<int64_t> Table::DeleteAll(Connection& conn) const {
  RETURN_IF_ERROR(schema_status_);
  Result<int64_t> deleted = conn.RunSql("DELETE FROM " + Quote(name()), {});
  if (!deleted.ok()) return deleted.status().Annotate("delete all on " + name());
  return deleted;
}

// ---------------------------------------------------------------------------
// Table: reads

Result<std::optional<Item>> Table::Get(Connection& conn, const Key& key,
                                       Consistency consistency, UnitMeter* meter) const {
  RETURN_IF_ERROR(ValidateKey(key).Annotate("get on " + name()));
  int64_t size = 0;
  Result<std::optional<Item>> item = Load(conn, key, /*for_write=*/false, &size);
  if (!item.ok()) return item.status().Annotate("get on " + name());
  Charge(meter, ReadUnitsForBytes(size, consistency == Consistency::kStrong), 0);
  return item;
}

Result<std::vector<std::optional<Item>>> Table::QueryNewest(
    Connection& conn, const std::vector<KeyValues>& partitions, Consistency consistency,
    const std::vector<UnitMeter*>& meters) const {
  auto fail = [&](Status status) { return status.Annotate("query newest on " + name()); };
  RETURN_IF_ERROR(fail(schema_status_));
  RETURN_IF_ERROR(
      fail(CheckKeysPerStatement(partitions.size(), meters.size(), "partition")));
  std::vector<std::optional<Item>> newest(partitions.size());
  if (partitions.empty()) return newest;
  std::map<KeyValues, size_t> position;
  std::vector<const Value*> binds;
  for (size_t i = 0; i < partitions.size(); ++i) {
    if (partitions[i].size() != schema_.partition_key.size()) {
      return fail(InvalidArgument("needs " +
                                  std::to_string(schema_.partition_key.size()) +
                                  " partition key values"));
    }
    if (!position.emplace(partitions[i], i).second) {
      return fail(InvalidArgument("a partition given twice"));
    }
    for (const Value& v : partitions[i]) binds.push_back(&v);
  }
  KeyValues partition(schema_.partition_key.size());
  Result<int64_t> ran =
      conn.RunSql(SqlFor(conn.dialect(), Sql::kQueryNewest, 0, partitions.size()), binds,
                  [&](const SqlRow& row) {
                    Item item = RowItem(row);
                    for (size_t k = 0; k < partition.size(); ++k) {
                      partition[k] = item.at(schema_.partition_key[k]);
                    }
                    auto it = position.find(partition);
                    if (it != position.end()) newest[it->second] = std::move(item);
                    return true;
                  });
  RETURN_IF_ERROR(fail(ran.status()));
  for (size_t i = 0; i < newest.size() && !meters.empty(); ++i) {
    // As a Query of its own: the item's size, at least one unit.
    Charge(meters[i],
           ReadUnitsForBytes(newest[i] ? ItemSize(*newest[i]) : 0,
                             consistency == Consistency::kStrong),
           0);
  }
  return newest;
}

Result<QueryResult> Table::RunPage(Connection& conn, bool scan, uint64_t shape,
                                   const std::vector<const Value*>& binds, int limit,
                                   Consistency consistency, UnitMeter* meter) const {
  QueryResult result;
  int64_t total = 0;
  bool cut = false;
  std::vector<const Value*> params = binds;
  const Value limit_value(static_cast<int64_t>(limit));
  if (shape & kHasLimit) params.push_back(&limit_value);
  const std::string& sql = SqlFor(conn.dialect(), scan ? Sql::kScan : Sql::kQuery, shape);
  auto page_row = [&](const SqlRow& row) {
    Item item = RowItem(row);
    int64_t size = ItemSize(item);
    // DynamoDB ends a page at 1 MB of item data; this page stops before the item that
    // would cross it (but always returns at least one item).
    if (!result.items.empty() && total + size > kMaxPageBytes) {
      cut = true;
      return false;
    }
    total += size;
    result.items.push_back(std::move(item));
    if (limit > 0 && static_cast<int>(result.items.size()) >= limit) {
      cut = true;
      return false;
    }
    return true;
  };
  RETURN_IF_ERROR(conn.RunSql(sql, params, page_row).status());
  if (cut && !result.items.empty()) {
    if (scan) {  // a full key: partition values then sort values
      Key last = KeyOf(result.items.back());
      last.partition.insert(last.partition.end(), last.sort.begin(), last.sort.end());
      result.last_evaluated = std::move(last.partition);
    } else {  // the sort key the query reads by (an index's NOT NULL columns)
      KeyValues last;
      for (const std::string& c : QuerySortKey(shape)) {
        last.push_back(result.items.back().at(c));
      }
      result.last_evaluated = std::move(last);
    }
  }
  Charge(meter, ReadUnitsForBytes(total, consistency == Consistency::kStrong), 0);
  return result;
}

Result<QueryResult> Table::Query(Connection& conn, const QueryRequest& request,
                                 UnitMeter* meter) const {
  auto fail = [&](const std::string& why) {
    return InvalidArgument("query on " + name() + ": " + why);
  };
  RETURN_IF_ERROR(schema_status_);
  uint64_t shape = 0;
  if (!request.index.empty()) {
    size_t i = 0;
    while (i < schema_.indexes.size() && schema_.indexes[i].name != request.index) ++i;
    if (i == schema_.indexes.size()) return fail("no index " + request.index);
    if (request.consistency == Consistency::kStrong) {
      return fail("consistent reads are not supported on global secondary index " +
                  request.index);
    }
    shape |= uint64_t{i + 1} << kIndexShift;
  }
  const size_t pk = QueryPartitionKey(shape).size();
  const size_t sk = QuerySortKey(shape).size();
  if (request.partition.size() != pk) {
    return fail("needs " + std::to_string(pk) + " partition key values");
  }
  if (request.limit < 0) return fail("negative limit");
  auto valid_bound = [&](const std::optional<KeyValues>& bound) {
    return !bound || (!bound->empty() && bound->size() <= sk);
  };
  if (!valid_bound(request.sort_from) || !valid_bound(request.sort_to)) {
    return fail("a sort bound needs 1.." + std::to_string(sk) + " values");
  }
  if (request.exclusive_start && request.exclusive_start->size() != sk) {
    return fail("exclusive_start needs " + std::to_string(sk) + " sort key values");
  }
  if (request.exclusive_start && sk == 0) {
    // Without a sort key a partition holds one item, already returned.
    Charge(meter, ReadUnitsForBytes(0, request.consistency == Consistency::kStrong), 0);
    return QueryResult{};
  }

  std::vector<const Value*> binds;
  for (const Value& v : request.partition) binds.push_back(&v);
  if (request.sort_from) {
    shape |= uint64_t{request.sort_from->size()} << kFromLenShift;
    for (const Value& v : *request.sort_from) binds.push_back(&v);
  }
  if (request.sort_to) {
    shape |= uint64_t{request.sort_to->size()} << kToLenShift;
    for (const Value& v : *request.sort_to) binds.push_back(&v);
  }
  if (request.exclusive_start) {
    shape |= kHasStart;
    for (const Value& v : *request.exclusive_start) binds.push_back(&v);
  }
  if (!request.forward) shape |= kReverse;
  if (request.limit > 0) shape |= kHasLimit;
  Result<QueryResult> page = RunPage(conn, /*scan=*/false, shape, binds, request.limit,
                                     request.consistency, meter);
  if (!page.ok()) return page.status().Annotate("query on " + name());
  return page;
}

Result<QueryResult> Table::Scan(Connection& conn,
                                const std::optional<KeyValues>& exclusive_start,
                                int limit, Consistency consistency,
                                UnitMeter* meter) const {
  RETURN_IF_ERROR(schema_status_);
  if (limit < 0) return InvalidArgument("scan on " + name() + ": negative limit");
  if (exclusive_start && exclusive_start->size() != key_columns_.size()) {
    return InvalidArgument("scan on " + name() + ": exclusive_start needs " +
                           std::to_string(key_columns_.size()) + " key values");
  }
  uint64_t shape = 0;
  std::vector<const Value*> binds;
  if (exclusive_start) {
    shape |= kHasStart;
    for (const Value& v : *exclusive_start) binds.push_back(&v);
  }
  if (limit > 0) shape |= kHasLimit;
  Result<QueryResult> page =
      RunPage(conn, /*scan=*/true, shape, binds, limit, consistency, meter);
  if (!page.ok()) return page.status().Annotate("scan on " + name());
  return page;
}

}  // namespace sheetlog
