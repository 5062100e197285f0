// DynamoDB request units, by the rules seed 001 quotes:
//   - a write unit covers one write of an item up to 1 KB; sizes round up to the next
//     KB, per item. Conditional writes cost the same, and are charged even when the
//     condition fails. Writes in a transaction cost double.
//   - a read unit covers a strongly consistent read of up to 4 KB. For Query (and
//     BatchGetItem) the sizes of all items are summed and *then* rounded up to 4 KB.
//     Eventually consistent reads cost half; transactional reads double.
//   - item size = sum over attributes of (UTF-8 name length + value size); strings are
//     their UTF-8 length, binary its length, numbers about (significant digits / 2) + 1
//     bytes, booleans and nulls 1 byte. An empty read still costs the minimum unit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace sheetlog {

constexpr int64_t kWriteUnitBytes = 1024;
constexpr int64_t kReadUnitBytes = 4096;
// DynamoDB's largest item (400 KB) and the most item data one Query/Scan page returns.
constexpr int64_t kMaxItemBytes = 400 * 1024;
constexpr int64_t kMaxPageBytes = 1024 * 1024;

// ceil(bytes / 1 KB), at least 1.
double WriteUnitsForItem(int64_t item_bytes);
// ceil(total_bytes / 4 KB), at least 1; halved if eventually consistent.
double ReadUnitsForBytes(int64_t total_bytes, bool strongly_consistent);
// DynamoDB's size of a number: (significant decimal digits + 1) / 2 + 1 bytes.
// Leading/trailing zeros, sign, point and exponent are not significant; zero counts
// as one digit. Examples: "7" -> 2, "1234" -> 3, "-1.50" -> 2, "1000000" -> 2.
int64_t NumberSize(const std::string& decimal_text);
// NumberSize(std::to_string(v)) without formatting (the hot path sizes integers).
int64_t IntegerNumberSize(int64_t v);

// Accumulates the units consumed by one request (or job), by table. Not thread-safe:
// one request's work runs on one thread at a time.
struct UnitMeter {
  double read_units = 0;
  double write_units = 0;
  std::map<std::string, std::pair<double, double>> by_table;  // table -> (rru, wru)

  void Add(const std::string& table, double rru, double wru) {
    read_units += rru;
    write_units += wru;
    auto& t = by_table[table];
    t.first += rru;
    t.second += wru;
  }
  void Merge(const UnitMeter& other) {
    for (const auto& [table, units] : other.by_table)
      Add(table, units.first, units.second);
  }
};

}  // namespace sheetlog
