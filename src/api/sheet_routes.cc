// Routes of api.md sections "Sheets" and "Entries".
#include <spdlog/spdlog.h>

#include "emulator/env/uuid.h"
#include "src/api/json_input.h"
#include "src/api/routes.h"
#include "src/app/app.h"
#include "src/log/event_log.h"
#include "src/log/sheet_deletion.h"
#include "src/log/tables.h"
#include "src/snapshot/head_view_cache.h"
#include "src/snapshot/sheet_view.h"

namespace sheetlog::api {

namespace {

constexpr int64_t kMaxSeq = (1LL << 53) - 1;
// Most bytes of external bodies one GET .../entries?body=inline page inlines.
constexpr int64_t kInlinePageBytes = 4 << 20;

json SheetJson(const SheetInfo& sheet) {
  return json{{"id", sheet.id}, {"name", sheet.name}, {"created", sheet.created}};
}

// Translates a Status from the log, attaching next_seq / first_seq where api.md wants.
[[noreturn]] void Fail(const Status& status, int64_t next_seq = -1) {
  json extra = json::object();
  if (status.IsConditionFailed() && next_seq >= 0) extra["next_seq"] = next_seq;
  throw ApiError::FromStatus(status, extra);
}

template <typename T>
T Must(Result<T> result) {
  if (!result.ok()) Fail(result.status());
  return std::move(result).value();
}

}  // namespace

std::string CheckedSheetId(const std::string& id) {
  if (!IsUuid(id))
    throw ApiError::NotFound("no sheet '" + id + "' (sheet ids are UUIDs)");
  return id;
}

std::string SheetId(Call& call) { return CheckedSheetId(call.Path(1)); }

// seq query parameter: a non-negative integer below 2^53.
int64_t ParseSeq(const std::string& name, const std::string& text) {
  std::optional<int64_t> value = ParseInt(text);
  if (!value) {
    throw ApiError::Validation("query parameter '" + name +
                               "' must be an integer, got '" + text + "'");
  }
  if (*value < 0 || *value > kMaxSeq) {
    throw ApiError::Range("query parameter '" + name + "' is out of range: " + text);
  }
  return *value;
}

json EntryJson(App& app, const EntryRecord& e) {
  json out{{"seq", e.seq},         {"segment", e.segment}, {"num", e.num},
           {"created", e.created}, {"type", e.type},       {"version", e.version}};
  out["body"] = e.body ? StoredJsonForReply(*e.body) : json(nullptr);
  out["external"] = e.external ? ExternalJson(app, *e.external) : json(nullptr);
  out["snapshot_root"] = e.snapshot_root ? json(*e.snapshot_root) : json(nullptr);
  // Metadata fields appear once set: a string, or null after being cleared.
  if (e.metadata) {
    json metadata = json::parse(*e.metadata, nullptr, false);
    if (metadata.is_object()) {
      for (const auto& [field, value] : metadata.items()) out[field] = value;
    }
  }
  return out;
}

json AppendResultJson(const AppendResult& result) {
  const EntryRecord& e = result.entry;
  return json{{"seq", e.seq},
              {"segment", e.segment},
              {"num", e.num},
              {"created", e.created},
              {"external", e.external ? json(*e.external) : json(nullptr)}};
}

// last_snapshot of entry reads and appends: {"seq", "root"} for a completed Snapshot
// entry ("root": null when the newest is a client-set one), plus "snapshot" when the
// entry carries client-set snapshot metadata.
json LastSnapshotJson(const std::optional<SnapshotRef>& snapshot) {
  if (!snapshot) return nullptr;
  json out{{"seq", snapshot->seq},
           {"root", snapshot->root ? json(*snapshot->root) : json(nullptr)}};
  if (snapshot->snapshot) out["snapshot"] = *snapshot->snapshot;
  return out;
}

// The metadata fields of a request body ("snapshot", "history", "pending": string or
// null) as a JSON object text; nullopt when none is given.
std::optional<std::string> MetadataFields(FieldReader& fields) {
  json metadata = json::object();
  for (const char* field : kEntryMetadataFields) {
    std::optional<json> value = fields.Any(field);
    if (!value) continue;
    if (!value->is_string() && !value->is_null()) {
      throw ApiError::Validation(std::string("field '") + field +
                                 "' must be a string or null");
    }
    if (value->is_string() && value->get<std::string>().size() > 1024) {
      throw ApiError::Validation(std::string("field '") + field +
                                 "' is longer than 1024 bytes");
    }
    metadata[field] = *value;
  }
  if (metadata.empty()) return std::nullopt;
  return metadata.dump();
}

void RegisterSheetRoutes(Router& router, App& app) {
  EventLog& log = *app.log();

  router.Post("/v1/sheets", [&](Call& call) {
    json body = call.Body();
    FieldReader fields(body, "request body");
    std::string name = fields.String("name").value_or("");
    int64_t snapshot_every = fields.Int("snapshot_every", 100);
    int64_t segment_entries = fields.Int("segment_entries", 10000);
    fields.Finish();
    if (snapshot_every < 0) throw ApiError::Validation("snapshot_every must be >= 0");
    if (segment_entries < 2) throw ApiError::Validation("segment_entries must be >= 2");
    if (name.size() > 1024) throw ApiError::Validation("name is longer than 1024 bytes");
    SheetInfo sheet =
        Must(log.CreateLog(name, snapshot_every, segment_entries, &call.meter));
    json out = SheetJson(sheet);
    out["next_seq"] = 1;
    out["snapshot_every"] = snapshot_every;
    out["segment_entries"] = segment_entries;
    call.Reply(201, out);
  });

  router.Get("/v1/sheets", [&](Call& call) {
    int64_t limit = 100;
    if (auto text = call.Query("limit")) {
      auto parsed = ParseInt(*text);
      if (!parsed || *parsed < 1 || *parsed > 1000) {
        throw ApiError::Validation("limit must be an integer in 1..1000");
      }
      limit = *parsed;
    }
    std::string after = call.Query("after").value_or("");
    std::vector<SheetInfo> sheets =
        Must(log.ListSheets(after, static_cast<int>(limit) + 1, &call.meter));
    json next = nullptr;
    if (static_cast<int64_t>(sheets.size()) > limit) {
      sheets.resize(limit);
      next = sheets.back().id;
    }
    json list = json::array();
    for (const SheetInfo& s : sheets) list.push_back(SheetJson(s));
    call.Reply(200, json{{"sheets", list}, {"next", next}});
  });

  router.Get(R"(/v1/sheets/([^/]+))", [&](Call& call) {
    std::string id = SheetId(call);
    SheetInfo sheet = Must(log.GetSheet(id, &call.meter));
    std::vector<SegmentInfo> segments = Must(log.ListSegments(id, &call.meter));
    int64_t next_seq = Must(log.NextSeq(id, &call.meter));
    // One rule with entry reads and from=snapshot (api.md): the newer of the newest
    // completed Snapshot entry and the newest entry with a client-set snapshot.
    std::optional<SnapshotRef> snapshot = Must(log.LastSnapshot(id, &call.meter));
    json segs = json::array();
    for (const SegmentInfo& s : segments) {
      segs.push_back(
          json{{"num", s.num},
               {"first_seq", s.first_seq},
               {"created", s.created},
               {"last_snapshot",
                s.last_snapshot ? json(s.first_seq + *s.last_snapshot) : json(nullptr)},
               {"archive", s.archive ? json(*s.archive) : json(nullptr)}});
    }
    json out = SheetJson(sheet);
    out["first_seq"] = sheet.first_seq;
    out["next_seq"] = next_seq;
    out["snapshot_every"] = sheet.snapshot_every;
    out["segment_entries"] = sheet.segment_entries;
    out["segments"] = segs;
    out["last_snapshot"] = LastSnapshotJson(snapshot);
    out["pending_snapshots"] = PendingSnapshotCount(app, id, &call.meter);
    call.Reply(200, out);
  });

  router.Delete(R"(/v1/sheets/([^/]+))", [&](Call& call) {
    std::string id = SheetId(call);
    // The rows and the tombstone commit in one transaction: from then on the sheet is
    // gone for every client, so that is when the request is answered. The purge of
    // every object under the sheet's prefixes runs in the background (a crash midway
    // is resumed at the next start).
    (void)Must(log.DeleteSheet(id, &call.meter));
    app.PurgeDeletedSheets();
    call.NoContent();
  });

  router.Post(R"(/v1/sheets/([^/]+)/entries)", [&](Call& call) {
    std::string id = SheetId(call);
    json body = call.Body();
    FieldReader fields(body, "request body");
    std::optional<std::string> type = fields.String("type");
    int64_t version = fields.Int("version", 1);
    std::optional<json> entry_body = fields.Any("body");
    std::optional<int64_t> expect_seq = fields.Int("expect_seq");
    std::optional<std::string> metadata = MetadataFields(fields);
    fields.Finish();
    if (!type || type->empty()) throw ApiError::Validation("field 'type' is required");
    if (type->size() > 64)
      throw ApiError::Validation("field 'type' is longer than 64 bytes");
    if (*type == kSnapshotType || *type == kEndSegmentType) {
      throw ApiError::Validation("entry type '" + *type + "' is reserved for the system");
    }
    if (version < 1 || version > 1000000) {
      throw ApiError::Validation("field 'version' must be in 1..1000000");
    }
    if (expect_seq && (*expect_seq < 0 || *expect_seq > kMaxSeq)) {
      throw ApiError::Range("expect_seq is out of range");
    }
    AppendRequest request;
    request.sheet_id = id;
    request.type = *type;
    request.version = version;
    request.expect_seq = expect_seq;
    request.metadata = metadata;
    request.read_last_snapshot = true;
    PrepareEntryBody(app, *type, version, entry_body.value_or(json(nullptr)), &request,
                     &call.meter);
    // The worker does not wait for the commit: the reply is sent by whichever thread
    // commits the entry's batch, once it is durable (EventLog::AddEntryAsync).
    std::shared_ptr<DeferredReply> reply = call.Defer();
    app.uploads()->AppendAsync(
        std::move(request), reply->meter(),
        [&log, id, reply](Result<AppendResult> result, int64_t next_seq) {
          reply->Complete([&] {
            if (!result.ok()) Fail(result.status(), next_seq);
            json out = AppendResultJson(*result);
            // The seq after this entry and any entries the server's policies appended
            // right after it, so a client appends again without reading first.
            out["next_seq"] = result->entry.seq + 1 +
                              (result->snapshot_appended ? 1 : 0) +
                              (result->segment_created ? 2 : 0);
            out["last_snapshot"] = LastSnapshotJson(
                result->last_snapshot_read ? result->last_snapshot
                                           : Must(log.LastSnapshot(id, reply->meter())));
            reply->Reply(201, out);
          });
        });
  });

  router.Get(R"(/v1/sheets/([^/]+)/entries)", [&](Call& call) {
    std::string id = SheetId(call);
    std::string from_text = call.Query("from").value_or("start");
    std::string to_text = call.Query("to").value_or("end");
    int64_t limit = 100;
    if (auto text = call.Query("limit")) {
      auto parsed = ParseInt(*text);
      if (!parsed || *parsed < 1 || *parsed > 1000) {
        throw ApiError::Validation("limit must be an integer in 1..1000");
      }
      limit = *parsed;
    }
    std::optional<SnapshotRef> snapshot = Must(log.LastSnapshot(id, &call.meter));
    int64_t from = 0;
    if (from_text == "start") {
      from = Must(log.GetSheet(id, &call.meter)).first_seq;
    } else if (from_text == "snapshot") {
      from = snapshot ? snapshot->seq : Must(log.GetSheet(id, &call.meter)).first_seq;
    } else {
      from = ParseSeq("from", from_text);
    }
    std::optional<int64_t> to;
    if (to_text != "end") to = ParseSeq("to", to_text);
    Result<ReadRange> range =
        log.Read(id, from, to, static_cast<int>(limit), &call.meter);
    if (!range.ok()) {
      json extra = json::object();
      if (range.status().code() == StatusCode::kGone) {
        extra["first_seq"] = Must(log.GetSheet(id, &call.meter)).first_seq;
      }
      throw ApiError::FromStatus(range.status(), extra);
    }
    // ?body=inline: bodies kept in the blob store (over --inline-limit) come inline,
    // as on the single-entry route, within kInlinePageBytes per page. The entry whose
    // body would pass that budget ends the page early (complete false, next = its seq),
    // so a page never holds more than the budget of external bodies; a body larger than
    // the budget by itself (an upload) is never inlined and stays a reference.
    const bool inline_bodies = call.Query("body").value_or("") == "inline";
    int64_t inlined_bytes = 0;
    bool complete = range->complete;
    int64_t next = range->next;
    json entries = json::array();
    for (const EntryRecord& e : range->entries) {
      json entry = EntryJson(app, e);
      if (inline_bodies && e.external) {
        const json& size = entry["external"]["size"];
        if (size.is_number_integer() && size.get<int64_t>() <= kInlinePageBytes) {
          if (inlined_bytes + size.get<int64_t>() > kInlinePageBytes) {
            complete = false;
            next = e.seq;
            break;
          }
          inlined_bytes += size.get<int64_t>();
          entry["body"] = InlineExternalBody(app, e, &call.meter);
        }
      }
      entries.push_back(std::move(entry));
    }
    call.Reply(200, json{{"from", range->from},
                         {"to", to ? json(*to) : json(range->to)},
                         {"complete", complete},
                         {"next", next},
                         {"entries", entries},
                         {"last_snapshot", LastSnapshotJson(snapshot)}});
  });

  router.Get(R"(/v1/sheets/([^/]+)/entries/(\d+))", [&](Call& call) {
    std::string id = SheetId(call);
    int64_t seq = ParseSeq("seq", call.Path(2));
    EntryRecord entry = Must(log.GetEntry(id, seq, &call.meter));
    json out = EntryJson(app, entry);
    if (call.Query("body").value_or("") == "inline" && entry.external) {
      out["body"] = InlineExternalBody(app, entry, &call.meter);
    }
    call.Reply(200, out);
  });

  // infinisheet's setMetadata. A seq at or beyond the next seq is a RangeError (400),
  // one before first_seq Gone (410).
  router.Patch(R"(/v1/sheets/([^/]+)/entries/(\d+))", [&](Call& call) {
    std::string id = SheetId(call);
    int64_t seq = ParseSeq("seq", call.Path(2));
    json body = call.Body();
    FieldReader fields(body, "request body");
    std::optional<std::string> metadata = MetadataFields(fields);
    fields.Finish();
    Result<EntryRecord> entry =
        log.SetMetadata(id, seq, metadata.value_or("{}"), &call.meter);
    if (!entry.ok()) {
      json extra = json::object();
      if (entry.status().code() == StatusCode::kGone) {
        extra["first_seq"] = Must(log.GetSheet(id, &call.meter)).first_seq;
      }
      throw ApiError::FromStatus(entry.status(), extra);
    }
    call.Reply(200, EntryJson(app, *entry));
  });

  router.Get(R"(/v1/sheets/([^/]+)/load)", [&](Call& call) {
    std::string id = SheetId(call);
    LoadResult load = Must(log.Load(id, &call.meter));
    json entries = json::array();
    for (const EntryRecord& e : load.entries) entries.push_back(EntryJson(app, e));
    json snapshot = nullptr;
    if (load.snapshot && load.snapshot->snapshot_root) {
      snapshot = json{{"seq", load.snapshot->seq},
                      {"root", *load.snapshot->snapshot_root},
                      {"manifest_url", ManifestUrl(app, *load.snapshot->snapshot_root)}};
    }
    call.Reply(
        200,
        json{{"snapshot", snapshot}, {"entries", entries}, {"next_seq", load.next_seq}});
  });

  router.Post(R"(/v1/sheets/([^/]+)/truncate)", [&](Call& call) {
    std::string id = SheetId(call);
    json body = call.Body();
    FieldReader fields(body, "request body");
    std::optional<int64_t> before_seq = fields.Int("before_seq");
    const bool archive = fields.Bool("archive").value_or(false);
    fields.Finish();
    if (!before_seq) throw ApiError::Validation("field 'before_seq' is required");
    if (*before_seq < 0 || *before_seq > kMaxSeq) {
      throw ApiError::Range("before_seq is out of range: " + std::to_string(*before_seq));
    }
    // Exact (infinisheet's truncate): the state before the cut is built first, as the
    // sheet's base, so cells reads at and after the cut keep working.
    SheetInfo sheet = Must(log.GetSheet(id, &call.meter));
    const int64_t next_seq = Must(log.NextSeq(id, &call.meter));
    if (*before_seq < sheet.first_seq || *before_seq > next_seq) {
      throw ApiError::Range(
          "before_seq " + std::to_string(*before_seq) + " is outside the retained log [" +
          std::to_string(sheet.first_seq) + ", " + std::to_string(next_seq) + "]");
    }
    std::optional<std::string> base_root;
    if (*before_seq > sheet.first_seq) {
      base_root = Must(BuildStateBefore(&log, app.blobs(), id, *before_seq, &call.meter));
    }
    Result<TruncateResult> truncated = log.TruncateExact(
        id, *before_seq, base_root, archive ? app.blobs() : nullptr, &call.meter);
    // On failure (a concurrent truncation) the base objects stay: their keys are
    // fixed by the cut, so a retry, or the winner at the same cut, uses them.
    if (!truncated.ok()) Fail(truncated.status());
    // A head view kept loaded may start from a snapshot released here: drop it before
    // the objects go, so the next read opens the sheet from what is retained.
    app.head_views()->Forget(id);
    DeleteBlobsBestEffort(app, truncated->released_blobs);
    call.Reply(200, json{{"first_seq", truncated->first_seq},
                         {"dropped_segments", truncated->dropped_segments},
                         {"dropped_entries", truncated->dropped_entries},
                         {"archives", truncated->archives}});
  });

  router.Post(R"(/v1/sheets/([^/]+)/segments)", [&](Call& call) {
    std::string id = SheetId(call);
    json body = call.Body();
    FieldReader(body, "request body").Finish();
    SegmentInfo segment = Must(log.CreateNewSegment(id, &call.meter));
    call.Reply(201, json{{"segment", segment.num}, {"first_seq", segment.first_seq}});
  });
}

}  // namespace sheetlog::api
