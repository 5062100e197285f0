// Entry bodies: validation at append time, and bodies too large to keep inline.
#include "emulator/json_text.h"
#include "src/api/routes.h"
#include "src/app/app.h"
#include "src/log/tables.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/build_factory.h"

namespace sheetlog::api {

void PrepareEntryBody(App& app, const std::string& type, int64_t version,
                      const json& body, AppendRequest* request, UnitMeter* meter) {
  (void)app;
  (void)meter;
  // Built-in types must parse now: a bad body is a 400 here, never a failure later in
  // the snapshot pipeline.
  Check(ValidateAppend(type, version, body));
  if (type == "Import") {
    throw ApiError::Validation(
        "Import: the file travels as an upload: POST /v1/sheets/{id}/uploads with this "
        "body, PUT the file to the returned url, then POST .../complete");
  }
  if (!body.is_null()) request->body = body.dump();
}

Result<AppendResult> AppendPrepared(App& app, AppendRequest request, UnitMeter* meter,
                                    int64_t* next_seq_out) {
  if (request.body &&
      static_cast<int64_t>(request.body->size()) > app.options().inline_limit) {
    // Seed 001's break-even: larger bodies are cheaper in the blob store.
    return app.uploads()->AppendLarge(std::move(request), meter, next_seq_out);
  }
  return app.log()->AddEntry(request, meter, next_seq_out);
}

Uploads::Validator CompletionValidator(App& app) {
  (void)app;
  // An Import payload is read in full now, so a file that does not parse is refused
  // (400, naming line or cell) before its entry exists and can never fail later.
  return [](const UploadInfo& upload, BlobStore& blobs) -> Status {
    if (upload.type != "Import") return Status::OK();
    nlohmann::json body = nullptr;
    if (upload.body) body = ParseJsonOrDiscarded(*upload.body);
    ASSIGN_OR_RETURN(SheetEdit edit, ParseEdit(upload.type, upload.version, body));
    const auto* import = std::get_if<ImportEdit>(&edit);
    if (import == nullptr) return Internal("an Import body parsed as another type");
    ASSIGN_OR_RETURN(std::unique_ptr<BlobPayloadSource> payload,
                     BlobPayloadSource::Open(&blobs, upload.blob_key));
    Status parsed = CheckImportPayload(*import, *payload);
    if (parsed.ok() || parsed.code() != StatusCode::kInvalidArgument) return parsed;
    return InvalidArgument("the uploaded file cannot be imported: " + parsed.message());
  };
}

int64_t PendingSnapshotCount(App& app, const std::string& sheet_id, UnitMeter* meter) {
  int64_t count = 0;
  Status status = app.db()->Read([&](Connection& conn) {
    QueryRequest query;
    query.partition = {sheet_id};
    ASSIGN_OR_RETURN(QueryResult page, PendingSnapshotTable().Query(conn, query, meter));
    count = static_cast<int64_t>(page.items.size());
    return Status::OK();
  });
  Check(status);
  return count;
}

}  // namespace sheetlog::api
