#include "emulator/table/table.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>

namespace sheetlog {

// ---------------------------------------------------------------------------
// Value

Value Value::Bytes(std::string bytes) {
  Value v;
  v.v_ = BytesTag{std::move(bytes)};
  return v;
}

Value::Type Value::type() const {
  switch (v_.index()) {
    case 0:
      return Type::kNull;
    case 1:
      return Type::kInt;
    case 2:
      return Type::kDouble;
    case 3:
      return Type::kString;
    case 4:
      return Type::kBytes;
    default:
      return Type::kBool;
  }
}

int64_t Value::AsInt() const {
  if (const auto* i = std::get_if<int64_t>(&v_)) return *i;
  if (const auto* b = std::get_if<bool>(&v_)) return *b ? 1 : 0;
  assert(false && "Value::AsInt on a non-integer");
  return 0;
}

double Value::AsDouble() const {
  if (const auto* d = std::get_if<double>(&v_)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  assert(false && "Value::AsDouble on a non-number");
  return 0;
}

bool Value::AsBool() const {
  if (const auto* b = std::get_if<bool>(&v_)) return *b;
  if (const auto* i = std::get_if<int64_t>(&v_)) return *i != 0;
  assert(false && "Value::AsBool on a non-bool");
  return false;
}

const std::string& Value::AsString() const {
  if (const auto* s = std::get_if<std::string>(&v_)) return *s;
  if (const auto* b = std::get_if<BytesTag>(&v_)) return b->bytes;
  assert(false && "Value::AsString on a non-string");
  static const std::string kEmpty;
  return kEmpty;
}

namespace {

// Shortest text that reads back as the same double (what a DynamoDB client would send).
std::string DoubleText(double d) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  if (ec != std::errc()) return "0";
  return std::string(buf, end);
}

bool IsNumber(Value::Type t) {
  return t == Value::Type::kInt || t == Value::Type::kDouble || t == Value::Type::kBool;
}

// Kind rank for the container order: null, number, string, bytes.
int KindRank(Value::Type t) {
  if (t == Value::Type::kNull) return 0;
  if (IsNumber(t)) return 1;
  if (t == Value::Type::kString) return 2;
  return 3;
}

template <typename T>
int Sign(T a, T b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

}  // namespace

int64_t Value::DynamoSize() const {
  switch (type()) {
    case Type::kNull:
    case Type::kBool:
      return 1;
    case Type::kInt:
      return IntegerNumberSize(std::get<int64_t>(v_));
    case Type::kDouble:
      return NumberSize(DoubleText(std::get<double>(v_)));
    case Type::kString:
      return static_cast<int64_t>(std::get<std::string>(v_).size());
    case Type::kBytes:
      return static_cast<int64_t>(std::get<BytesTag>(v_).bytes.size());
  }
  return 0;
}

std::optional<int> Value::Compare(const Value& a, const Value& b) {
  Type ta = a.type();
  Type tb = b.type();
  if (IsNumber(ta) && IsNumber(tb)) {
    if (ta != Type::kDouble && tb != Type::kDouble) return Sign(a.AsInt(), b.AsInt());
    // long double holds every int64 exactly on x86-64, so mixed compares stay exact.
    long double x =
        ta == Type::kDouble ? a.AsDouble() : static_cast<long double>(a.AsInt());
    long double y =
        tb == Type::kDouble ? b.AsDouble() : static_cast<long double>(b.AsInt());
    if (std::isnan(x) || std::isnan(y)) return std::nullopt;
    return Sign(x, y);
  }
  if (ta != tb) return std::nullopt;
  if (ta == Type::kString || ta == Type::kBytes) {
    // std::string compares bytes as unsigned char: DynamoDB's UTF-8 byte order.
    int c = a.AsString().compare(b.AsString());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (ta == Type::kNull) return 0;
  return std::nullopt;
}

bool Value::operator==(const Value& other) const {
  std::optional<int> c = Compare(*this, other);
  return c.has_value() && *c == 0;
}

bool Value::operator<(const Value& other) const {
  int ra = KindRank(type());
  int rb = KindRank(other.type());
  if (ra != rb) return ra < rb;
  std::optional<int> c = Compare(*this, other);
  return c.has_value() && *c < 0;
}

std::string Value::DebugString() const {
  switch (type()) {
    case Type::kNull:
      return "NULL";
    case Type::kInt:
      return std::to_string(std::get<int64_t>(v_));
    case Type::kDouble:
      return DoubleText(std::get<double>(v_));
    case Type::kString:
      return "\"" + std::get<std::string>(v_) + "\"";
    case Type::kBytes: {
      static const char kHex[] = "0123456789abcdef";
      std::string out = "b\"";
      for (unsigned char c : std::get<BytesTag>(v_).bytes) {
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
      }
      return out + "\"";
    }
    case Type::kBool:
      return std::get<bool>(v_) ? "true" : "false";
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Condition

std::string Condition::ToString() const {
  switch (op) {
    case Op::kItemExists:
      return "attribute_exists(sk)";
    case Op::kItemNotExists:
      return "attribute_not_exists(sk)";
    case Op::kAttributeExists:
      return "attribute_exists(" + attribute + ")";
    case Op::kAttributeNotExists:
      return "attribute_not_exists(" + attribute + ")";
    case Op::kEquals:
      return attribute + " = " + value.DebugString();
    case Op::kNotEquals:
      return attribute + " <> " + value.DebugString();
    case Op::kLess:
      return attribute + " < " + value.DebugString();
    case Op::kLessOrEqual:
      return attribute + " <= " + value.DebugString();
    case Op::kGreater:
      return attribute + " > " + value.DebugString();
    case Op::kGreaterOrEqual:
      return attribute + " >= " + value.DebugString();
  }
  return "?";
}

namespace {

bool Holds(const Condition& c, const std::optional<Item>& item) {
  using Op = Condition::Op;
  if (c.op == Op::kItemExists) return item.has_value();
  if (c.op == Op::kItemNotExists) return !item.has_value();
  const Value* current = nullptr;
  if (item) {
    auto it = item->find(c.attribute);
    if (it != item->end() && !it->second.is_null()) current = &it->second;
  }
  switch (c.op) {
    case Op::kAttributeExists:
      return current != nullptr;
    case Op::kAttributeNotExists:
      return current == nullptr;
    case Op::kNotEquals:
      // A missing attribute, or one of another kind, is "not equal" on DynamoDB.
      return current == nullptr || !(*current == c.value);
    default:
      break;
  }
  if (current == nullptr) return false;
  std::optional<int> cmp = Value::Compare(*current, c.value);
  if (!cmp) return false;
  switch (c.op) {
    case Op::kEquals:
      return *cmp == 0;
    case Op::kLess:
      return *cmp < 0;
    case Op::kLessOrEqual:
      return *cmp <= 0;
    case Op::kGreater:
      return *cmp > 0;
    case Op::kGreaterOrEqual:
      return *cmp >= 0;
    default:
      return false;
  }
}

}  // namespace

bool ConditionsHold(const std::vector<Condition>& conditions,
                    const std::optional<Item>& item, const Condition** failed) {
  for (const Condition& c : conditions) {
    if (!Holds(c, item)) {
      if (failed != nullptr) *failed = &c;
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// TransactItem

TransactItem TransactItem::Put(const Table& t, Item item, std::vector<Condition> c) {
  TransactItem ti{Kind::kPut, &t, std::move(item), {}, {}, std::move(c)};
  return ti;
}

TransactItem TransactItem::PutIfAbsent(const Table& t, Item item) {
  return Put(t, std::move(item), {Condition::ItemNotExists()});
}

TransactItem TransactItem::Update(const Table& t, UpdateRequest u) {
  TransactItem ti{Kind::kUpdate, &t, {}, std::move(u), {}, {}};
  return ti;
}

TransactItem TransactItem::Delete(const Table& t, Key key, std::vector<Condition> c) {
  TransactItem ti{Kind::kDelete, &t, {}, {}, std::move(key), std::move(c)};
  return ti;
}

TransactItem TransactItem::Check(const Table& t, Key key, std::vector<Condition> c) {
  TransactItem ti{Kind::kConditionCheck, &t, {}, {}, std::move(key), std::move(c)};
  return ti;
}

// ---------------------------------------------------------------------------
// Table: schema and SQL

namespace {

constexpr int kMaxAttributes = 64;
constexpr size_t kMaxTransactItems = 100;

std::string Quote(const std::string& identifier) {
  std::string out = "\"";
  for (char c : identifier) {
    out.push_back(c);
    if (c == '"') out.push_back('"');
  }
  out.push_back('"');
  return out;
}

void BindValue(Statement& stmt, int index, const Value& v) {
  switch (v.type()) {
    case Value::Type::kNull:
      stmt.BindNull(index);
      break;
    case Value::Type::kInt:
    case Value::Type::kBool:
      stmt.Bind(index, v.AsInt());
      break;
    case Value::Type::kDouble:
      stmt.Bind(index, v.AsDouble());
      break;
    case Value::Type::kString:
      stmt.Bind(index, v.AsString());
      break;
    case Value::Type::kBytes:
      stmt.BindBlob(index, v.AsString());
      break;
  }
}

// Query shape bits: which optional clauses the SQL has.
constexpr uint64_t kHasStart = 1u << 0;
constexpr uint64_t kReverse = 1u << 1;
constexpr uint64_t kHasLimit = 1u << 2;
constexpr int kFromLenShift = 4;  // 8 bits each: length of the sort_from / sort_to prefix
constexpr int kToLenShift = 12;

// "(a, b)" for the first `n` of `columns`.
std::string Tuple(const std::vector<std::string>& columns, size_t n) {
  std::string out = "(";
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) out += ", ";
    out += Quote(columns[i]);
  }
  return out + ")";
}

std::string Placeholders(size_t n) {
  std::string out = "(";
  for (size_t i = 0; i < n; ++i) out += i > 0 ? ", ?" : "?";
  return out + ")";
}

}  // namespace

Table::Table(TableSchema schema) : schema_(std::move(schema)) {
  auto invalid = [&](const std::string& why) {
    schema_status_ = InvalidArgument("table " + schema_.table + ": " + why);
  };
  if (schema_.attributes.size() > static_cast<size_t>(kMaxAttributes)) {
    invalid("more than 64 attributes");
  }
  for (size_t i = 0; i < schema_.attributes.size(); ++i) {
    if (!column_index_.emplace(schema_.attributes[i].column, static_cast<int>(i))
             .second) {
      invalid("column " + schema_.attributes[i].column + " listed twice");
    }
    if (i > 0) select_list_ += ", ";
    select_list_ += Quote(schema_.attributes[i].column);
  }
  if (schema_.partition_key.empty()) invalid("no partition key");
  if (schema_.sort_key.size() > 255) invalid("sort key too long");
  std::vector<std::string> keys = schema_.partition_key;
  keys.insert(keys.end(), schema_.sort_key.begin(), schema_.sort_key.end());
  for (const std::string& k : keys) {
    int index = ColumnIndex(k);
    if (index < 0) {
      invalid("key column " + k + " is not among the attributes");
      continue;
    }
    if (!key_where_.empty()) key_where_ += " AND ";
    key_where_ += Quote(k) + " = ?";
    key_columns_.push_back(index);
  }
}

int Table::ColumnIndex(const std::string& column) const {
  auto it = column_index_.find(column);
  return it == column_index_.end() ? -1 : it->second;
}

const std::string& Table::SqlFor(Sql kind, uint64_t shape) const {
  std::lock_guard<std::mutex> lock(sql_mu_);
  auto key = std::make_pair(static_cast<int>(kind), shape);
  auto it = sql_.find(key);
  if (it == sql_.end()) it = sql_.emplace(key, BuildSql(kind, shape)).first;
  return it->second;
}

std::string Table::BuildSql(Sql kind, uint64_t shape) const {
  const std::string table = Quote(schema_.table);
  std::vector<std::string> keys = schema_.partition_key;
  keys.insert(keys.end(), schema_.sort_key.begin(), schema_.sort_key.end());

  // For the column-mask shapes: the masked columns in schema order.
  auto masked = [&](const std::string& separator, const std::string& suffix) {
    std::string out;
    for (size_t i = 0; i < schema_.attributes.size(); ++i) {
      if ((shape & (uint64_t{1} << i)) == 0) continue;
      if (!out.empty()) out += separator;
      out += Quote(schema_.attributes[i].column) + suffix;
    }
    return out;
  };
  auto insert_head = [&] {
    std::string columns = masked(", ", "");
    std::string values;
    for (size_t i = 0; i < schema_.attributes.size(); ++i) {
      if ((shape & (uint64_t{1} << i)) == 0) continue;
      values += values.empty() ? "?" : ", ?";
    }
    return "INSERT INTO " + table + " (" + columns + ") VALUES (" + values + ")";
  };
  const std::string conflict_target = " ON CONFLICT " + Tuple(keys, keys.size());

  switch (kind) {
    case Sql::kGet:
      return "SELECT " + select_list_ + " FROM " + table + " WHERE " + key_where_;
    case Sql::kDelete:
      return "DELETE FROM " + table + " WHERE " + key_where_ + " RETURNING " +
             select_list_;
    case Sql::kInsertIfAbsent:
      return insert_head() + conflict_target + " DO NOTHING";
    case Sql::kUpsert: {
      // excluded.<c> of a column the INSERT does not name is its DEFAULT: exactly
      // PutItem's "replace the whole item".
      std::string sets;
      for (const Attribute& a : schema_.attributes) {
        if (std::find(keys.begin(), keys.end(), a.column) != keys.end()) continue;
        if (!sets.empty()) sets += ", ";
        sets += Quote(a.column) + " = excluded." + Quote(a.column);
      }
      return insert_head() + conflict_target +
             (sets.empty() ? " DO NOTHING" : " DO UPDATE SET " + sets);
    }
    case Sql::kInsert:
      return insert_head() + " RETURNING " + select_list_;
    case Sql::kUpdate:
      return "UPDATE " + table + " SET " + masked(", ", " = ?") + " WHERE " + key_where_ +
             " RETURNING " + select_list_;
    case Sql::kQuery: {
      std::string sql = "SELECT " + select_list_ + " FROM " + table + " WHERE ";
      for (size_t i = 0; i < schema_.partition_key.size(); ++i) {
        if (i > 0) sql += " AND ";
        sql += Quote(schema_.partition_key[i]) + " = ?";
      }
      const auto& sk = schema_.sort_key;
      size_t from_len = (shape >> kFromLenShift) & 0xff;
      size_t to_len = (shape >> kToLenShift) & 0xff;
      if (from_len > 0)
        sql += " AND " + Tuple(sk, from_len) + " >= " + Placeholders(from_len);
      if (to_len > 0) sql += " AND " + Tuple(sk, to_len) + " <= " + Placeholders(to_len);
      bool reverse = (shape & kReverse) != 0;
      if (shape & kHasStart) {
        sql += " AND " + Tuple(sk, sk.size()) + (reverse ? " < " : " > ") +
               Placeholders(sk.size());
      }
      if (!sk.empty()) {
        sql += " ORDER BY ";
        for (size_t i = 0; i < sk.size(); ++i) {
          if (i > 0) sql += ", ";
          sql += Quote(sk[i]) + (reverse ? " DESC" : " ASC");
        }
      }
      if (shape & kHasLimit) sql += " LIMIT ?";
      return sql;
    }
    case Sql::kScan: {
      std::string sql = "SELECT " + select_list_ + " FROM " + table;
      if (shape & kHasStart) {
        sql += " WHERE " + Tuple(keys, keys.size()) + " > " + Placeholders(keys.size());
      }
      sql += " ORDER BY ";
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i > 0) sql += ", ";
        sql += Quote(keys[i]);
      }
      if (shape & kHasLimit) sql += " LIMIT ?";
      return sql;
    }
  }
  return "";
}

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

Item Table::ReadRow(const Statement& stmt, int64_t* size) const {
  Item item;
  int64_t total = 0;
  for (size_t i = 0; i < schema_.attributes.size(); ++i) {
    int col = static_cast<int>(i);
    Value v;
    switch (stmt.ColumnType(col)) {
      case SQLITE_NULL:
        continue;
      case SQLITE_INTEGER:
        v = Value(stmt.ColumnInt(col));
        break;
      case SQLITE_FLOAT:
        v = Value(stmt.ColumnDouble(col));
        break;
      case SQLITE_TEXT:
        v = Value(stmt.ColumnText(col));
        break;
      default:
        v = Value::Bytes(std::string(stmt.ColumnView(col)));
        break;
    }
    total +=
        static_cast<int64_t>(schema_.attributes[i].dynamo_name.size()) + v.DynamoSize();
    item.emplace(schema_.attributes[i].column, std::move(v));
  }
  if (size != nullptr) *size = total;
  return item;
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

Result<std::optional<Item>> Table::Load(Connection& conn, const Key& key,
                                        int64_t* size) const {
  *size = 0;
  ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(SqlFor(Sql::kGet, 0)));
  int bind = 1;
  for (const Value& v : key.partition) BindValue(stmt, bind++, v);
  for (const Value& v : key.sort) BindValue(stmt, bind++, v);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<Item>();
  return std::optional<Item>(ReadRow(stmt, size));
}

void Table::Charge(UnitMeter* meter, double read_units, double write_units) const {
  if (read_units == 0 && write_units == 0) return;
  if (meter != nullptr) meter->Add(name(), read_units, write_units);
  total_read_units_.fetch_add(read_units);
  total_write_units_.fetch_add(write_units);
}

namespace {

uint64_t PresentMask(const Item& item, const std::map<std::string, int>& column_index) {
  uint64_t mask = 0;
  for (const auto& [column, value] : item) {
    if (value.is_null()) continue;
    mask |= uint64_t{1} << column_index.at(column);
  }
  return mask;
}

// Binds item[column] for every column in `mask`, in schema order, from index `*bind`.
void BindMasked(Statement& stmt, int* bind, uint64_t mask,
                const std::vector<Attribute>& attributes, const Item& item) {
  for (size_t i = 0; i < attributes.size(); ++i) {
    if ((mask & (uint64_t{1} << i)) == 0) continue;
    auto it = item.find(attributes[i].column);
    BindValue(stmt, (*bind)++, it == item.end() ? Value() : it->second);
  }
}

Status ConditionFailedStatus(const Condition& c) {
  return ConditionFailed(c.ToString() + " failed");
}

// SqliteStatus maps every SQLITE_CONSTRAINT to ConditionFailed. A conflict (a unique
// index, a trigger's RAISE) is a lost race; a NOT NULL, CHECK or type violation is a
// malformed item that no retry will fix: InvalidArgument, so callers that retry on
// ConditionFailed do not loop.
Status WriteStatus(Connection& conn, Status status) {
  if (status.code() != StatusCode::kConditionFailed) return status;
  switch (sqlite3_extended_errcode(conn.raw())) {
    case SQLITE_CONSTRAINT_NOTNULL:
    case SQLITE_CONSTRAINT_CHECK:
    case SQLITE_CONSTRAINT_DATATYPE:
    case SQLITE_CONSTRAINT_FOREIGNKEY:
      return InvalidArgument(status.message());
    default:
      return status;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Table: writes

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
    ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(SqlFor(Sql::kInsertIfAbsent, mask)));
    int bind = 1;
    BindMasked(stmt, &bind, mask, schema_.attributes, item);
    RETURN_IF_ERROR(WriteStatus(conn, stmt.Run()));
    if (conn.Changes() == 0) return ConditionFailedStatus(conditions[0]);
    return Status::OK();
  }

  int64_t old_size = 0;
  ASSIGN_OR_RETURN(std::optional<Item> current, Load(conn, KeyOf(item), &old_size));
  *write_units = WriteUnitsForItem(std::max(old_size, new_size));
  const Condition* failed = nullptr;
  if (!ConditionsHold(conditions, current, &failed))
    return ConditionFailedStatus(*failed);
  ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(SqlFor(Sql::kUpsert, mask)));
  int bind = 1;
  BindMasked(stmt, &bind, mask, schema_.attributes, item);
  return WriteStatus(conn, stmt.Run());
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

  int64_t old_size = 0;
  ASSIGN_OR_RETURN(std::optional<Item> current, Load(conn, request.key, &old_size));

  // The item as it would be after the update (ALL_NEW before column affinity).
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
  const int64_t new_size = ItemSize(next);
  if (new_size > kMaxItemBytes) {
    return ResourceExhausted("table " + name() + ": item of " + std::to_string(new_size) +
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

  Sql kind = current ? Sql::kUpdate : Sql::kInsert;
  uint64_t mask = current ? touched : PresentMask(next, column_index_);
  ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(SqlFor(kind, mask)));
  int bind = 1;
  BindMasked(stmt, &bind, mask, schema_.attributes, next);
  if (current) {
    for (const Value& v : request.key.partition) BindValue(stmt, bind++, v);
    for (const Value& v : request.key.sort) BindValue(stmt, bind++, v);
  }
  Result<bool> row = stmt.Step();
  if (!row.ok()) return WriteStatus(conn, row.status());
  if (!*row) return Internal("table " + name() + ": write returned no row");
  int64_t stored_size = 0;
  Item stored = ReadRow(stmt, &stored_size);
  RETURN_IF_ERROR(stmt.Run());  // finish the statement
  *write_units = WriteUnitsForItem(std::max(old_size, stored_size));
  return stored;
}

Status Table::DeleteUncharged(Connection& conn, const Key& key,
                              const std::vector<Condition>& conditions,
                              double* write_units) const {
  *write_units = 0;
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(ValidateConditions(conditions));
  if (!conditions.empty()) {
    int64_t old_size = 0;
    ASSIGN_OR_RETURN(std::optional<Item> current, Load(conn, key, &old_size));
    *write_units = WriteUnitsForItem(old_size);
    const Condition* failed = nullptr;
    if (!ConditionsHold(conditions, current, &failed))
      return ConditionFailedStatus(*failed);
    if (!current) return Status::OK();
  }
  ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(SqlFor(Sql::kDelete, 0)));
  int bind = 1;
  for (const Value& v : key.partition) BindValue(stmt, bind++, v);
  for (const Value& v : key.sort) BindValue(stmt, bind++, v);
  Result<bool> row = stmt.Step();
  if (!row.ok()) return WriteStatus(conn, row.status());
  int64_t deleted_size = 0;
  if (*row) ReadRow(stmt, &deleted_size);
  RETURN_IF_ERROR(stmt.Run());
  *write_units = WriteUnitsForItem(deleted_size);
  return Status::OK();
}

Status Table::CheckUncharged(Connection& conn, const Key& key,
                             const std::vector<Condition>& conditions,
                             double* write_units) const {
  *write_units = 0;
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(ValidateConditions(conditions));
  int64_t size = 0;
  ASSIGN_OR_RETURN(std::optional<Item> current, Load(conn, key, &size));
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

// ---------------------------------------------------------------------------
// Table: reads

Result<std::optional<Item>> Table::Get(Connection& conn, const Key& key,
                                       Consistency consistency, UnitMeter* meter) const {
  RETURN_IF_ERROR(ValidateKey(key).Annotate("get on " + name()));
  int64_t size = 0;
  Result<std::optional<Item>> item = Load(conn, key, &size);
  if (!item.ok()) return item.status().Annotate("get on " + name());
  Charge(meter, ReadUnitsForBytes(size, consistency == Consistency::kStrong), 0);
  return item;
}

Result<QueryResult> Table::RunPage(Connection& conn, const std::string& sql,
                                   const std::vector<const Value*>& binds, int limit,
                                   bool full_key, Consistency consistency,
                                   UnitMeter* meter) const {
  ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(sql));
  int bind = 1;
  for (const Value* v : binds) BindValue(stmt, bind++, *v);
  if (limit > 0) stmt.Bind(bind++, limit);

  QueryResult result;
  int64_t total = 0;
  bool cut = false;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    int64_t size = 0;
    Item item = ReadRow(stmt, &size);
    // DynamoDB ends a page at 1 MB of item data; this page stops before the item that
    // would cross it (but always returns at least one item).
    if (!result.items.empty() && total + size > kMaxPageBytes) {
      cut = true;
      break;
    }
    total += size;
    result.items.push_back(std::move(item));
    if (limit > 0 && static_cast<int>(result.items.size()) >= limit) {
      cut = true;
      break;
    }
  }
  if (cut && !result.items.empty()) {
    Key last = KeyOf(result.items.back());
    if (full_key) {
      last.partition.insert(last.partition.end(), last.sort.begin(), last.sort.end());
      result.last_evaluated = std::move(last.partition);
    } else {
      result.last_evaluated = std::move(last.sort);
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
  const size_t sk = schema_.sort_key.size();
  if (request.partition.size() != schema_.partition_key.size()) {
    return fail("needs " + std::to_string(schema_.partition_key.size()) +
                " partition key values");
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

  uint64_t shape = 0;
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
  Result<QueryResult> page =
      RunPage(conn, SqlFor(Sql::kQuery, shape), binds, request.limit,
              /*full_key=*/false, request.consistency, meter);
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
  Result<QueryResult> page = RunPage(conn, SqlFor(Sql::kScan, shape), binds, limit,
                                     /*full_key=*/true, consistency, meter);
  if (!page.ok()) return page.status().Annotate("scan on " + name());
  return page;
}

// ---------------------------------------------------------------------------
// TransactWrite

Status TransactWrite(Connection& conn, const std::vector<TransactItem>& items,
                     UnitMeter* meter) {
  if (items.size() > kMaxTransactItems) {
    return InvalidArgument("transaction of " + std::to_string(items.size()) +
                           " items exceeds DynamoDB's 100");
  }
  // DynamoDB rejects a transaction that touches one item twice.
  std::set<std::pair<const Table*, std::vector<Value>>> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    const TransactItem& t = items[i];
    if (t.table == nullptr) {
      return InvalidArgument("transaction item " + std::to_string(i) + " has no table");
    }
    Key key;
    if (t.kind == TransactItem::Kind::kPut) {
      RETURN_IF_ERROR(t.table->ValidateItem(t.item).Annotate(
          "transaction item " + std::to_string(i) + " (" + t.table->name() + ")"));
      key = t.table->KeyOf(t.item);
    } else {
      key = t.kind == TransactItem::Kind::kUpdate ? t.update.key : t.key;
      RETURN_IF_ERROR(t.table->ValidateKey(key).Annotate(
          "transaction item " + std::to_string(i) + " (" + t.table->name() + ")"));
    }
    std::vector<Value> full = key.partition;
    full.insert(full.end(), key.sort.begin(), key.sort.end());
    if (!seen.emplace(t.table, std::move(full)).second) {
      return InvalidArgument("transaction item " + std::to_string(i) + " (" +
                             t.table->name() +
                             ") addresses an item already in the "
                             "transaction");
    }
  }

  RETURN_IF_ERROR(conn.Exec("SAVEPOINT sheetlog_transact"));
  std::vector<double> units(items.size(), 0);
  Status status;
  size_t i = 0;
  for (; i < items.size() && status.ok(); ++i) {
    const TransactItem& t = items[i];
    switch (t.kind) {
      case TransactItem::Kind::kPut:
        status = t.table->PutUncharged(conn, t.item, t.conditions, &units[i]);
        break;
      case TransactItem::Kind::kUpdate:
        status = t.table->UpdateUncharged(conn, t.update, &units[i]).status();
        break;
      case TransactItem::Kind::kDelete:
        status = t.table->DeleteUncharged(conn, t.key, t.conditions, &units[i]);
        break;
      case TransactItem::Kind::kConditionCheck:
        status = t.table->CheckUncharged(conn, t.key, t.conditions, &units[i]);
        break;
    }
    if (!status.ok()) {
      status = status.Annotate("transaction cancelled: item " + std::to_string(i) + " (" +
                               t.table->name() + ")");
    }
  }
  if (status.ok()) {
    status = conn.Exec("RELEASE sheetlog_transact");
  } else {
    Status undo = conn.Exec("ROLLBACK TO sheetlog_transact");
    if (undo.ok()) undo = conn.Exec("RELEASE sheetlog_transact");
    if (!undo.ok()) return undo;
  }
  // Transactional writes cost double, the cancelled ones included.
  for (size_t j = 0; j < i; ++j) items[j].table->Charge(meter, 0, 2 * units[j]);
  return status;
}

}  // namespace sheetlog
