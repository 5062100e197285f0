#include "src/api/blob_routes.h"

#include <spdlog/spdlog.h>

#include "emulator/blob/blob_lifecycle.h"
#include "emulator/blob/blob_presigner.h"
#include "emulator/blob/blob_store.h"
#include "emulator/env/uuid.h"
#include "src/api/byte_range.h"
#include "src/api/entry_json.h"
#include "src/api/json_input.h"
#include "src/api/request_params.h"
#include "src/log/sheet_blobs.h"
#include "src/log/sheet_deletion.h"
#include "src/log/uploads.h"
#include "src/sheet/sheet_edit.h"

namespace sheetlog::api {

namespace {

constexpr int64_t kReadChunkBytes = 1 << 20;

json BlobInfoJson(const BlobInfo& info) {
  return json{{"key", info.key},
              {"size", info.size},
              {"etag", info.etag},
              {"created", info.created_micros / 1000000},
              {"content_type", info.content_type},
              {"tags", info.tags}};
}

// Clients may read the server's own objects but never change them (src/log/
// sheet_blobs.h). A presigned URL is the server's own permission and passes.
void RefuseServerArea(const std::string& key, bool presigned, const std::string& action) {
  if (presigned) return;
  if (std::optional<std::string_view> area = ServerBlobArea(key)) {
    throw ApiError::Forbidden("the prefix '" + std::string(*area) +
                              "' is reserved for the server's own objects: clients may "
                              "read '" +
                              key + "' but not " + action + " it");
  }
}

std::string KeyOf(Call& call) {
  std::string key = call.Path(1);
  Check(BlobStore::ValidateKey(key));
  return key;
}

// "http://host:port" of this request, for absolute URLs in responses.
std::string BaseUrl(const Call& call) {
  std::string host = call.req.get_header_value("Host");
  return host.empty() ? "" : "http://" + host;
}

ApiError PreconditionFailed(const std::string& message) {
  return ApiError(412, "PreconditionFailed", message);
}

// Beyond api.md: S3's conditional writes. `If-None-Match: *` puts only if the key holds
// no object; `If-Match: "<etag>"` only if the object's etag is that one. Either failing
// is a 412 PreconditionFailed with nothing stored: decided before the body is read when
// the object already shows it, and again atomically at the commit.
void ReadPutConditions(Call& call, BlobStore& blobs, const std::string& key,
                       BlobPutOptions* options) {
  const std::string none_match = call.req.get_header_value("If-None-Match");
  const std::string match = call.req.get_header_value("If-Match");
  if (!none_match.empty()) {
    if (none_match != "*") {
      throw ApiError::Validation("If-None-Match on a PUT takes only '*' (put if absent)");
    }
    options->if_none_match = true;
  }
  if (!match.empty()) {
    std::string etag = match;
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
      etag = etag.substr(1, etag.size() - 2);
    }
    if (etag.empty() || etag == "*" || etag.find_first_of("\",") != std::string::npos) {
      throw ApiError::Validation("If-Match on a PUT takes one etag, got '" + match + "'");
    }
    options->if_match = etag;
  }
  if (!HasBlobPutConditions(*options)) return;
  Result<BlobInfo> current = blobs.Head(key);
  Status held = CheckBlobPutConditions(
      key, *options, current.ok() ? std::optional(current->etag) : std::nullopt);
  if (!held.ok()) throw PreconditionFailed(held.message());
}

}  // namespace

void BlobRoutes::AddTo(Router& router) {
  // Auth is checked per request: a presigned URL replaces the token.
  const RouteOptions self_auth{/*auth=*/false, /*storage=*/true};
  AddRoutes<BlobRoutes>(
      router, this,
      {
          {"PUT", R"(/v1/blobs/(.+))", &BlobRoutes::PutBlob, self_auth},
          {"GET", R"(/v1/blobs/(.+))", &BlobRoutes::GetBlob, self_auth},
          {"DELETE", R"(/v1/blobs/(.+))", &BlobRoutes::DeleteBlob, self_auth},
          {"GET", "/v1/blobs", &BlobRoutes::ListBlobs},
          // Large entries: seed 000's three steps.
          {"POST", R"(/v1/sheets/([^/]+)/uploads)", &BlobRoutes::CreateUpload},
          {"POST", R"(/v1/sheets/([^/]+)/uploads/([^/]+)/complete)",
           &BlobRoutes::CompleteUpload},
          {"POST", "/v1/admin/sweep", &BlobRoutes::Sweep},
      });
}

bool BlobRoutes::CheckAccess(Call& call, const std::string& method,
                             const std::string& key) {
  auto signature = call.Query("signature");
  auto expires = call.Query("expires");
  if (!signature && !expires) {
    if (!router_.Authorized(call.req)) {
      throw ApiError::Unauthorized(
          "missing or wrong bearer token (or use a presigned URL)");
    }
    return false;
  }
  std::optional<int64_t> expiry = expires ? ParseInt(*expires) : std::nullopt;
  if (!signature || !expiry) {
    throw ApiError::Forbidden("a presigned URL needs both expires and signature");
  }
  // A store that mints its own presigned URLs (S3) has no presigner here: its URLs
  // point at the store, so none that reaches this server is one of them.
  const BlobPresigner* presigner = blobs_.server_presigner();
  Check(presigner != nullptr
            ? presigner->Verify(method, key, *expiry, *signature)
            : PermissionDenied("signature does not match: presigned URLs of this "
                               "server's blobs are minted by its S3 store and point at "
                               "it"));
  return true;
}

void BlobRoutes::PutBlob(Call& call, const http::ContentReader& reader) {
  std::string key = KeyOf(call);
  bool presigned = CheckAccess(call, "PUT", key);
  if (call.req.has_param("tagging")) {
    if (presigned) throw ApiError::Forbidden("presigned URLs cannot change tags");
    RefuseServerArea(key, presigned, "change the tags of");
    std::string body;
    reader([&](const char* data, size_t n) {
      body.append(data, n);
      return body.size() <= (1 << 16);
    });
    json parsed = Check(ParseJsonStrict(body));
    FieldReader fields(parsed, "request body");
    std::optional<json> tags = fields.Any("tags");
    fields.Finish();
    if (!tags || !tags->is_object())
      throw ApiError::Validation("field 'tags' must be an object");
    BlobTags tag_set;
    for (auto it = tags->begin(); it != tags->end(); ++it) {
      if (!it->is_string()) throw ApiError::Validation("tag values must be strings");
      tag_set[it.key()] = it->get<std::string>();
    }
    Check(blobs_.PutTags(key, tag_set));
    call.Reply(200, json{{"tags", tag_set}});
    return;
  }
  RefuseServerArea(key, presigned, "overwrite");
  // An upload's payload may be PUT until the upload completes;
  // refused here before the body is read, and again atomically at the commit.
  const bool upload_payload = presigned && ServerBlobArea(key) == "uploads/";
  if (upload_payload) Check(uploads_.CheckOpenForPayload(key));
  BlobPutOptions options;
  options.content_type = call.req.get_header_value("Content-Type");
  if (options.content_type.empty()) options.content_type = "application/octet-stream";
  // A presigned upload is seed 000's discardable write: tagged for auto-delete
  // until an entry references it and the change feed removes the tag.
  if (presigned) options.tags[kAutoDeleteTag] = "true";
  ReadPutConditions(call, blobs_, key, &options);
  std::unique_ptr<BlobWriter> writer = Check(blobs_.BeginPut(key, options));
  Status append_status;
  bool read_ok = reader([&](const char* data, size_t n) {
    append_status = writer->Append(std::string_view(data, n));
    return append_status.ok();
  });
  if (!append_status.ok()) {
    writer->Abort();
    throw ApiError::FromStatus(append_status);
  }
  if (!read_ok) {
    writer->Abort();
    throw ApiError::Validation("the request body ended early");
  }
  Result<BlobInfo> committed =
      upload_payload ? uploads_.CommitClientPayload(key, [&] { return writer->Commit(); })
                     : writer->Commit();
  if (committed.status().IsConditionFailed() &&
      (options.if_none_match || options.if_match)) {
    throw PreconditionFailed(committed.status().message());
  }
  BlobInfo info = Check(std::move(committed));
  call.Reply(200, BlobInfoJson(info));
}

void BlobRoutes::GetBlob(Call& call) {
  std::string key = KeyOf(call);
  CheckAccess(call, "GET", key);
  if (call.req.has_param("tagging")) {
    call.Reply(200, json{{"tags", Check(blobs_.GetTags(key))}});
    return;
  }
  std::shared_ptr<BlobReader> reader(Check(blobs_.OpenReader(key)).release());
  const BlobInfo& info = reader->info();
  const std::string etag = "\"" + info.etag + "\"";
  call.res.set_header("ETag", etag);
  call.res.set_header("X-Sheetlog-Tag-Count", std::to_string(info.tags.size()));
  call.res.set_header("Accept-Ranges", "bytes");
  // Range (byte_range.h): one range is served; If-Range other than the current
  // ETag asks for the whole object.
  ByteRange range = ParseByteRange(call.req.get_header_value("Range"), info.size);
  const std::string if_range = call.req.get_header_value("If-Range");
  if (!if_range.empty() && if_range != etag) range = ByteRange{};
  if (range.kind == ByteRange::Kind::kUnsatisfiable) {
    call.res.set_header("Content-Range", "bytes */" + std::to_string(info.size));
    throw ApiError(416, "RangeNotSatisfiable",
                   "the range '" + call.req.get_header_value("Range") +
                       "' starts beyond the object's " + std::to_string(info.size) +
                       " bytes");
  }
  int64_t first = 0;
  int64_t send_length = info.size;
  call.res.status = 200;
  if (range.kind == ByteRange::Kind::kPartial) {
    first = range.first;
    send_length = range.length();
    call.res.status = 206;
    call.res.set_header("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                             std::to_string(range.last) + "/" +
                                             std::to_string(info.size));
  }
  call.res.set_content_provider(
      static_cast<size_t>(send_length), info.content_type,
      [reader, first](size_t offset, size_t length, http::DataSink& sink) {
        Result<std::string> piece = reader->ReadAt(
            first + static_cast<int64_t>(offset),
            std::min<int64_t>(static_cast<int64_t>(length), kReadChunkBytes));
        if (!piece.ok() || piece->empty()) return false;
        return sink.write(piece->data(), piece->size());
      });
}

void BlobRoutes::DeleteBlob(Call& call) {
  std::string key = KeyOf(call);
  RefuseServerArea(key, CheckAccess(call, "DELETE", key), "delete");
  Check(blobs_.Delete(key));
  call.NoContent();
}

void BlobRoutes::ListBlobs(Call& call) {
  BlobListOptions options;
  options.prefix = call.Query("prefix").value_or("");
  options.delimiter = call.Query("delimiter").value_or("");
  options.continuation = call.Query("continuation").value_or("");
  options.limit = QueryLimit(call, options.limit, 1000);
  BlobListResult page = Check(blobs_.List(options));
  json keys = json::array();
  for (const BlobInfo& info : page.keys) keys.push_back(BlobInfoJson(info));
  call.Reply(200, json{{"keys", keys},
                       {"prefixes", page.prefixes},
                       {"continuation",
                        page.continuation ? json(*page.continuation) : json(nullptr)}});
}

void BlobRoutes::CreateUpload(Call& call) {
  std::string sheet = call.Path(1);
  if (!IsUuid(sheet)) throw ApiError::NotFound("no sheet '" + sheet + "'");
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<std::string> type = fields.String("type");
  int64_t version = fields.Int("version", 1);
  std::optional<json> entry_body = fields.Any("body");
  std::optional<std::string> content_type = fields.String("content_type");
  std::optional<int64_t> size = fields.Int("size");
  fields.Finish();
  if (!type || type->empty()) throw ApiError::Validation("field 'type' is required");
  if (size && (*size < 0 || *size > blobs_.max_object_bytes())) {
    throw ApiError::PayloadTooLarge(blobs_.max_object_bytes());
  }
  // The small declared body is checked now, like an inline append's.
  Check(ValidateAppend(*type, version, entry_body.value_or(json(nullptr))));
  std::optional<std::string> encoded;
  if (entry_body && !entry_body->is_null()) encoded = entry_body->dump();
  UploadInfo upload = Check(
      uploads_.Create(sheet, *type, version, encoded, content_type, size, &call.meter));
  // The store's own URL (S3), or this server's presigned route.
  std::string url = Check(uploads_.PresignedPath("PUT", upload.blob_key, upload.expires));
  if (url.starts_with("/")) url = BaseUrl(call) + url;
  call.Reply(201, json{{"upload_id", upload.upload_id},
                       {"key", upload.blob_key},
                       {"url", url},
                       {"expires", upload.expires}});
}

void BlobRoutes::CompleteUpload(Call& call) {
  std::string sheet = call.Path(1);
  std::string upload_id = call.Path(2);
  if (!IsUuid(sheet)) throw ApiError::NotFound("no sheet '" + sheet + "'");
  if (!IsUuid(upload_id)) throw ApiError::NotFound("no upload '" + upload_id + "'");
  json body = call.Body();
  FieldReader fields(body, "request body");
  std::optional<int64_t> expect_seq = fields.Int("expect_seq");
  fields.Finish();
  int64_t next_seq = -1;
  bool already = false;
  Result<EntryRecord> entry =
      uploads_.Complete(sheet, upload_id, expect_seq, &call.meter, &next_seq, &already);
  if (!entry.ok()) {
    json extra = json::object();
    if (entry.status().IsConditionFailed() && next_seq >= 0) extra["next_seq"] = next_seq;
    throw ApiError::FromStatus(entry.status(), extra);
  }
  json out = AppendResultJson(AppendResult{*entry});
  out["already_completed"] = already;
  call.Reply(201, out);
}

void BlobRoutes::Sweep(Call& call) {
  SweepReport report = Check(sweeper_.RunNow());
  // Deleted sheets' objects too (sheet_deletion.h), as the purge worker does.
  PurgeReport purged = Check(purger_.PurgeAll());
  call.Reply(200, json{{"purged_sheets", purged.sheets},
                       {"purged_objects", purged.objects_deleted},
                       {"examined", report.examined},
                       {"matched", report.matched},
                       {"too_young", report.too_young},
                       {"kept_by_predicate", report.kept_by_predicate},
                       {"deleted", report.deleted},
                       {"deleted_bytes", report.deleted_bytes},
                       {"deleted_keys", report.deleted_keys},
                       {"errors", report.errors}});
}

}  // namespace sheetlog::api
