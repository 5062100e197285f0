#include "src/log/pending_snapshots.h"

#include <algorithm>
#include <utility>

namespace sheetlog {

// Seed 000 "Pending Snapshots": PK log_id, SK (segment, entry), with the one-letter
// attribute names of schema/README.md.
const Table& PendingSnapshotTable() {
  static const Table table(TableSchema{"pending_snapshot",
                                       {"log_id"},
                                       {"segment", "entry"},
                                       {{"log_id", "L"},
                                        {"segment", "N"},
                                        {"entry", ""},  // second half of the pair "N"
                                        {"created", "C"},
                                        {"modified", "M"},
                                        {"active", "A"},
                                        {"increment", "I"},
                                        {"state", "S"},
                                        {"owner", "O"}}});
  return table;
}

namespace {

Key KeyOf(const PendingSnapshotKey& key) {
  return Key{{key.sheet_id}, {key.segment, key.entry}};
}

int64_t IntOf(const Item& item, const char* column) {
  auto it = item.find(column);
  return it == item.end() || it->second.is_null() ? 0 : it->second.AsInt();
}

PendingSnapshot FromItem(const Item& item) {
  PendingSnapshot p;
  auto log_id = item.find("log_id");
  if (log_id != item.end() && !log_id->second.is_null()) {
    p.sheet_id = log_id->second.AsString();
  }
  p.segment = IntOf(item, "segment");
  p.entry = IntOf(item, "entry");
  p.created = IntOf(item, "created");
  p.modified = IntOf(item, "modified");
  p.active = IntOf(item, "active") != 0;
  p.increment = IntOf(item, "increment");
  auto state = item.find("state");
  if (state != item.end() && !state->second.is_null()) p.state = state->second.AsString();
  auto owner = item.find("owner");
  if (owner != item.end() && !owner->second.is_null()) p.owner = owner->second.AsString();
  return p;
}

// Active is stored as the integer 0/1 (as SQLite reads a bool back anyway), so item
// sizes and request units are those of an integer attribute.
Value ActiveValue(bool active) { return Value(int64_t{active ? 1 : 0}); }

// Every item of the sheet with sort key <= `sort_to` (all if unset), in key order.
Result<std::vector<PendingSnapshot>> QueryAll(Connection& conn,
                                              const std::string& sheet_id,
                                              std::optional<KeyValues> sort_to,
                                              UnitMeter* meter) {
  std::vector<PendingSnapshot> out;
  QueryRequest query;
  query.partition = {sheet_id};
  query.sort_to = std::move(sort_to);
  while (true) {
    ASSIGN_OR_RETURN(QueryResult page, PendingSnapshotTable().Query(conn, query, meter));
    for (const Item& item : page.items) out.push_back(FromItem(item));
    if (!page.last_evaluated) return out;
    query.exclusive_start = page.last_evaluated;
  }
}

}  // namespace

Result<std::optional<PendingSnapshot>> GetPendingSnapshot(Connection& conn,
                                                          const PendingSnapshotKey& key,
                                                          UnitMeter* meter) {
  ASSIGN_OR_RETURN(
      std::optional<Item> item,
      PendingSnapshotTable().Get(conn, KeyOf(key), Consistency::kStrong, meter));
  if (!item) return std::optional<PendingSnapshot>();
  return std::optional<PendingSnapshot>(FromItem(*item));
}

Result<std::optional<PendingSnapshot>> FirstPendingSnapshot(Connection& conn,
                                                            const std::string& sheet_id,
                                                            UnitMeter* meter) {
  QueryRequest query;
  query.partition = {sheet_id};
  query.limit = 1;
  ASSIGN_OR_RETURN(QueryResult page, PendingSnapshotTable().Query(conn, query, meter));
  if (page.items.empty()) return std::optional<PendingSnapshot>();
  return std::optional<PendingSnapshot>(FromItem(page.items.front()));
}

Result<std::vector<PendingSnapshot>> ListPendingSnapshots(Connection& conn,
                                                          const std::string& sheet_id,
                                                          UnitMeter* meter) {
  return QueryAll(conn, sheet_id, std::nullopt, meter);
}

Result<std::vector<PendingSnapshot>> ScanPendingSnapshots(Connection& conn, int limit,
                                                          UnitMeter* meter) {
  ASSIGN_OR_RETURN(QueryResult page,
                   PendingSnapshotTable().Scan(conn, std::nullopt, limit,
                                               Consistency::kStrong, meter));
  std::vector<PendingSnapshot> out;
  out.reserve(page.items.size());
  for (const Item& item : page.items) out.push_back(FromItem(item));
  return out;
}

Status CreatePendingSnapshot(Connection& conn, const PendingSnapshot& snapshot,
                             UnitMeter* meter) {
  Item item{{"log_id", snapshot.sheet_id},    {"segment", snapshot.segment},
            {"entry", snapshot.entry},        {"created", snapshot.created},
            {"modified", snapshot.modified},  {"active", ActiveValue(snapshot.active)},
            {"increment", snapshot.increment}};
  if (snapshot.state) item["state"] = *snapshot.state;
  if (snapshot.owner) item["owner"] = *snapshot.owner;
  return PendingSnapshotTable().PutIfAbsent(conn, item, meter);
}

Status UpdatePendingSnapshot(Connection& conn, const PendingSnapshotKey& key,
                             int64_t expected_increment,
                             const PendingSnapshotChanges& changes, UnitMeter* meter) {
  UpdateRequest update;
  update.key = KeyOf(key);
  if (changes.active) update.set["active"] = ActiveValue(*changes.active);
  if (changes.modified) update.set["modified"] = *changes.modified;
  if (changes.state) update.set["state"] = *changes.state;
  if (changes.owner) update.set["owner"] = *changes.owner;
  update.set["increment"] = expected_increment + 1;
  update.conditions = {Condition::Equals("increment", expected_increment)};
  update.create_if_missing = false;
  return PendingSnapshotTable().Update(conn, update, meter).status();
}

Status DeletePendingSnapshot(Connection& conn, const PendingSnapshotKey& key,
                             std::optional<int64_t> expected_increment,
                             UnitMeter* meter) {
  std::vector<Condition> conditions;
  if (expected_increment) {
    conditions.push_back(Condition::Equals("increment", *expected_increment));
  }
  return PendingSnapshotTable().Delete(conn, KeyOf(key), conditions, meter);
}

Status DeleteAllPendingSnapshots(Connection& conn, const std::string& sheet_id,
                                 UnitMeter* meter) {
  ASSIGN_OR_RETURN(std::vector<PendingSnapshot> items,
                   QueryAll(conn, sheet_id, std::nullopt, meter));
  for (const PendingSnapshot& p : items) {
    RETURN_IF_ERROR(DeletePendingSnapshot(conn, p.key(), std::nullopt, meter));
  }
  return Status::OK();
}

Status DeleteEveryPendingSnapshot(Connection& conn) {
  return PendingSnapshotTable().DeleteAll(conn).status();
}

Status DeletePendingSnapshotsBefore(Connection& conn, const std::string& sheet_id,
                                    int64_t segment, int64_t entry, UnitMeter* meter) {
  // The query bounds the segment only (a prefix of the sort key); entries of `segment`
  // at or after `entry` are skipped here.
  ASSIGN_OR_RETURN(std::vector<PendingSnapshot> items,
                   QueryAll(conn, sheet_id, KeyValues{Value(segment)}, meter));
  for (const PendingSnapshot& p : items) {
    if (p.segment == segment && p.entry >= entry) continue;
    RETURN_IF_ERROR(DeletePendingSnapshot(conn, p.key(), std::nullopt, meter));
  }
  return Status::OK();
}

Result<std::optional<PendingSnapshot>> PendingSnapshots::Get(
    const PendingSnapshotKey& key, UnitMeter* meter) {
  std::optional<PendingSnapshot> found;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(found, GetPendingSnapshot(conn, key, meter));
    return Status::OK();
  }));
  return found;
}

Result<std::optional<PendingSnapshot>> PendingSnapshots::First(
    const std::string& sheet_id, UnitMeter* meter) {
  std::optional<PendingSnapshot> found;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(found, FirstPendingSnapshot(conn, sheet_id, meter));
    return Status::OK();
  }));
  return found;
}

Result<std::vector<PendingSnapshot>> PendingSnapshots::List(const std::string& sheet_id,
                                                            UnitMeter* meter) {
  std::vector<PendingSnapshot> items;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(items, ListPendingSnapshots(conn, sheet_id, meter));
    return Status::OK();
  }));
  return items;
}

Result<std::vector<PendingSnapshot>> PendingSnapshots::Scan(int limit, UnitMeter* meter) {
  std::vector<PendingSnapshot> items;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(items, ScanPendingSnapshots(conn, limit, meter));
    return Status::OK();
  }));
  return items;
}

Result<PendingSnapshotSummary> PendingSnapshots::Summarize(int64_t stale_before_s,
                                                           UnitMeter* meter) {
  PendingSnapshotSummary summary;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) -> Status {
    std::optional<KeyValues> start;
    do {
      ASSIGN_OR_RETURN(
          QueryResult page,
          PendingSnapshotTable().Scan(conn, start, 0, Consistency::kEventual, meter));
      for (const Item& item : page.items) {
        const PendingSnapshot p = FromItem(item);
        summary.oldest_created_s = summary.count == 0
                                       ? p.created
                                       : std::min(summary.oldest_created_s, p.created);
        ++summary.count;
        if (p.modified < stale_before_s) ++summary.stale;
      }
      start = page.last_evaluated;
    } while (start);
    return Status::OK();
  }));
  return summary;
}

Status PendingSnapshots::Create(const PendingSnapshot& snapshot, UnitMeter* meter) {
  return db_->Write(
      [&](Connection& conn) { return CreatePendingSnapshot(conn, snapshot, meter); });
}

Status PendingSnapshots::Update(const PendingSnapshotKey& key, int64_t expected_increment,
                                const PendingSnapshotChanges& changes, UnitMeter* meter) {
  return db_->Write([&](Connection& conn) {
    return UpdatePendingSnapshot(conn, key, expected_increment, changes, meter);
  });
}

Status PendingSnapshots::Delete(const PendingSnapshotKey& key,
                                std::optional<int64_t> expected_increment,
                                UnitMeter* meter) {
  return db_->Write([&](Connection& conn) {
    return DeletePendingSnapshot(conn, key, expected_increment, meter);
  });
}

}  // namespace sheetlog
