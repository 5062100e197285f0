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

// `identifier` as a quoted SQL identifier.
std::string Quote(const std::string& identifier);
// Binds `v` at `index` with the SQLite type of its kind (table.h: Values <-> SQLite).
void BindValue(Statement& stmt, int index, const Value& v);
// "(a, b)" for the first `n` of `columns`.
std::string Tuple(const std::vector<std::string>& columns, size_t n);
// "(?, ?, ...)" with `n` placeholders.
std::string Placeholders(size_t n);

// Bit i set for each non-null attribute of `item` at column index i.
uint64_t PresentMask(const Item& item, const std::map<std::string, int>& column_index);
// Binds item[column] for every column in `mask`, in schema order, from index `*bind`.
void BindMasked(Statement& stmt, int* bind, uint64_t mask,
                const std::vector<Attribute>& attributes, const Item& item);
// ConditionFailed("<condition> failed").
Status ConditionFailedStatus(const Condition& c);
// A write's status with SQLite's constraint kind told apart: a conflict (a unique
// index, a trigger's RAISE) stays ConditionFailed, a NOT NULL, CHECK, type or foreign
// key violation is InvalidArgument.
Status WriteStatus(Connection& conn, Status status);

}  // namespace sheetlog::table_sql
