#include "emulator/blob/s3_blob_store.h"

#include <algorithm>
#include <ctime>

#include "emulator/env/clock.h"
#include "emulator/env/faults.h"

namespace sheetlog {

namespace {

constexpr std::string_view kS3DefaultContentType = "application/octet-stream";
constexpr size_t kS3MaxDeletedKeysReported = 1000;
// Greater than every UTF-8 character: start-after P + this skips every key under P.
constexpr std::string_view kAfterEveryKeyUnder = "\xF4\x8F\xBF\xBF\xF4\x8F\xBF\xBF";

std::string ContentTypeOf(const BlobPutOptions& options) {
  return options.content_type.empty() ? std::string(kS3DefaultContentType)
                                      : options.content_type;
}

// A failure of the store as an API error: unreachable and 5xx stay Unavailable (503),
// with the store named so an operator knows where to look.
Status Annotated(const Status& status, const std::string& what) {
  if (status.ok() || status.IsNotFound()) return status;
  return status.Annotate(what);
}

// As the directory store words it.
Status TooLarge(const std::string& key, int64_t limit) {
  return ResourceExhausted("blob " + QuoteForMessage(key) +
                           " exceeds the maximum object size of " +
                           std::to_string(limit) + " bytes");
}

}  // namespace

// ---------------------------------------------------------------------------------
// The writer: the body buffers up to one part; beyond it, a multipart upload.

class S3BlobWriter final : public BlobWriter {
 public:
  S3BlobWriter(S3BlobStore* store, std::string key, BlobPutOptions options)
      : store_(store), key_(std::move(key)), options_(std::move(options)) {}
  ~S3BlobWriter() override { Abort(); }

  Status Append(std::string_view data) override {
    if (!failure_.ok()) return failure_;
    if (finished_) return FailedPrecondition("the put of " + key_ + " is finished");
    if (size_ + static_cast<int64_t>(data.size()) > store_->max_object_bytes()) {
      failure_ = TooLarge(key_, store_->max_object_bytes());
      Abort();
      return failure_;
    }
    size_ += static_cast<int64_t>(data.size());
    const size_t part_bytes = static_cast<size_t>(store_->client_.location().part_bytes);
    while (!data.empty()) {
      size_t take = std::min(data.size(), part_bytes - buffer_.size());
      buffer_.append(data.substr(0, take));
      data.remove_prefix(take);
      if (buffer_.size() == part_bytes && !data.empty()) {
        Status sent = SendPart();
        if (!sent.ok()) {
          failure_ = sent;
          Abort();
          return failure_;
        }
      }
    }
    return Status::OK();
  }

  Result<BlobInfo> Commit() override {
    if (!failure_.ok()) return failure_;
    if (finished_) return FailedPrecondition("the put of " + key_ + " is finished");
    if (upload_id_.empty()) {  // one part: a plain PUT
      finished_ = true;
      return store_->Put(key_, buffer_, options_);
    }
    if (!buffer_.empty()) {
      Status sent = SendPart();
      if (!sent.ok()) {
        failure_ = sent;
        Abort();
        return failure_;
      }
    }
    finished_ = true;
    S3BlobStore& store = *store_;
    const int64_t now = store.clock_->NowMicros();
    BlobInfo info;
    std::optional<int64_t> replaced_size;
    {
      MutexLock lock(&store.KeyMutex(key_));
      Status checked = store.CheckConditions(key_, options_, &replaced_size);
      Result<std::optional<S3BlobStore::MirrorRow>> previous =
          checked.ok() ? store.PrepareRowForPut(key_, options_, now)
                       : Result<std::optional<S3BlobStore::MirrorRow>>(checked);
      if (!previous.ok()) {
        AbortUpload();
        return previous.status();
      }
      Result<std::string> etag = store.client_.CompleteMultipartUpload(
          key_, upload_id_, part_etags_, S3BlobStore::ConditionHeaders(options_));
      if (!etag.ok()) {
        store.RestoreRow(key_, *previous);
        AbortUpload();
        return Annotated(etag.status(), "put of " + key_);
      }
      upload_id_.clear();
      info.key = key_;
      info.size = size_;
      info.etag = *etag;
      info.created_micros = now;
      info.content_type = ContentTypeOf(options_);
      info.tags = options_.tags;
    }
    store.CountPut(size_, replaced_size);
    return info;
  }

  void Abort() override {
    finished_ = true;
    buffer_.clear();
    AbortUpload();
  }

  int64_t bytes_written() const override { return size_; }

 private:
  Status SendPart() {
    S3Client& client = store_->client_;
    if (upload_id_.empty()) {
      ASSIGN_OR_RETURN(upload_id_, client.CreateMultipartUpload(
                                       key_, ContentTypeOf(options_), options_.tags));
    }
    ASSIGN_OR_RETURN(
        std::string etag,
        client.UploadPart(key_, upload_id_, static_cast<int>(part_etags_.size()) + 1,
                          buffer_));
    part_etags_.push_back(std::move(etag));
    buffer_.clear();
    return Status::OK();
  }

  void AbortUpload() {
    if (upload_id_.empty()) return;
    // Best effort: parts of an upload never completed are never an object; a store
    // keeps them until its AbortIncompleteMultipartUpload rule (or forever, on the test
    // server, which cannot abort).
    (void)store_->client_.AbortMultipartUpload(key_, upload_id_);
    upload_id_.clear();
  }

  S3BlobStore* const store_;
  const std::string key_;
  const BlobPutOptions options_;
  std::string buffer_;
  std::string upload_id_;
  std::vector<std::string> part_etags_;
  int64_t size_ = 0;
  bool finished_ = false;
  Status failure_;
};

// ---------------------------------------------------------------------------------
// The reader: ranged GETs of the version opened (If-Match its etag).

class S3BlobReader final : public BlobReader {
 public:
  S3BlobReader(S3Client* client, BlobInfo info)
      : client_(client), info_(std::move(info)) {}

  const BlobInfo& info() const override { return info_; }

  Result<std::string> ReadAt(int64_t offset, int64_t length) const override {
    std::string out;
    RETURN_IF_ERROR(Stream(
        offset, length,
        [&](std::string_view piece) {
          out.append(piece);
          return Status::OK();
        },
        size_t{1} << 20));
    return out;
  }

  Status Stream(int64_t offset, int64_t length,
                const std::function<Status(std::string_view chunk)>& sink,
                size_t chunk_bytes) const override {
    if (offset < 0 || offset > info_.size) {
      return OutOfRange("offset " + std::to_string(offset) + " is outside object " +
                        info_.key + " of " + std::to_string(info_.size) + " bytes");
    }
    int64_t end = length < 0 ? info_.size : std::min(info_.size, offset + length);
    if (end <= offset) return Status::OK();
    std::string pending;
    auto flush_full = [&](std::string_view piece) -> Status {
      pending.append(piece);
      while (pending.size() >= chunk_bytes) {
        RETURN_IF_ERROR(sink(std::string_view(pending).substr(0, chunk_bytes)));
        pending.erase(0, chunk_bytes);
      }
      return Status::OK();
    };
    int64_t received = 0;
    Result<S3ObjectInfo> read = client_->GetObject(
        info_.key, offset, end - offset, info_.etag, [&](std::string_view piece) {
          received += static_cast<int64_t>(piece.size());
          return flush_full(piece);
        });
    if (!read.ok()) {
      if (read.status().IsConditionFailed()) {
        return ConditionFailed("object " + info_.key +
                               " changed while it was being read (S3 keeps no old "
                               "version); read it again");
      }
      return Annotated(read.status(), "read of " + info_.key);
    }
    if (received != end - offset) {
      return Internal("object " + info_.key + " gave " + std::to_string(received) +
                      " bytes where " + std::to_string(end - offset) + " were asked");
    }
    if (!pending.empty()) RETURN_IF_ERROR(sink(pending));
    return Status::OK();
  }

 private:
  S3Client* const client_;
  const BlobInfo info_;
};

// ---------------------------------------------------------------------------------
// The store

S3BlobStore::S3BlobStore(const S3BlobStoreOptions& options, Transactions* tables,
                         Clock* clock, FaultInjector* faults)
    : options_(options),
      client_(options.location),
      mirror_(tables),
      clock_(clock),
      faults_(faults) {}

S3BlobStore::~S3BlobStore() = default;

Result<std::unique_ptr<S3BlobStore>> S3BlobStore::Open(const S3BlobStoreOptions& options,
                                                       Transactions* tables, Clock* clock,
                                                       FaultInjector* faults) {
  if (tables == nullptr || clock == nullptr) {
    return InvalidArgument("the S3 blob store needs the table store and a clock");
  }
  if (options.max_object_bytes <= 0) {
    return InvalidArgument("max_object_bytes must be positive");
  }
  std::unique_ptr<S3BlobStore> store(new S3BlobStore(options, tables, clock, faults));
  RETURN_IF_ERROR(store->client_.CheckBucket());
  RETURN_IF_ERROR(store->RefreshStats());
  return store;
}

Status S3BlobStore::Fault(FaultPoint point) {
  return faults_ == nullptr ? Status::OK() : faults_->Hit(point);
}

Mutex& S3BlobStore::KeyMutex(const std::string& key) {
  return key_mutexes_[std::hash<std::string>{}(key) % kLockStripes];
}

BlobInfo S3BlobStore::InfoOf(const S3ObjectInfo& object,
                             const std::optional<MirrorRow>& row) const {
  BlobInfo info;
  info.key = object.key;
  info.size = object.size;
  info.etag = object.etag;
  info.content_type = object.content_type;
  info.created_micros = object.last_modified_unix_s * 1000000;
  if (row) {
    info.tags = row->tags;
    info.created_micros = row->created_micros;
  }
  return info;
}

Status S3BlobStore::CheckConditions(const std::string& key, const BlobPutOptions& options,
                                    std::optional<int64_t>* replaced_size) {
  if (!HasBlobPutConditions(options)) return Status::OK();
  Result<S3ObjectInfo> current = client_.HeadObject(key);
  if (current.ok()) *replaced_size = current->size;
  if (!current.ok() && !current.status().IsNotFound()) {
    return Annotated(current.status(), "put of " + key);
  }
  return CheckBlobPutConditions(
      key, options, current.ok() ? std::optional(current->etag) : std::nullopt);
}

std::vector<std::string> S3BlobStore::ConditionHeaders(const BlobPutOptions& options) {
  std::vector<std::string> headers;
  if (options.if_none_match) headers.push_back("If-None-Match: *");
  if (options.if_match) headers.push_back("If-Match: \"" + *options.if_match + "\"");
  return headers;
}

Result<std::optional<S3BlobStore::MirrorRow>> S3BlobStore::PrepareRowForPut(
    const std::string& key, const BlobPutOptions& options, int64_t created_micros) {
  ASSIGN_OR_RETURN(std::optional<MirrorRow> previous, mirror_.Read(key));
  if (!options.tags.empty()) {
    RETURN_IF_ERROR(mirror_.Write(key, MirrorRow{options.tags, created_micros}));
  } else if (previous) {
    // The new object has no tags: the old ones must not outlive it. Removed first, so
    // a crash before the PUT leaves the old object unswept (a leak), never a new
    // object carrying old tags.
    RETURN_IF_ERROR(mirror_.Delete({key}));
  }
  return previous;
}

void S3BlobStore::RestoreRow(const std::string& key,
                             const std::optional<MirrorRow>& previous) {
  Status restored = previous ? mirror_.Write(key, *previous) : mirror_.Delete({key});
  (void)restored;  // best effort: the store still has the old object (or none)
}

Result<BlobInfo> S3BlobStore::Put(const std::string& key, std::string_view body,
                                  const BlobPutOptions& options) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(ValidateBlobPutOptions(options));
  if (static_cast<int64_t>(body.size()) > options_.max_object_bytes) {
    return TooLarge(key, options_.max_object_bytes);
  }
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobPut));
  const int64_t now = clock_->NowMicros();
  BlobInfo info;
  std::optional<int64_t> replaced_size;  // known only when a condition made us look
  {
    MutexLock lock(&KeyMutex(key));
    RETURN_IF_ERROR(CheckConditions(key, options, &replaced_size));
    ASSIGN_OR_RETURN(std::optional<MirrorRow> previous,
                     PrepareRowForPut(key, options, now));
    Result<std::string> etag = client_.PutObject(key, body, ContentTypeOf(options),
                                                 options.tags, ConditionHeaders(options));
    if (!etag.ok()) {
      RestoreRow(key, previous);
      return Annotated(etag.status(), "put of " + key);
    }
    info.key = key;
    info.size = static_cast<int64_t>(body.size());
    info.etag = *etag;
    info.created_micros = now;
    info.content_type = ContentTypeOf(options);
    info.tags = options.tags;
  }
  CountPut(info.size, replaced_size);
  return info;
}

void S3BlobStore::CountPut(int64_t size, const std::optional<int64_t>& replaced_size) {
  // An overwrite not seen counts as a new object until RefreshStats.
  if (!replaced_size) object_count_.fetch_add(1);
  byte_count_.fetch_add(size - replaced_size.value_or(0));
}

Result<std::unique_ptr<BlobWriter>> S3BlobStore::BeginPut(const std::string& key,
                                                          const BlobPutOptions& options) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(ValidateBlobPutOptions(options));
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobPut));
  return std::unique_ptr<BlobWriter>(new S3BlobWriter(this, key, options));
}

Result<BlobInfo> S3BlobStore::Copy(const std::string& from, const std::string& to,
                                   const BlobPutOptions& options,
                                   const std::string& from_etag) {
  RETURN_IF_ERROR(ValidateKey(from));
  RETURN_IF_ERROR(ValidateKey(to));
  RETURN_IF_ERROR(ValidateBlobCopyOptions(options));
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobPut));
  Result<S3ObjectInfo> source = client_.HeadObject(from);
  if (source.status().IsNotFound()) return NotFound("no object " + from);
  if (!source.ok()) return Annotated(source.status(), "head of " + from);
  // x-amz-copy-source-if-match makes the store itself refuse another version; this
  // check (and the one of the copy's etag below) also holds on stores that ignore the
  // header (s3rver does).
  if (!from_etag.empty() && source->etag != from_etag) {
    return ConditionFailed("object " + from + " is not the version " + from_etag +
                           " any more");
  }
  const int64_t now = clock_->NowMicros();
  BlobInfo info;
  {
    MutexLock lock(&KeyMutex(to));
    // The mirror row first, as for a put: a crash before the copy commits leaves a row
    // for a missing object (the sweep drops it), never an object whose tags nobody knows.
    ASSIGN_OR_RETURN(std::optional<MirrorRow> previous,
                     PrepareRowForPut(to, options, now));
    Result<std::string> etag =
        client_.CopyObject(from, to, ContentTypeOf(options), options.tags, from_etag);
    if (!etag.ok()) {
      RestoreRow(to, previous);
      if (etag.status().IsNotFound()) return NotFound("no object " + from);
      return Annotated(etag.status(), "copy of " + from + " to " + to);
    }
    // A single-part etag is the body's MD5: a copy of other bytes than the version
    // asked for (written between the check above and the copy) shows in it.
    if (!from_etag.empty() && from_etag.find('-') == std::string::npos &&
        *etag != from_etag) {
      Status removed = client_.DeleteObject(to);
      RestoreRow(to, previous);
      (void)removed;  // best effort: the row stays tagged as asked, so the sweep finds it
      return ConditionFailed("object " + from + " changed while it was copied");
    }
    info.key = to;
    info.size = source->size;
    info.etag = *etag;
    info.created_micros = now;
    info.content_type = ContentTypeOf(options);
    info.tags = options.tags;
  }
  CountPut(info.size, std::nullopt);
  return info;
}

Result<BlobInfo> S3BlobStore::Head(const std::string& key) {
  RETURN_IF_ERROR(ValidateKey(key));
  Result<S3ObjectInfo> object = client_.HeadObject(key);
  if (!object.ok()) {
    if (object.status().IsNotFound()) return NotFound("no object " + key);
    return Annotated(object.status(), "head of " + key);
  }
  ASSIGN_OR_RETURN(std::optional<MirrorRow> row, mirror_.Read(key));
  return InfoOf(*object, row);
}

Result<std::string> S3BlobStore::Get(const std::string& key, BlobInfo* info) {
  return GetRange(key, 0, -1, info);
}

Result<std::string> S3BlobStore::GetRange(const std::string& key, int64_t offset,
                                          int64_t length, BlobInfo* info) {
  RETURN_IF_ERROR(ValidateKey(key));
  if (offset < 0) return OutOfRange("negative offset " + std::to_string(offset));
  std::string out;
  auto sink = [&](std::string_view piece) {
    out.append(piece);
    return Status::OK();
  };
  // S3 refuses a range starting at the end (416) and any range of an empty object;
  // the directory store answers "" there. A whole read needs no range.
  Result<S3ObjectInfo> object = length == 0
                                    ? client_.HeadObject(key)
                                    : client_.GetObject(key, offset, length, "", sink);
  if (!object.ok() && object.status().code() == StatusCode::kOutOfRange) {
    object = client_.HeadObject(key);
    if (object.ok() && offset > object->size) {
      return OutOfRange("offset " + std::to_string(offset) + " is beyond object " + key +
                        " of " + std::to_string(object->size) + " bytes");
    }
  }
  if (!object.ok()) {
    if (object.status().IsNotFound()) return NotFound("no object " + key);
    return Annotated(object.status(), "read of " + key);
  }
  if (offset > object->size) {
    return OutOfRange("offset " + std::to_string(offset) + " is beyond object " + key +
                      " of " + std::to_string(object->size) + " bytes");
  }
  if (info != nullptr) {
    ASSIGN_OR_RETURN(std::optional<MirrorRow> row, mirror_.Read(key));
    *info = InfoOf(*object, row);
  }
  return out;
}

Result<std::unique_ptr<BlobReader>> S3BlobStore::OpenReader(const std::string& key) {
  ASSIGN_OR_RETURN(BlobInfo info, Head(key));
  return std::unique_ptr<BlobReader>(new S3BlobReader(&client_, std::move(info)));
}

Status S3BlobStore::Delete(const std::string& key) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobDelete));
  MutexLock lock(&KeyMutex(key));
  Result<S3ObjectInfo> existing = client_.HeadObject(key);
  if (!existing.ok() && !existing.status().IsNotFound()) {
    return Annotated(existing.status(), "delete of " + key);
  }
  RETURN_IF_ERROR(Annotated(client_.DeleteObject(key), "delete of " + key));
  RETURN_IF_ERROR(mirror_.Delete({key}));
  if (existing.ok()) {
    object_count_.fetch_sub(1);
    byte_count_.fetch_sub(existing->size);
  }
  return Status::OK();
}

Status S3BlobStore::DeleteBatch(const std::vector<std::string>& keys,
                                const std::function<Status()>& after_each) {
  for (const std::string& key : keys) RETURN_IF_ERROR(ValidateKey(key));
  constexpr size_t kBatch = 1000;  // DeleteObjects' limit
  for (size_t begin = 0; begin < keys.size(); begin += kBatch) {
    RETURN_IF_ERROR(Fault(FaultPoint::kBlobDelete));
    std::vector<std::string> batch(keys.begin() + static_cast<std::ptrdiff_t>(begin),
                                   keys.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                      keys.size(), begin + kBatch)));
    RETURN_IF_ERROR(Annotated(client_.DeleteObjects(batch), "batch delete"));
    RETURN_IF_ERROR(mirror_.Delete(batch));
    object_count_.fetch_sub(static_cast<int64_t>(batch.size()));
    if (after_each) {
      for (size_t i = 0; i < batch.size(); ++i) RETURN_IF_ERROR(after_each());
    }
  }
  // Counted as if every key existed: RefreshStats (each sweep) corrects the count.
  return Status::OK();
}

Result<BlobListResult> S3BlobStore::List(const BlobListOptions& options) {
  RETURN_IF_ERROR(ValidateBlobListOptions(options));
  std::string after;
  if (!options.continuation.empty()) {
    ASSIGN_OR_RETURN(after, DecodeBlobContinuation(options));
  }
  // Keys are listed from the store without a delimiter and rolled up into common
  // prefixes here; past a common prefix the next request starts after every key under
  // it. One request per common prefix of the page at worst, but the same answer from
  // every store: the test server loses common prefixes whose directory holds no object
  // directly. The page is cut at `limit` items (keys and prefixes together, in one
  // order), exactly where its continuation says.
  struct Item {
    std::string name;
    bool is_prefix;
    S3ObjectInfo object;
  };
  std::vector<Item> items;
  const size_t limit = static_cast<size_t>(options.limit);
  const bool rolled_up = !options.delimiter.empty();
  auto past = [](const std::string& name) {
    return name.back() == '/' ? name + std::string(kAfterEveryKeyUnder) : name;
  };
  std::string start_after = after.empty() ? "" : past(after);
  bool more = true;
  while (more && items.size() <= limit) {
    Result<S3ListPage> page =
        client_.ListObjects(options.prefix, "", options.limit + 1, start_after, "");
    if (!page.ok()) return Annotated(page.status(), "listing " + options.prefix);
    more = page->truncated && !page->objects.empty();
    for (S3ObjectInfo& object : page->objects) {
      if (items.size() > limit) break;
      if (!object.key.starts_with(options.prefix)) continue;
      size_t slash =
          rolled_up ? object.key.find('/', options.prefix.size()) : std::string::npos;
      if (slash == std::string::npos) {
        start_after = object.key;
        items.push_back(Item{object.key, false, std::move(object)});
        continue;
      }
      std::string common = object.key.substr(0, slash + 1);
      if (!items.empty() && items.back().name == common) continue;
      items.push_back(Item{common, true, {}});
      // The rest of this page may hold more keys under it: skipped above, and the next
      // request starts past all of them.
      start_after = past(common);
    }
  }
  BlobListResult result;
  if (items.size() > limit) {
    items.resize(limit);
    result.continuation = EncodeBlobContinuation(options, items.back().name);
  }
  std::vector<std::string> keys;
  for (const Item& item : items) {
    if (!item.is_prefix) keys.push_back(item.name);
  }
  ASSIGN_OR_RETURN(std::vector<std::optional<MirrorRow>> rows, mirror_.ReadMany(keys));
  size_t next_row = 0;
  for (const Item& item : items) {
    if (item.is_prefix) {
      result.prefixes.push_back(item.name);
    } else {
      result.keys.push_back(InfoOf(item.object, rows[next_row++]));
    }
  }
  return result;
}

Result<BlobTags> S3BlobStore::GetTags(const std::string& key) {
  ASSIGN_OR_RETURN(BlobInfo info, Head(key));
  return info.tags;
}

Status S3BlobStore::PutTags(const std::string& key, const BlobTags& tags) {
  RETURN_IF_ERROR(ValidateKey(key));
  BlobPutOptions check;
  check.tags = tags;
  RETURN_IF_ERROR(ValidateBlobPutOptions(check));
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobPutTags));
  MutexLock lock(&KeyMutex(key));
  Result<S3ObjectInfo> object = client_.HeadObject(key);
  if (!object.ok()) {
    if (object.status().IsNotFound()) return NotFound("no object " + key);
    return Annotated(object.status(), "tagging of " + key);
  }
  ASSIGN_OR_RETURN(std::optional<MirrorRow> row, mirror_.Read(key));
  if (row && row->tags == tags) return Status::OK();
  if (!row && tags.empty()) return Status::OK();
  // The mirror first: the sweep reads it, so an untag is in force once it is written.
  MirrorRow updated{tags,
                    row ? row->created_micros : object->last_modified_unix_s * 1000000};
  RETURN_IF_ERROR(mirror_.Write(key, updated));
  if (client_.location().store_tags) {
    RETURN_IF_ERROR(Annotated(client_.PutObjectTagging(key, tags), "tagging of " + key));
  }
  return Status::OK();
}

Result<std::optional<std::string>> S3BlobStore::PresignUrl(const std::string& method,
                                                           const std::string& key,
                                                           int64_t expires_unix_s,
                                                           const BlobTags& put_tags) {
  RETURN_IF_ERROR(ValidateKey(key));
  const int64_t valid_for = std::max<int64_t>(1, expires_unix_s - clock_->NowSeconds());
  std::map<std::string, std::string> query;
  if (method == "PUT" && !put_tags.empty()) {
    BlobPutOptions check;
    check.tags = put_tags;
    RETURN_IF_ERROR(ValidateBlobPutOptions(check));
    // Recorded before the URL exists: an upload never completed is swept even though
    // the server never sees its PUT.
    MutexLock lock(&KeyMutex(key));
    RETURN_IF_ERROR(mirror_.Write(key, MirrorRow{put_tags, clock_->NowMicros()}));
    if (client_.location().store_tags) query["x-amz-tagging"] = S3TaggingQuery(put_tags);
  }
  // Signed at the store's time (real time), however the server's clock runs.
  return std::optional<std::string>(client_.Presign(
      method, key, static_cast<int64_t>(std::time(nullptr)), valid_for, query));
}

Result<SweepReport> S3BlobStore::Sweep(const LifecycleRule& rule,
                                       const BlobKeepPredicate& keep,
                                       const std::atomic<bool>* cancel) {
  if (rule.tag_key.empty()) return InvalidArgument("lifecycle rule needs a tag key");
  if (rule.max_age_micros < 0) return InvalidArgument("lifecycle rule age is negative");
  SweepReport report;
  const int64_t now = clock_->NowMicros();
  auto record_error = [&](const Status& status) {
    ++report.errors;
    if (report.first_error.empty()) report.first_error = status.ToString();
  };
  RETURN_IF_ERROR(mirror_.ForEach([&](const std::string& key, const MirrorRow& row) {
    if (cancel != nullptr && cancel->load()) {
      report.cancelled = true;
      return false;
    }
    ++report.examined;
    if (!SweepShouldDelete(rule, row.tags, row.created_micros, now, key, keep, &report)) {
      return true;
    }
    Status fault = Fault(FaultPoint::kBlobSweepDelete);
    if (!fault.ok()) {
      record_error(fault);
      return true;
    }
    MutexLock lock(&KeyMutex(key));
    Result<std::optional<MirrorRow>> current = mirror_.Read(key);
    if (!current.ok()) {
      record_error(current.status());
      return true;
    }
    if (!*current || (*current)->created_micros != row.created_micros ||
        !rule.Selects((*current)->tags) ||
        !rule.Expired((*current)->created_micros, now)) {
      ++report.changed;  // untagged or overwritten since: it wins
      return true;
    }
    Result<S3ObjectInfo> object = client_.HeadObject(key);
    if (!object.ok() && !object.status().IsNotFound()) {
      record_error(object.status());
      return true;
    }
    Status deleted = client_.DeleteObject(key);
    if (deleted.ok()) deleted = mirror_.Delete({key});
    if (!deleted.ok()) {
      record_error(deleted);
      return true;
    }
    if (!object.ok()) {  // an upload URL never used, or a crash's row: no object
      ++report.debris_removed;
      return true;
    }
    ++report.deleted;
    report.deleted_bytes += object->size;
    object_count_.fetch_sub(1);
    byte_count_.fetch_sub(object->size);
    if (report.deleted_keys.size() < kS3MaxDeletedKeysReported) {
      report.deleted_keys.push_back(key);
    }
    return true;
  }));
  if (report.cancelled) return report;
  std::sort(report.deleted_keys.begin(), report.deleted_keys.end());
  Status refreshed = RefreshStats();
  if (!refreshed.ok()) record_error(refreshed);
  return report;
}

Status S3BlobStore::RefreshStats() {
  int64_t objects = 0;
  int64_t bytes = 0;
  std::string token;
  do {
    Result<S3ListPage> page = client_.ListObjects("", "", 1000, "", token);
    if (!page.ok()) return Annotated(page.status(), "counting the bucket's objects");
    for (const S3ObjectInfo& object : page->objects) {
      ++objects;
      bytes += object.size;
    }
    token = page->truncated ? page->next_continuation_token : "";
  } while (!token.empty());
  object_count_.store(objects);
  byte_count_.store(bytes);
  return Status::OK();
}

BlobStats S3BlobStore::Stats() const {
  return BlobStats{object_count_.load(), byte_count_.load()};
}

Result<std::unique_ptr<BlobCapture>> S3BlobStore::Capture(
    const std::function<Status()>& /*at_point*/) {
  return FailedPrecondition(
      "backup of an S3 blob store (bucket " + options_.location.bucket +
      "): use the bucket's own versioning or replication; `sheetlog backup` copies "
      "the directory store");
}

}  // namespace sheetlog
