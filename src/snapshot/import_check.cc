#include "src/snapshot/import_check.h"

#include <memory>
#include <variant>

#include "emulator/json_text.h"
#include "src/sheet/import_file.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/blob_payload_source.h"

namespace sheetlog {

Uploads::Validator ImportPayloadCheck() {
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

}  // namespace sheetlog
