#include "src/app/table_browser.h"

#include <charconv>

#include "src/log/pending_snapshots.h"
#include "src/log/tables.h"
#include "src/log/uploads.h"

namespace sheetlog {

namespace {

// The runtime's execution history (emulator/schema/sqlite/004_history.sql) as
// emulator/table sees a table: ExecutionHistory itself runs its own SQL; this descriptor
// only reads.
const Table& ExecutionHistoryTable() {
  static const Table table(TableSchema{"execution_history",
                                       {"partition_key"},
                                       {"sequence"},
                                       {{"partition_key", "K"},
                                        {"sequence", "Q"},
                                        {"atomic_counter", "A"},
                                        {"exec_status", "S"},
                                        {"created_at", "C"},
                                        {"error", "E"},
                                        {"source", "O"},
                                        {"invocation_id", "I"},
                                        {"detail", "D"}}});
  return table;
}

Result<Value> KeyValue(const std::string& text, bool integer, const std::string& column) {
  if (!integer) return Value(text);
  int64_t number = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return InvalidArgument("key column '" + column + "' holds integers, got '" + text +
                           "'");
  }
  return Value(number);
}

}  // namespace

TableBrowser::TableBrowser(Transactions* transactions) : transactions_(transactions) {}

const std::vector<BrowsableTable>& TableBrowser::Tables() {
  static const std::vector<BrowsableTable> tables = {
      {"sheet",
       "Sheets: one item per log (seed 001's Create Log)",
       &SheetTable(),
       {false}},
      {"segment",
       "Seed 001's Segment table: PK sheet_id, SK num",
       &SegmentTable(),
       {false, true}},
      {"entry",
       "Seed 001's Entry table: PK (sheet_id, segment), SK num",
       &EntryTable(),
       {false, true, true}},
      {"pending_snapshot",
       "Seed 000's Pending Snapshots: PK log_id, SK (segment, entry)",
       &PendingSnapshotTable(),
       {false, true, true}},
      {"upload",
       "Uploads (seed 000's large entries): PK upload_id",
       &UploadTable(),
       {false}},
      {"sheet_deletion",
       "Tombstones of deleted sheets: PK sheet_id",
       &SheetDeletionTable(),
       {false}},
      {"execution_history",
       "Seed 002's execution history: PK partition_key (one unit of work), SK sequence",
       &ExecutionHistoryTable(),
       {false, true}},
  };
  return tables;
}

Result<BrowsePage> TableBrowser::Browse(const BrowseRequest& request, UnitMeter* meter) {
  const BrowsableTable* found = nullptr;
  for (const BrowsableTable& t : Tables()) {
    if (t.name == request.table) found = &t;
  }
  if (found == nullptr) return NotFound("no table '" + request.table + "'");
  if (request.limit < 1 || request.limit > 1000) {
    return InvalidArgument("limit must be in 1..1000");
  }
  const TableSchema& schema = found->table->schema();
  const size_t partition_columns = schema.partition_key.size();
  std::vector<std::string> key_columns = schema.partition_key;
  key_columns.insert(key_columns.end(), schema.sort_key.begin(), schema.sort_key.end());

  auto typed = [&](const std::vector<std::string>& texts,
                   size_t first) -> Result<KeyValues> {
    KeyValues values;
    for (size_t i = 0; i < texts.size(); ++i) {
      ASSIGN_OR_RETURN(Value v, KeyValue(texts[i], found->integer_keys[first + i],
                                         key_columns[first + i]));
      values.push_back(std::move(v));
    }
    return values;
  };

  // `start` is a previous page's `next`: the full key (a Query uses its sort part).
  std::optional<KeyValues> start;
  if (request.start) {
    if (request.start->size() != key_columns.size()) {
      return InvalidArgument("start must hold " + std::to_string(key_columns.size()) +
                             " key values");
    }
    ASSIGN_OR_RETURN(start, typed(*request.start, 0));
    if (!request.partition.empty()) {
      start->erase(start->begin(),
                   start->begin() + static_cast<std::ptrdiff_t>(partition_columns));
    }
  }

  BrowsePage page;
  if (request.partition.empty()) {
    if (request.sort_from || request.sort_to) {
      return InvalidArgument("sort-key bounds need a partition key (a Query)");
    }
    RETURN_IF_ERROR(transactions_->Read([&](Connection& conn) -> Status {
      ASSIGN_OR_RETURN(
          QueryResult result,
          found->table->Scan(conn, start, request.limit, Consistency::kEventual, meter));
      page.items = std::move(result.items);
      page.next = std::move(result.last_evaluated);
      return Status::OK();
    }));
    return page;
  }
  if (request.partition.size() != partition_columns) {
    return InvalidArgument("the partition key of '" + request.table + "' has " +
                           std::to_string(partition_columns) + " column(s)");
  }
  if ((request.sort_from || request.sort_to) && schema.sort_key.empty()) {
    return InvalidArgument("'" + request.table + "' has no sort key");
  }
  QueryRequest query;
  ASSIGN_OR_RETURN(query.partition, typed(request.partition, 0));
  if (request.sort_from) {
    ASSIGN_OR_RETURN(query.sort_from, typed({*request.sort_from}, partition_columns));
  }
  if (request.sort_to) {
    ASSIGN_OR_RETURN(query.sort_to, typed({*request.sort_to}, partition_columns));
  }
  query.forward = request.forward;
  query.limit = request.limit;
  query.exclusive_start = start;
  query.consistency = Consistency::kEventual;
  RETURN_IF_ERROR(transactions_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(QueryResult result, found->table->Query(conn, query, meter));
    page.items = std::move(result.items);
    page.next = std::move(result.last_evaluated);
    return Status::OK();
  }));
  if (page.next) {
    // Query's last_evaluated is the sort key alone; the page's `next` names the full
    // key so that a client pages a Query and a Scan alike.
    KeyValues full = query.partition;
    full.insert(full.end(), page.next->begin(), page.next->end());
    page.next = std::move(full);
  }
  return page;
}

}  // namespace sheetlog
