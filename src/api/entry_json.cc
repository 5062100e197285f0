#include "src/api/entry_json.h"

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "src/api/json_input.h"
#include "src/log/uploads.h"

namespace sheetlog::api {

namespace {
// How long the presigned URLs in entries stay valid.
constexpr int64_t kPresignedGetSeconds = 3600;
}  // namespace

json EntryPresenter::Entry(const EntryRecord& e) const {
  json out{{"seq", e.seq},         {"segment", e.segment}, {"num", e.num},
           {"created", e.created}, {"type", e.type},       {"version", e.version}};
  out["body"] = e.body ? StoredJsonForReply(*e.body) : json(nullptr);
  out["external"] = e.external ? External(*e.external) : json(nullptr);
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

json EntryPresenter::External(const std::string& key) const {
  json out{{"key", key}, {"size", nullptr}, {"url", nullptr}};
  Result<BlobInfo> info = blobs_->Head(key);
  if (info.ok()) out["size"] = info->size;
  int64_t expires = clock_->NowSeconds() + kPresignedGetSeconds;
  Result<std::string> url = uploads_->PresignedPath("GET", key, expires);
  if (url.ok()) out["url"] = *url;
  return out;
}

json EntryPresenter::InlineBody(const EntryRecord& entry) const {
  return StoredJsonForReply(Check(uploads_->ReadBody(*entry.external)));
}

std::string EntryPresenter::ManifestUrl(const std::string& root) const {
  return Check(
      uploads_->PresignedPath("GET", root, clock_->NowSeconds() + kPresignedGetSeconds));
}

json AppendResultJson(const AppendResult& result) {
  const EntryRecord& e = result.entry;
  return json{{"seq", e.seq},
              {"segment", e.segment},
              {"num", e.num},
              {"created", e.created},
              {"external", e.external ? json(*e.external) : json(nullptr)}};
}

}  // namespace sheetlog::api
