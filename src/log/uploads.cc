#include "src/log/uploads.h"

#include "emulator/blob/blob_presigner.h"
#include "emulator/env/faults.h"
#include "emulator/env/uuid.h"

namespace sheetlog {

const Table& UploadTable() {
  static const Table table(TableSchema{"upload",
                                       {"upload_id"},
                                       {},
                                       {{"upload_id", "U"},
                                        {"sheet_id", "P"},
                                        {"blob_key", "K"},
                                        {"kind", "D"},
                                        {"type", "T"},
                                        {"version", "V"},
                                        {"body", "B"},
                                        {"content_type", "Y"},
                                        {"size", "Z"},
                                        {"created", "C"},
                                        {"expires", "X"},
                                        {"entry_seq", "Q"}}});
  return table;
}

namespace {

std::optional<std::string> Str(const Item& item, const char* column) {
  auto it = item.find(column);
  if (it == item.end() || it->second.is_null()) return std::nullopt;
  return it->second.AsString();
}

std::optional<int64_t> Int(const Item& item, const char* column) {
  auto it = item.find(column);
  if (it == item.end() || it->second.is_null()) return std::nullopt;
  return it->second.AsInt();
}

UploadInfo UploadFromItem(const Item& item) {
  UploadInfo u;
  u.upload_id = Str(item, "upload_id").value_or("");
  u.sheet_id = Str(item, "sheet_id").value_or("");
  u.blob_key = Str(item, "blob_key").value_or("");
  u.kind = Str(item, "kind").value_or("");
  u.type = Str(item, "type").value_or("");
  u.version = Int(item, "version").value_or(1);
  u.body = Str(item, "body");
  u.content_type = Str(item, "content_type");
  u.size = Int(item, "size");
  u.created = Int(item, "created").value_or(0);
  u.expires = Int(item, "expires").value_or(0);
  u.entry_seq = Int(item, "entry_seq");
  return u;
}

Item UploadItem(const UploadInfo& u) {
  Item item{{"upload_id", u.upload_id}, {"sheet_id", u.sheet_id},
            {"blob_key", u.blob_key},   {"kind", u.kind},
            {"type", u.type},           {"version", u.version},
            {"created", u.created},     {"expires", u.expires}};
  if (u.body) item["body"] = *u.body;
  if (u.content_type) item["content_type"] = *u.content_type;
  if (u.size) item["size"] = *u.size;
  if (u.entry_seq) item["entry_seq"] = *u.entry_seq;
  return item;
}

// Blob keys of external bodies: "<prefix>/<sheet>/<upload id>".
std::optional<std::string> UploadIdOfKey(const std::string& key) {
  if (key.rfind("uploads/", 0) != 0 && key.rfind("entries/", 0) != 0) return std::nullopt;
  size_t slash = key.rfind('/');
  std::string id = key.substr(slash + 1);
  if (!IsUuid(id)) return std::nullopt;
  return id;
}

}  // namespace

Uploads::Uploads(Transactions* db, EventLog* log, BlobStore* blobs, Clock* clock,
                 FaultInjector* faults, Options options)
    : db_(db),
      log_(log),
      blobs_(blobs),
      clock_(clock),
      faults_(faults),
      options_(options) {}

Result<std::optional<UploadInfo>> Uploads::Lookup(Connection& conn,
                                                  const std::string& upload_id,
                                                  UnitMeter* meter) {
  ASSIGN_OR_RETURN(
      std::optional<Item> item,
      UploadTable().Get(conn, Key{{upload_id}, {}}, Consistency::kStrong, meter));
  if (!item) return std::optional<UploadInfo>();
  return std::optional<UploadInfo>(UploadFromItem(*item));
}

Result<UploadInfo> Uploads::Create(const std::string& sheet_id, const std::string& type,
                                   int64_t version, std::optional<std::string> body,
                                   std::optional<std::string> content_type,
                                   std::optional<int64_t> size, UnitMeter* meter) {
  RETURN_IF_ERROR(log_->GetSheet(sheet_id, meter).status());
  UploadInfo u;
  u.upload_id = NewRandomUuid();
  u.sheet_id = sheet_id;
  u.blob_key = "uploads/" + sheet_id + "/" + u.upload_id;
  u.kind = "client";
  u.type = type;
  u.version = version;
  u.body = std::move(body);
  u.content_type = std::move(content_type);
  u.size = size;
  u.created = clock_->NowSeconds();
  u.expires = u.created + options_.url_ttl_seconds;
  RETURN_IF_ERROR(db_->Write([&](Connection& conn) {
    return UploadTable().PutIfAbsent(conn, UploadItem(u), meter);
  }));
  return u;
}

Result<std::optional<UploadInfo>> Uploads::Find(const std::string& upload_id,
                                                UnitMeter* meter) {
  std::optional<UploadInfo> found;
  RETURN_IF_ERROR(db_->Read([&](Connection& conn) {
    ASSIGN_OR_RETURN(found, Lookup(conn, upload_id, meter));
    return Status::OK();
  }));
  return found;
}

Result<UploadInfo> Uploads::Get(const std::string& sheet_id, const std::string& upload_id,
                                UnitMeter* meter) {
  ASSIGN_OR_RETURN(std::optional<UploadInfo> found, Find(upload_id, meter));
  if (!found || found->sheet_id != sheet_id) {
    return NotFound("sheet " + sheet_id + " has no upload " + upload_id);
  }
  return *found;
}

Result<EntryRecord> Uploads::Complete(const std::string& sheet_id,
                                      const std::string& upload_id,
                                      std::optional<int64_t> expect_seq, UnitMeter* meter,
                                      int64_t* next_seq_out, bool* already) {
  *already = false;
  ASSIGN_OR_RETURN(UploadInfo upload, Get(sheet_id, upload_id, meter));
  if (upload.entry_seq) {
    *already = true;
    return log_->GetEntry(sheet_id, *upload.entry_seq, meter);
  }
  Result<BlobInfo> blob = blobs_->Head(upload.blob_key);
  if (blob.status().IsNotFound()) {
    return FailedPrecondition("upload " + upload_id +
                              " has no body yet: PUT it to the upload URL first");
  }
  RETURN_IF_ERROR(blob.status());
  if (upload.size && *upload.size != blob->size) {
    return FailedPrecondition("upload " + upload_id + " declared " +
                              std::to_string(*upload.size) + " bytes but " +
                              std::to_string(blob->size) + " were uploaded");
  }
  if (options_.validate_payload) {
    RETURN_IF_ERROR(options_.validate_payload(upload, *blobs_));
  }

  MutexLock lock(&reference_mu_);
  if (condemned_.count(upload.blob_key)) {
    return FailedPrecondition(
        "upload " + upload_id +
        " is being removed by the lifecycle sweep; start a new upload");
  }
  // A PUT may have replaced the payload since it was checked above; payload PUTs
  // commit under reference_mu_, so from here until the entry exists none can.
  Result<BlobInfo> now = blobs_->Head(upload.blob_key);
  RETURN_IF_ERROR(now.status());
  if (now->etag != blob->etag) {
    return FailedPrecondition("upload " + upload_id +
                              " received a new body while completing; complete again");
  }
  // On a store whose presigned URLs bypass this server (S3) the upload's URL can still
  // write its key until it expires, whatever this server says: the entry references a
  // sealed copy under a key no URL names, of exactly the version checked above (the
  // store refuses to copy any other).
  std::string referenced_key = upload.blob_key;
  if (blobs_->PresignedRequestsBypassServer()) {
    referenced_key = "entries/" + sheet_id + "/" + upload_id;
    BlobPutOptions sealed;
    sealed.content_type = now->content_type;
    sealed.tags = {{kAutoDeleteTag, "true"}};  // discardable until the entry exists
    Result<BlobInfo> copied =
        blobs_->Copy(upload.blob_key, referenced_key, sealed, blob->etag);
    if (copied.status().IsConditionFailed() || copied.status().IsNotFound()) {
      return FailedPrecondition("upload " + upload_id +
                                " received a new body while completing; complete again");
    }
    RETURN_IF_ERROR(copied.status());
  }
  AppendRequest request;
  request.sheet_id = sheet_id;
  request.type = upload.type;
  request.version = upload.version;
  request.body = upload.body;
  request.external = referenced_key;
  request.expect_seq = expect_seq;
  std::optional<int64_t> raced_seq;
  request.also_write = [&](Connection& conn, const EntryRecord& entry,
                           UnitMeter* m) -> Status {
    // The reference and the entry commit together. A concurrent Complete that got here
    // first makes this condition fail; its entry is the answer.
    UpdateRequest update;
    update.key = Key{{upload_id}, {}};
    // blob_key follows the payload to its sealed copy, so the sweep keeps that and
    // lets the upload's own key go (KeepForSweep).
    update.set = {{"entry_seq", entry.seq}, {"blob_key", referenced_key}};
    update.conditions = {Condition::NotExists("entry_seq")};
    update.create_if_missing = false;
    raced_seq.reset();  // decided afresh on every run of the transaction
    Result<Item> updated = UploadTable().Update(conn, update, m);
    if (updated.status().IsConditionFailed()) {
      ASSIGN_OR_RETURN(std::optional<UploadInfo> now, Lookup(conn, upload_id, m));
      // Either way the entry is rolled back with this error (a lost condition, not a
      // transaction to run again).
      if (!now) {
        return NotFound("upload " + upload_id +
                        " no longer exists (its sheet was deleted)");
      }
      if (now->entry_seq) raced_seq = now->entry_seq;
      return ConditionFailed("upload " + upload_id + " was completed concurrently");
    }
    return updated.status();
  };
  Result<AppendResult> appended = log_->AddEntry(request, meter, next_seq_out);
  if (!appended.ok() && raced_seq) {
    *already = true;
    return log_->GetEntry(sheet_id, *raced_seq, meter);
  }
  RETURN_IF_ERROR(appended.status());
  if (referenced_key != upload.blob_key) {
    // The payload lives on in its sealed copy. Best effort: after a failed delete the
    // object keeps its auto-delete tag and the sweep removes it after the orphan TTL.
    // A PUT to the URL after this delete, before the URL expires, makes an object the
    // sweep does not know of (it reads the table store's mirror): the bucket's own
    // lifecycle rule on the tag removes it, on a store that has them (docs/cluster.md).
    Status removed = blobs_->Delete(upload.blob_key);
    (void)removed;
  }
  return appended->entry;
}

Status Uploads::CheckOpenForPayload(const std::string& key) {
  std::optional<std::string> upload_id = UploadIdOfKey(key);
  std::optional<UploadInfo> found;
  if (upload_id) {
    ASSIGN_OR_RETURN(found, Find(*upload_id, nullptr));
  }
  if (!found || found->blob_key != key) {
    return NotFound("no open upload has the key '" + key +
                    "' (never created, or its sheet was deleted)");
  }
  if (found->entry_seq) {
    return FailedPrecondition(
        "upload " + found->upload_id + " is completed: entry " +
        std::to_string(*found->entry_seq) + " of sheet " + found->sheet_id +
        " references this payload, which can no longer change; start a new upload");
  }
  return Status::OK();
}

Result<BlobInfo> Uploads::CommitClientPayload(
    const std::string& key, const std::function<Result<BlobInfo>()>& commit) {
  MutexLock lock(&reference_mu_);
  RETURN_IF_ERROR(CheckOpenForPayload(key));
  return commit();
}

Result<AppendResult> Uploads::Append(AppendRequest request, UnitMeter* meter,
                                     int64_t* next_seq_out) {
  if (request.body &&
      static_cast<int64_t>(request.body->size()) > options_.inline_limit) {
    return AppendLarge(std::move(request), meter, next_seq_out);
  }
  return log_->AddEntry(request, meter, next_seq_out);
}

void Uploads::AppendAsync(AppendRequest request, UnitMeter* meter,
                          EventLog::AppendDone done) {
  if (request.body &&
      static_cast<int64_t>(request.body->size()) > options_.inline_limit) {
    int64_t next_seq = -1;
    Result<AppendResult> appended = AppendLarge(std::move(request), meter, &next_seq);
    done(std::move(appended), next_seq);
    return;
  }
  log_->AddEntryAsync(std::move(request), meter, std::move(done));
}

Result<AppendResult> Uploads::AppendLarge(AppendRequest request, UnitMeter* meter,
                                          int64_t* next_seq_out) {
  if (!request.body) return InvalidArgument("AppendLarge needs a body");
  const std::string upload_id = NewRandomUuid();
  const std::string key = "entries/" + request.sheet_id + "/" + upload_id;
  // 1. The discardable write: tagged so the sweep removes it if no entry follows.
  BlobPutOptions put;
  put.content_type = "application/json";
  put.tags = {{kAutoDeleteTag, "true"}};
  RETURN_IF_ERROR(blobs_->Put(key, *request.body, put).status());
  RETURN_IF_ERROR(faults_->Hit(FaultPoint::kUploadsAfterBlobBeforeEntry));

  // 2. The linchpin: the entry and its reference row, in one transaction.
  UploadInfo u;
  u.upload_id = upload_id;
  u.sheet_id = request.sheet_id;
  u.blob_key = key;
  u.kind = "inline";
  u.type = request.type;
  u.version = request.version;
  u.content_type = "application/json";
  u.size = static_cast<int64_t>(request.body->size());
  u.created = clock_->NowSeconds();
  u.expires = u.created;
  request.external = key;
  request.body.reset();
  request.also_write = [&](Connection& conn, const EntryRecord& entry, UnitMeter* m) {
    u.entry_seq = entry.seq;
    return UploadTable().PutIfAbsent(conn, UploadItem(u), m);
  };
  MutexLock lock(&reference_mu_);
  return log_->AddEntry(request, meter, next_seq_out);
  // 3. The untag happens in the change feed's handler (src/effects).
}

Status Uploads::Untag(const std::string& key) {
  Result<BlobTags> tags = blobs_->GetTags(key);
  if (tags.status().IsNotFound()) return Status::OK();
  RETURN_IF_ERROR(tags.status());
  if (!tags->count(kAutoDeleteTag)) return Status::OK();
  tags->erase(kAutoDeleteTag);
  Status status = blobs_->PutTags(key, *tags);
  return status.IsNotFound() ? Status::OK() : status;
}

bool Uploads::KeepForSweep(const std::string& key) {
  MutexLock lock(&reference_mu_);
  std::optional<std::string> upload_id = UploadIdOfKey(key);
  if (upload_id) {
    Result<std::optional<UploadInfo>> found = Find(*upload_id, nullptr);
    if (!found.ok()) return true;  // unsure: keep it this time
    // Kept only where the entry's reference is: a sealed upload's own key is not.
    if (*found && (*found)->entry_seq && (*found)->blob_key == key) return true;
  }
  condemned_.insert(key);
  return false;
}

Result<std::string> Uploads::ReadBody(const std::string& key) { return blobs_->Get(key); }

Status Uploads::DeleteAll(Connection& conn) {
  return UploadTable().DeleteAll(conn).status();
}

Result<std::string> Uploads::PresignedPath(const std::string& method,
                                           const std::string& key, int64_t expires) {
  BlobTags put_tags;
  if (method == "PUT") put_tags[kAutoDeleteTag] = "true";
  ASSIGN_OR_RETURN(std::optional<std::string> url,
                   blobs_->PresignUrl(method, key, expires, put_tags));
  if (url) return *url;
  // The store has the server serve its presigned requests (directory).
  const BlobPresigner* presigner = blobs_->server_presigner();
  if (presigner == nullptr) {
    return Internal("the " + std::string(blobs_->kind()) +
                    " blob store gave no presigned URL and has no server presigner");
  }
  return "/v1/blobs/" + key + "?expires=" + std::to_string(expires) +
         "&signature=" + presigner->Sign(method, key, expires);
}

}  // namespace sheetlog
