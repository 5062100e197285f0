// The event log's facade (event_log.h): the item codecs, Create Log, the sheet reads,
// entry metadata, snapshot completion and sheet deletion. Add Entry and Create New
// Segment: event_log_add_entry.cc; reads and Load: event_log_read.cc; truncation and
// its archive format: event_log_truncate.cc (archive_format.md).
#include "src/log/event_log.h"

#include <nlohmann/json.hpp>

#include "emulator/env/uuid.h"
#include "emulator/json_text.h"
#include "src/log/event_log_internal.h"
#include "src/log/pending_snapshots.h"
#include "src/log/sheet_deletion.h"
#include "src/log/tables.h"

namespace sheetlog {

namespace event_log_internal {

std::optional<std::string> OptionalString(const Item& item, const std::string& column) {
  auto it = item.find(column);
  if (it == item.end() || it->second.is_null()) return std::nullopt;
  return it->second.AsString();
}

std::optional<int64_t> OptionalInt(const Item& item, const std::string& column) {
  auto it = item.find(column);
  if (it == item.end() || it->second.is_null()) return std::nullopt;
  return it->second.AsInt();
}

int64_t IntOr(const Item& item, const std::string& column, int64_t fallback) {
  return OptionalInt(item, column).value_or(fallback);
}

Item EntryItem(const std::string& sheet_id, const EntryRecord& e) {
  Item item{{"sheet_id", sheet_id}, {"segment", e.segment}, {"num", e.num},
            {"seq", e.seq},         {"created", e.created}, {"type", e.type},
            {"version", e.version}};
  if (e.body) item["body"] = *e.body;
  if (e.external) item["external"] = *e.external;
  if (e.snapshot_root) item["snapshot_root"] = *e.snapshot_root;
  if (e.metadata) item["metadata"] = *e.metadata;
  return item;
}

SheetInfo SheetFromItem(const Item& item) {
  SheetInfo s;
  s.id = item.at("id").AsString();
  s.name = OptionalString(item, "name").value_or("");
  s.created = IntOr(item, "created", 0);
  s.snapshot_every = IntOr(item, "snapshot_every", 0);
  s.segment_entries = IntOr(item, "segment_entries", 0);
  s.first_seq = IntOr(item, "first_seq", 0);
  s.base_root = OptionalString(item, "base_root");
  s.fork_of = OptionalString(item, "fork_of");
  s.fork_seq = OptionalInt(item, "fork_seq");
  if (std::optional<std::string> shared = OptionalString(item, "shared_blobs")) {
    nlohmann::json keys = ParseJsonOrDiscarded(*shared);
    if (keys.is_array()) {
      for (const nlohmann::json& key : keys) {
        if (key.is_string()) s.shared_blobs.push_back(key.get<std::string>());
      }
    }
  }
  return s;
}

// Whether a metadata object text carries a client-set "snapshot".
bool HasClientSnapshot(const std::optional<std::string>& metadata) {
  if (!metadata) return false;
  nlohmann::json object = ParseJsonOrDiscarded(*metadata);
  return object.is_object() && object.contains("snapshot") &&
         object["snapshot"].is_string();
}

}  // namespace event_log_internal

using event_log_internal::EntryItem;
using event_log_internal::HasClientSnapshot;
using event_log_internal::IntOr;
using event_log_internal::OptionalInt;
using event_log_internal::OptionalString;
using event_log_internal::QuerySegmentEntries;
using event_log_internal::QuerySegments;
using event_log_internal::SheetFromItem;

EntryRecord EntryFromItem(const Item& item) {
  EntryRecord e;
  e.seq = IntOr(item, "seq", 0);
  e.segment = IntOr(item, "segment", 0);
  e.num = IntOr(item, "num", 0);
  e.created = IntOr(item, "created", 0);
  e.type = OptionalString(item, "type").value_or("");
  e.version = IntOr(item, "version", 1);
  e.body = OptionalString(item, "body");
  e.external = OptionalString(item, "external");
  e.snapshot_root = OptionalString(item, "snapshot_root");
  e.metadata = OptionalString(item, "metadata");
  return e;
}

Status ForEachSheet(EventLog* log, const std::optional<std::string>& only,
                    const std::function<Status(const SheetInfo&)>& visit) {
  if (only) {
    ASSIGN_OR_RETURN(SheetInfo sheet, log->GetSheet(*only, nullptr));
    return visit(sheet);
  }
  for (std::string after;;) {
    ASSIGN_OR_RETURN(std::vector<SheetInfo> sheets, log->ListSheets(after, 100, nullptr));
    if (sheets.empty()) return Status::OK();
    for (const SheetInfo& sheet : sheets) RETURN_IF_ERROR(visit(sheet));
    after = sheets.back().id;
  }
}

SegmentInfo SegmentFromItem(const Item& item) {
  SegmentInfo s;
  s.num = IntOr(item, "num", 0);
  s.first_seq = IntOr(item, "first_seq", 0);
  s.created = IntOr(item, "created", 0);
  s.last_snapshot = OptionalInt(item, "last_snapshot");
  s.archive = OptionalString(item, "archive");
  return s;
}

EventLog::EventLog(Transactions* db, Clock* clock, FaultInjector* faults, Options options)
    : db_(db),
      pending_snapshots_(db),
      clock_(clock),
      faults_(faults),
      options_(options) {}

// ---------------------------------------------------------------------------
// Create Log

Result<SheetInfo> EventLog::CreateLog(const std::string& name, int64_t snapshot_every,
                                      int64_t segment_entries, UnitMeter* meter) {
  SheetInfo sheet;
  sheet.id = NewRandomUuid();  // step 1
  sheet.name = name;
  sheet.created = clock_->NowSeconds();
  sheet.snapshot_every = snapshot_every;
  sheet.segment_entries = segment_entries;

  EntryRecord snapshot;
  snapshot.created = sheet.created;
  snapshot.type = kSnapshotType;

  // Step 2: one transaction for Segment 0 and entry 0, so a log is never half-created.
  Status status = db_->Write([&](Connection& conn) {
    return TransactWrite(
        conn,
        {TransactItem::PutIfAbsent(SheetTable(),
                                   Item{{"id", sheet.id},
                                        {"name", name},
                                        {"created", sheet.created},
                                        {"snapshot_every", snapshot_every},
                                        {"segment_entries", segment_entries},
                                        {"first_seq", 0},
                                        {"snapshot_entry_seq", 0}}),
         TransactItem::PutIfAbsent(SegmentTable(), Item{{"sheet_id", sheet.id},
                                                        {"num", 0},
                                                        {"created", sheet.created},
                                                        {"first_seq", 0}}),
         TransactItem::PutIfAbsent(EntryTable(), EntryItem(sheet.id, snapshot))},
        meter);
  });
  RETURN_IF_ERROR(status);
  return sheet;
}

Result<SheetInfo> EventLog::GetSheet(const std::string& sheet_id, UnitMeter* meter) {
  std::optional<Item> item;
  // One statement: no transaction needed around it.
  RETURN_IF_ERROR(db_->ReadEach([&](Connection& conn) {
    ASSIGN_OR_RETURN(
        item, SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kEventual, meter));
    return Status::OK();
  }));
  if (!item) return NotFound("no sheet " + sheet_id);
  return SheetFromItem(*item);
}

Result<std::vector<SheetInfo>> EventLog::ListSheets(const std::string& after, int limit,
                                                    UnitMeter* meter) {
  std::vector<SheetInfo> sheets;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) {
    std::optional<KeyValues> start;
    if (!after.empty()) start = KeyValues{Value(after)};
    ASSIGN_OR_RETURN(QueryResult page, SheetTable().Scan(conn, start, limit,
                                                         Consistency::kEventual, meter));
    for (const Item& item : page.items) sheets.push_back(SheetFromItem(item));
    return Status::OK();
  }));
  return sheets;
}

Result<EventLog::SheetConfig> EventLog::Config(const std::string& sheet_id,
                                               UnitMeter* meter) {
  {
    MutexLock lock(&cache_mu_);
    auto it = configs_.find(sheet_id);
    if (it != configs_.end()) return it->second;
  }
  ASSIGN_OR_RETURN(SheetInfo sheet, GetSheet(sheet_id, meter));
  SheetConfig config{sheet.snapshot_every, sheet.segment_entries};
  MutexLock lock(&cache_mu_);
  configs_[sheet_id] = config;
  return config;
}

namespace {

// The newest entry before `below_seq` (and at or after `first_seq`) whose metadata
// has a client-set "snapshot", scanning back page by page; nullopt if none.
Result<std::optional<int64_t>> FindClientSnapshot(
    Connection& conn, const std::string& sheet_id,
    const std::vector<SegmentInfo>& segments, int64_t first_seq, int64_t below_seq,
    UnitMeter* meter) {
  for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
    if (it->first_seq >= below_seq) continue;
    QueryRequest query;
    query.partition = {sheet_id, it->num};
    query.sort_to = KeyValues{Value(below_seq - 1 - it->first_seq)};
    query.forward = false;
    query.limit = 100;
    while (true) {
      ASSIGN_OR_RETURN(QueryResult page, EntryTable().Query(conn, query, meter));
      for (const Item& item : page.items) {
        EntryRecord e = EntryFromItem(item);
        if (e.seq < first_seq) return std::optional<int64_t>();
        if (HasClientSnapshot(e.metadata)) return std::optional<int64_t>(e.seq);
      }
      if (!page.last_evaluated) break;
      query.exclusive_start = page.last_evaluated;
    }
    if (it->first_seq <= first_seq) break;
  }
  return std::optional<int64_t>();
}

}  // namespace

Result<EntryRecord> EventLog::SetMetadata(const std::string& sheet_id, int64_t seq,
                                          const std::string& patch_text,
                                          UnitMeter* meter) {
  nlohmann::json patch = ParseJsonOrDiscarded(patch_text);
  if (!patch.is_object()) return InvalidArgument("metadata must be a JSON object");
  for (const auto& [field, value] : patch.items()) {
    if (std::find(std::begin(kEntryMetadataFields), std::end(kEntryMetadataFields),
                  field) == std::end(kEntryMetadataFields)) {
      return InvalidArgument("unknown metadata field '" + field + "'");
    }
    if (!value.is_string() && !value.is_null()) {
      return InvalidArgument("metadata field '" + field + "' must be a string or null");
    }
  }
  if (seq < 0) return OutOfRange("seq must be >= 0, got " + std::to_string(seq));
  EntryRecord entry;
  Status status = db_->Write([&](Connection& conn) -> Status {
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kStrong, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    const int64_t first_seq = IntOr(*sheet, "first_seq", 0);
    const std::optional<int64_t> client_snapshot_seq =
        OptionalInt(*sheet, "client_snapshot_seq");
    ASSIGN_OR_RETURN(Head head, ReadHead(conn, sheet_id, Consistency::kStrong, meter));
    if (seq > head.entry.seq) {
      return OutOfRange("seq " + std::to_string(seq) + " is at or beyond the next seq " +
                        std::to_string(head.entry.seq + 1));
    }
    if (seq < first_seq) {
      return Gone("entries before seq " + std::to_string(first_seq) + " were truncated");
    }
    ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                     QuerySegments(conn, sheet_id, meter));
    const SegmentInfo* segment = nullptr;
    for (const SegmentInfo& s : segments) {
      if (s.first_seq <= seq) segment = &s;
    }
    if (segment == nullptr)
      return Internal("no segment holds seq " + std::to_string(seq));
    const Key key{{sheet_id, segment->num}, {seq - segment->first_seq}};
    ASSIGN_OR_RETURN(std::optional<Item> item,
                     EntryTable().Get(conn, key, Consistency::kStrong, meter));
    if (!item)
      return Internal("sheet " + sheet_id + " has no entry " + std::to_string(seq));
    entry = EntryFromItem(*item);
    if (patch.empty()) return Status::OK();
    nlohmann::json merged = nlohmann::json::object();
    if (entry.metadata) {
      merged = ParseJsonOrDiscarded(*entry.metadata);
      if (!merged.is_object()) merged = nlohmann::json::object();
    }
    for (const auto& [field, value] : patch.items()) merged[field] = value;
    entry.metadata = merged.dump();
    UpdateRequest update;
    update.key = key;
    update.set = {{"metadata", *entry.metadata}};
    update.create_if_missing = false;
    RETURN_IF_ERROR(EntryTable().Update(conn, update, meter).status());

    // Keep the sheet's pointer to the newest client snapshot right.
    std::optional<int64_t> newest = client_snapshot_seq;
    if (HasClientSnapshot(entry.metadata)) {
      if (!newest || *newest < seq) newest = seq;
    } else if (newest && *newest == seq) {
      ASSIGN_OR_RETURN(
          newest, FindClientSnapshot(conn, sheet_id, segments, first_seq, seq, meter));
    }
    if (newest == client_snapshot_seq) return Status::OK();
    UpdateRequest pointer;
    pointer.key = Key{{sheet_id}, {}};
    if (newest) {
      pointer.set = {{"client_snapshot_seq", *newest}};
    } else {
      pointer.remove = {"client_snapshot_seq"};
    }
    pointer.create_if_missing = false;
    return SheetTable().Update(conn, pointer, meter).status();
  });
  RETURN_IF_ERROR(status);
  return entry;
}

Status EventLog::CompleteSnapshot(const std::string& sheet_id, int64_t segment,
                                  int64_t num, const std::string& root,
                                  UnitMeter* meter) {
  return db_->Write([&](Connection& conn) -> Status {
    UpdateRequest entry_update;
    entry_update.key = Key{{sheet_id, segment}, {num}};
    entry_update.set = {{"snapshot_root", root}};
    entry_update.conditions = {Condition::Equals("type", kSnapshotType)};
    entry_update.create_if_missing = false;
    RETURN_IF_ERROR(EntryTable().Update(conn, entry_update, meter).status());

    ASSIGN_OR_RETURN(std::optional<Item> seg,
                     SegmentTable().Get(conn, Key{{sheet_id}, {segment}},
                                        Consistency::kStrong, meter));
    if (!seg) return NotFound("no segment " + std::to_string(segment));
    std::optional<int64_t> last = OptionalInt(*seg, "last_snapshot");
    if (last && *last >= num) return Status::OK();  // never move backwards
    UpdateRequest segment_update;
    segment_update.key = Key{{sheet_id}, {segment}};
    segment_update.set = {{"last_snapshot", num}};
    segment_update.conditions = {last ? Condition::Equals("last_snapshot", *last)
                                      : Condition::NotExists("last_snapshot")};
    segment_update.create_if_missing = false;
    return SegmentTable().Update(conn, segment_update, meter).status();
  });
}

Result<std::vector<std::string>> EventLog::DeleteSheet(const std::string& sheet_id,
                                                       UnitMeter* meter) {
  std::vector<std::string> blobs;
  Status status = db_->Write([&](Connection& conn) -> Status {
    blobs.clear();  // filled afresh on every run of the transaction
    ASSIGN_OR_RETURN(
        std::optional<Item> sheet,
        SheetTable().Get(conn, Key{{sheet_id}, {}}, Consistency::kStrong, meter));
    if (!sheet) return NotFound("no sheet " + sheet_id);
    // An exact truncation's base snapshot.
    if (std::optional<std::string> base = OptionalString(*sheet, "base_root")) {
      blobs.push_back(*base);
    }
    ASSIGN_OR_RETURN(std::vector<SegmentInfo> segments,
                     QuerySegments(conn, sheet_id, meter));
    for (const SegmentInfo& seg : segments) {
      if (seg.archive) blobs.push_back(*seg.archive);
      std::vector<EntryRecord> entries;
      RETURN_IF_ERROR(QuerySegmentEntries(conn, sheet_id, seg.num, 0, -1,
                                          static_cast<size_t>(-1), options_.page_size,
                                          meter, &entries));
      for (const EntryRecord& e : entries) {
        if (e.external) blobs.push_back(*e.external);
        if (e.snapshot_root) blobs.push_back(*e.snapshot_root);
        RETURN_IF_ERROR(
            EntryTable().Delete(conn, Key{{sheet_id, seg.num}, {e.num}}, {}, meter));
      }
      RETURN_IF_ERROR(SegmentTable().Delete(conn, Key{{sheet_id}, {seg.num}}, {}, meter));
    }
    RETURN_IF_ERROR(DeleteAllPendingSnapshots(conn, sheet_id, meter));
    // Upload rows and the tombstone that makes the blob purge crash-safe: committed
    // with the rest, or not at all.
    RETURN_IF_ERROR(RecordSheetDeletion(conn, sheet_id, clock_->NowSeconds()));
    return SheetTable().Delete(conn, Key{{sheet_id}, {}}, {}, meter);
  });
  RETURN_IF_ERROR(status);
  MutexLock lock(&cache_mu_);
  configs_.erase(sheet_id);
  return blobs;
}

Result<int64_t> EventLog::DeleteAll(Connection& conn) {
  RETURN_IF_ERROR(DeleteEveryPendingSnapshot(conn));
  RETURN_IF_ERROR(EntryTable().DeleteAll(conn).status());
  RETURN_IF_ERROR(SegmentTable().DeleteAll(conn).status());
  return SheetTable().DeleteAll(conn);
}

}  // namespace sheetlog
