// Condition: DynamoDB condition expressions, evaluated on an item (table.h).
#include "emulator/table/table.h"

namespace sheetlog {

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

}  // namespace sheetlog
