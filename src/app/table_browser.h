// Read-only browsing of the tables behind the API, as dynamodb-admin browses DynamoDB's:
// the event log's Sheet, Segment and Entry tables, Pending Snapshots, uploads, sheet
// deletions and the runtime's execution history. A page is a Query of one
// partition (a sort-key range, either direction) or a Scan of the whole table, read with
// DynamoDB's eventual consistency through emulator/table, so each page is bounded
// (limit, and 1 MB as on DynamoDB) and charged its read units. Items come back as stored
// (column -> value). Nothing here writes: edits go through the API (entry metadata:
// PATCH .../entries/{seq}). Thread-safe (holds only the database pointer).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "emulator/status.h"
#include "emulator/table/table.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

struct BrowsableTable {
  std::string name;         // the SQL table's name, as the API names it
  std::string description;  // what it is (a seed's table, ...)
  const Table* table;
  // For each key column (partition columns, then sort columns): true if it holds
  // integers (a value typed as text is converted), false for text.
  std::vector<bool> integer_keys;
};

struct BrowseRequest {
  std::string table;
  // The partition key's values (all its columns, as text): Query. Empty: Scan.
  std::vector<std::string> partition;
  // Query only: inclusive bounds on the first sort-key column, as text.
  std::optional<std::string> sort_from;
  std::optional<std::string> sort_to;
  bool forward = true;  // Query only
  int limit = 50;       // 1..1000
  // The previous page's `next`: the last item's key values, as text.
  std::optional<std::vector<std::string>> start;
};

struct BrowsePage {
  std::vector<Item> items;
  // The last item's key values (partition, then sort columns) when more may follow.
  std::optional<std::vector<Value>> next;
};

class TableBrowser {
 public:
  // `transactions` must outlive this object.
  explicit TableBrowser(Transactions* transactions);

  // Every table that can be browsed, in a fixed order.
  static const std::vector<BrowsableTable>& Tables();

  // NotFound for an unknown table; InvalidArgument for a partition that does not have
  // one value per partition-key column, a key value that is not an integer where one
  // is, a start that does not have one value per key column, a limit outside 1..1000,
  // or sort bounds on a table without a sort key.
  Result<BrowsePage> Browse(const BrowseRequest& request, UnitMeter* meter);

 private:
  Transactions* transactions_;
};

}  // namespace sheetlog
