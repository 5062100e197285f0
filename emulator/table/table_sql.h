// Internal to emulator/table: what its files share to turn items into SQL. Not for use
// outside emulator/table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "emulator/status.h"
#include "emulator/table/table.h"

namespace sheetlog::table_sql {

inline constexpr int kMaxAttributes = 64;
inline constexpr size_t kMaxTransactItems = 100;

// Query shape bits: which optional clauses the SQL has.
inline constexpr uint64_t kHasStart = 1u << 0;
inline constexpr uint64_t kReverse = 1u << 1;
inline constexpr uint64_t kHasLimit = 1u << 2;
// 8 bits each: length of the sort_from / sort_to prefix.
inline constexpr int kFromLenShift = 4;
inline constexpr int kToLenShift = 12;
// 8 bits: 0 for a query by the table's key, i + 1 for one by TableSchema::indexes[i].
inline constexpr int kIndexShift = 20;

// `identifier` as a quoted SQL identifier.
std::string Quote(const std::string& identifier);
// "(a, b)" for the first `n` of `columns`.
std::string Tuple(const std::vector<std::string>& columns, size_t n);

// Bit i set for each non-null attribute of `item` at column index i.
uint64_t PresentMask(const Item& item, const std::map<std::string, int>& column_index);
// The values of the columns in `mask`, in schema order (absent: Null()), then those of
// `key` (partition then sort) if given: the binds of an insert, replace or update.
std::vector<const Value*> MaskedBinds(uint64_t mask,
                                      const std::vector<Attribute>& attributes,
                                      const Item& item, const Key* key);
// The values of `key`, partition then sort: the binds of a get or delete.
std::vector<const Value*> KeyBinds(const Key& key);
// ConditionFailed("<condition> failed").
Status ConditionFailedStatus(const Condition& c);

}  // namespace sheetlog::table_sql
