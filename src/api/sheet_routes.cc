#include "src/api/sheet_routes.h"

#include <spdlog/spdlog.h>

#include <set>

#include "emulator/blob/blob_store.h"
#include "src/api/json_input.h"
#include "src/api/request_params.h"
#include "src/log/event_log.h"
#include "src/log/pending_snapshots.h"
#include "src/log/sheet_blobs.h"
#include "src/log/tables.h"
#include "src/log/uploads.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/head_view_cache.h"
#include "src/snapshot/sheet_view.h"
#include "src/snapshot/snapshot_layout.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog::api {

namespace {

// Most bytes of external bodies one GET .../entries?body=inline page inlines.
constexpr int64_t kInlinePageBytes = 4 << 20;

json SheetJson(const SheetInfo& sheet) {
  return json{{"id", sheet.id}, {"name", sheet.name}, {"created", sheet.created}};
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

// Validates an entry body before anything is written (built-in types must parse now:
// a bad body is a 400 here, never a failure later in the snapshot pipeline) and fills
// request->body with its canonical encoding.
void PrepareEntryBody(const std::string& type, int64_t version, const json& body,
                      AppendRequest* request) {
  Check(ValidateAppend(type, version, body));
  if (type == "Import") {
    throw ApiError::Validation(
        "Import: the file travels as an upload: POST /v1/sheets/{id}/uploads with this "
        "body, PUT the file to the returned url, then POST .../complete");
  }
  if (!body.is_null()) request->body = body.dump();
}

// A lost append condition (expect_seq) says where the log is: api.md's "next_seq".
ApiError AppendError(const Status& status, int64_t next_seq) {
  json extra = json::object();
  if (status.IsConditionFailed() && next_seq >= 0) extra["next_seq"] = next_seq;
  return ApiError::FromStatus(status, extra);
}

}  // namespace

void SheetRoutes::AddTo(Router& router) {
  AddRoutes<SheetRoutes>(
      router, this,
      {
          {"POST", "/v1/sheets", &SheetRoutes::CreateSheet},
          {"GET", "/v1/sheets", &SheetRoutes::ListSheets},
          {"GET", R"(/v1/sheets/([^/]+))", &SheetRoutes::GetSheet},
          {"DELETE", R"(/v1/sheets/([^/]+))", &SheetRoutes::DeleteSheet},
          {"POST", R"(/v1/sheets/([^/]+)/entries)", &SheetRoutes::AppendEntry},
          {"GET", R"(/v1/sheets/([^/]+)/entries)", &SheetRoutes::ReadEntries},
          {"GET", R"(/v1/sheets/([^/]+)/entries/(\d+))", &SheetRoutes::GetEntry},
          {"PATCH", R"(/v1/sheets/([^/]+)/entries/(\d+))", &SheetRoutes::SetMetadata},
          {"GET", R"(/v1/sheets/([^/]+)/load)", &SheetRoutes::Load},
          {"POST", R"(/v1/sheets/([^/]+)/truncate)", &SheetRoutes::Truncate},
          {"POST", R"(/v1/sheets/([^/]+)/segments)", &SheetRoutes::CreateSegment},
          {"POST", R"(/v1/sheets/([^/]+)/fork)", &SheetRoutes::Fork},
      });
}

json SheetRoutes::FirstSeqOf(const std::string& id, UnitMeter* meter) {
  return Check(log_.GetSheet(id, meter)).first_seq;
}

void SheetRoutes::CreateSheet(Call& call) {
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
      Check(log_.CreateLog(name, snapshot_every, segment_entries, &call.meter));
  json out = SheetJson(sheet);
  out["next_seq"] = 1;
  out["snapshot_every"] = snapshot_every;
  out["segment_entries"] = segment_entries;
  call.Reply(201, out);
}

void SheetRoutes::Fork(Call& call) {
  std::string id = SheetId(call);
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<int64_t> at = fields.Int("at");
  std::optional<std::string> name = fields.String("name");
  fields.Finish();
  if (at && (*at < 0 || *at > kMaxSeq)) {
    throw ApiError::Range("at is out of range: " + std::to_string(*at));
  }
  if (name && name->size() > 1024) {
    throw ApiError::Validation("name is longer than 1024 bytes");
  }
  EventLog::ForkRequest request;
  request.source_id = id;
  request.at = at;
  request.name = name.value_or("");
  // The fork holds its shared snapshots' chunks as well as their roots.
  request.snapshot_objects =
      [this](const std::string& root) -> Result<std::vector<std::string>> {
    ASSIGN_OR_RETURN(std::string text, blobs_->Get(root));
    ASSIGN_OR_RETURN(SnapshotManifest manifest, SnapshotManifest::FromJson(text));
    std::vector<std::string> keys;
    for (const ChunkInfo& chunk : manifest.chunks) keys.push_back(chunk.key);
    return keys;
  };
  Result<SheetInfo> fork = log_.Fork(request, &call.meter);
  if (!fork.ok()) {
    // api.md: a refused `at` names the valid range.
    json extra = json::object();
    if (fork.status().code() == StatusCode::kGone ||
        fork.status().code() == StatusCode::kOutOfRange) {
      Result<SheetInfo> source = log_.GetSheet(id, &call.meter);
      Result<int64_t> next_seq = log_.NextSeq(id, &call.meter);
      if (source.ok()) extra["first_seq"] = source->first_seq;
      if (next_seq.ok()) extra["next_seq"] = *next_seq;
    }
    throw ApiError::FromStatus(fork.status(), extra);
  }
  const int64_t next_seq = Check(log_.NextSeq(fork->id, &call.meter));
  json out = SheetJson(*fork);
  out["next_seq"] = next_seq;
  out["first_seq"] = fork->first_seq;
  out["fork_of"] = id;
  out["snapshot_every"] = fork->snapshot_every;
  out["segment_entries"] = fork->segment_entries;
  call.Reply(201, out);
}

void SheetRoutes::ListSheets(Call& call) {
  const int limit = QueryLimit(call, 100, 1000);
  std::string after = call.Query("after").value_or("");
  std::vector<SheetInfo> sheets = Check(log_.ListSheets(after, limit + 1, &call.meter));
  json next = nullptr;
  if (static_cast<int64_t>(sheets.size()) > limit) {
    sheets.resize(limit);
    next = sheets.back().id;
  }
  json list = json::array();
  for (const SheetInfo& s : sheets) list.push_back(SheetJson(s));
  call.Reply(200, json{{"sheets", list}, {"next", next}});
}

void SheetRoutes::GetSheet(Call& call) {
  std::string id = SheetId(call);
  SheetInfo sheet = Check(log_.GetSheet(id, &call.meter));
  std::vector<SegmentInfo> segments = Check(log_.ListSegments(id, &call.meter));
  int64_t next_seq = Check(log_.NextSeq(id, &call.meter));
  // One rule with entry reads and from=snapshot (api.md): the newer of the newest
  // completed Snapshot entry and the newest entry with a client-set snapshot.
  std::optional<SnapshotRef> snapshot = Check(log_.LastSnapshot(id, &call.meter));
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
  out["fork_of"] = sheet.fork_of ? json(*sheet.fork_of) : json(nullptr);
  out["snapshot_every"] = sheet.snapshot_every;
  out["segment_entries"] = sheet.segment_entries;
  out["segments"] = segs;
  out["last_snapshot"] = LastSnapshotJson(snapshot);
  out["pending_snapshots"] =
      static_cast<int64_t>(Check(log_.pending_snapshots()->List(id, &call.meter)).size());
  call.Reply(200, out);
}

void SheetRoutes::DeleteSheet(Call& call) {
  std::string id = SheetId(call);
  // The rows and the tombstone commit in one transaction: from then on the sheet is
  // gone for every client, so that is when the request is answered. The purge of
  // every object under the sheet's prefixes runs in the background (a crash midway
  // is resumed at the next start).
  (void)Check(log_.DeleteSheet(id, &call.meter));
  purge_deleted_sheets_();
  call.NoContent();
}

void SheetRoutes::AppendEntry(Call& call) {
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
  if (type->size() > 64) {
    throw ApiError::Validation("field 'type' is longer than 64 bytes");
  }
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
  PrepareEntryBody(*type, version, entry_body.value_or(json(nullptr)), &request);
  // The worker does not wait for the commit: the reply is sent by whichever thread
  // commits the entry's batch, once it is durable (EventLog::AddEntryAsync). The
  // router waits for every deferred reply before the services go
  // (Router::WaitForDeferredReplies), so `this` outlives the completion.
  std::shared_ptr<DeferredReply> reply = call.Defer();
  uploads_.AppendAsync(
      std::move(request), reply->meter(),
      [this, id, reply](Result<AppendResult> result, int64_t next_seq) {
        reply->Complete([&] {
          if (!result.ok()) throw AppendError(result.status(), next_seq);
          json out = AppendResultJson(*result);
          // The seq after this entry and any entries the server's policies appended
          // right after it, so a client appends again without reading first.
          out["next_seq"] = result->entry.seq + 1 + (result->snapshot_appended ? 1 : 0) +
                            (result->segment_created ? 2 : 0);
          out["last_snapshot"] = LastSnapshotJson(
              result->last_snapshot_read ? result->last_snapshot
                                         : Check(log_.LastSnapshot(id, reply->meter())));
          reply->Reply(201, out);
        });
      });
}

void SheetRoutes::ReadEntries(Call& call) {
  std::string id = SheetId(call);
  std::string from_text = call.Query("from").value_or("start");
  std::string to_text = call.Query("to").value_or("end");
  const int limit = QueryLimit(call, 100, 1000);
  std::optional<SnapshotRef> snapshot = Check(log_.LastSnapshot(id, &call.meter));
  int64_t from = 0;
  if (from_text == "start") {
    from = Check(log_.GetSheet(id, &call.meter)).first_seq;
  } else if (from_text == "snapshot") {
    from = snapshot ? snapshot->seq : Check(log_.GetSheet(id, &call.meter)).first_seq;
  } else {
    from = ParseSeq("from", from_text);
  }
  std::optional<int64_t> to;
  if (to_text != "end") to = ParseSeq("to", to_text);
  Result<ReadRange> range = log_.Read(id, from, to, limit, &call.meter);
  if (!range.ok()) {
    json extra = json::object();
    if (range.status().code() == StatusCode::kGone) {
      extra["first_seq"] = FirstSeqOf(id, &call.meter);
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
    json entry = entries_.Entry(e);
    if (inline_bodies && e.external) {
      const json& size = entry["external"]["size"];
      if (size.is_number_integer() && size.get<int64_t>() <= kInlinePageBytes) {
        if (inlined_bytes + size.get<int64_t>() > kInlinePageBytes) {
          complete = false;
          next = e.seq;
          break;
        }
        inlined_bytes += size.get<int64_t>();
        entry["body"] = entries_.InlineBody(e);
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
}

void SheetRoutes::GetEntry(Call& call) {
  std::string id = SheetId(call);
  int64_t seq = ParseSeq("seq", call.Path(2));
  EntryRecord entry = Check(log_.GetEntry(id, seq, &call.meter));
  json out = entries_.Entry(entry);
  if (call.Query("body").value_or("") == "inline" && entry.external) {
    out["body"] = entries_.InlineBody(entry);
  }
  call.Reply(200, out);
}

// infinisheet's setMetadata. A seq at or beyond the next seq is a RangeError (400),
// one before first_seq Gone (410).
void SheetRoutes::SetMetadata(Call& call) {
  std::string id = SheetId(call);
  int64_t seq = ParseSeq("seq", call.Path(2));
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<std::string> metadata = MetadataFields(fields);
  fields.Finish();
  Result<EntryRecord> entry =
      log_.SetMetadata(id, seq, metadata.value_or("{}"), &call.meter);
  if (!entry.ok()) {
    json extra = json::object();
    if (entry.status().code() == StatusCode::kGone) {
      extra["first_seq"] = FirstSeqOf(id, &call.meter);
    }
    throw ApiError::FromStatus(entry.status(), extra);
  }
  call.Reply(200, entries_.Entry(*entry));
}

void SheetRoutes::Load(Call& call) {
  std::string id = SheetId(call);
  LoadResult load = Check(log_.Load(id, &call.meter));
  json entries = json::array();
  for (const EntryRecord& e : load.entries) entries.push_back(entries_.Entry(e));
  json snapshot = nullptr;
  if (load.snapshot && load.snapshot->snapshot_root) {
    snapshot =
        json{{"seq", load.snapshot->seq},
             {"root", *load.snapshot->snapshot_root},
             {"manifest_url", entries_.ManifestUrl(*load.snapshot->snapshot_root)}};
  }
  call.Reply(
      200,
      json{{"snapshot", snapshot}, {"entries", entries}, {"next_seq", load.next_seq}});
}

void SheetRoutes::Truncate(Call& call) {
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
  SheetInfo sheet = Check(log_.GetSheet(id, &call.meter));
  const int64_t next_seq = Check(log_.NextSeq(id, &call.meter));
  if (*before_seq < sheet.first_seq || *before_seq > next_seq) {
    throw ApiError::Range(
        "before_seq " + std::to_string(*before_seq) + " is outside the retained log [" +
        std::to_string(sheet.first_seq) + ", " + std::to_string(next_seq) + "]");
  }
  std::optional<std::string> base_root;
  if (*before_seq > sheet.first_seq) {
    base_root = Check(BuildStateBefore(&log_, blobs_, id, *before_seq, &call.meter));
  }
  // On failure (a concurrent truncation) the base objects stay: their keys are fixed
  // by the cut, so a retry, or the winner at the same cut, uses them.
  TruncateResult truncated = Check(log_.TruncateExact(
      id, *before_seq, base_root, archive ? blobs_ : nullptr, &call.meter));
  // A head view kept loaded may start from a snapshot released here: drop it before
  // the objects go, so the next read opens the sheet from what is retained.
  head_views_.Forget(id);
  // Forks keep what they share (read after the truncation committed); a fork's
  // truncation never deletes its source's objects.
  std::set<std::string> held = Check(log_.HeldBlobs(&call.meter));
  DeleteBlobsBestEffort(DeletableBlobs(truncated.released_blobs, id, held));
  call.Reply(200, json{{"first_seq", truncated.first_seq},
                       {"dropped_segments", truncated.dropped_segments},
                       {"dropped_entries", truncated.dropped_entries},
                       {"archives", truncated.archives}});
}

void SheetRoutes::CreateSegment(Call& call) {
  std::string id = SheetId(call);
  json body = call.Body();
  FieldReader(body, "request body").Finish();
  SegmentInfo segment = Check(log_.CreateNewSegment(id, &call.meter));
  call.Reply(201, json{{"segment", segment.num}, {"first_seq", segment.first_seq}});
}

void SheetRoutes::DeleteBlobsBestEffort(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    // A snapshot root takes its chunks with it.
    Status deleted = key.rfind("snapshots/", 0) == 0 ? DeleteSnapshotObjects(blobs_, key)
                                                     : blobs_->Delete(key);
    if (!deleted.ok()) {
      spdlog::warn("could not delete blob {} (the lifecycle sweep does not cover it): {}",
                   key, deleted.ToString());
    }
  }
}

}  // namespace sheetlog::api
