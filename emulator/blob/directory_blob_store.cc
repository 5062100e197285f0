#include "emulator/blob/directory_blob_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "emulator/blob/blob_files_internal.h"
#include "emulator/blob/blob_presigner.h"
#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/json_text.h"

namespace sheetlog {

using blob_files::ErrnoStatus;
using blob_files::UniqueFd;

namespace {

constexpr std::string_view kMetaName = "\\meta";
constexpr std::string_view kBodyPrefix = "\\body.";
constexpr std::string_view kDefaultContentType = "application/octet-stream";
constexpr size_t kMaxMetaBytes = 64 * 1024;
constexpr size_t kMaxDeletedKeysReported = 1000;

bool IsBodyName(std::string_view name) { return name.starts_with(kBodyPrefix); }
// Entries whose names contain '\' are the store's own files, never key parts.
bool IsReservedName(std::string_view name) {
  return name.find('\\') != std::string_view::npos;
}

std::string Hex(const unsigned char* data, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kHex[data[i] >> 4]);
    out.push_back(kHex[data[i] & 15]);
  }
  return out;
}

Result<std::string> NewBodyId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return Internal("RAND_bytes failed");
  return Hex(bytes, sizeof bytes);
}

}  // namespace

// ---------------------------------------------------------------------------------
// Metadata

struct DirectoryBlobStore::StoredMeta {
  std::string body_id;
  int64_t size = 0;
  std::string etag;
  int64_t created_micros = 0;
  std::string content_type;
  BlobTags tags;

  std::string Encode() const {
    nlohmann::json j = {{"v", 1},
                        {"body", body_id},
                        {"size", size},
                        {"etag", etag},
                        {"created_micros", created_micros},
                        {"content_type", content_type},
                        {"tags", tags}};
    return j.dump();
  }

  // False if `text` is not metadata this code wrote.
  bool Decode(std::string_view text) {
    nlohmann::json j = ParseJsonOrDiscarded(text);
    if (j.is_discarded() || !j.is_object()) return false;
    try {
      if (j.at("v").get<int>() != 1) return false;
      body_id = j.at("body").get<std::string>();
      size = j.at("size").get<int64_t>();
      etag = j.at("etag").get<std::string>();
      created_micros = j.at("created_micros").get<int64_t>();
      content_type = j.at("content_type").get<std::string>();
      tags = j.at("tags").get<BlobTags>();
    } catch (const nlohmann::json::exception&) {
      return false;  // a missing field or a wrong type: treat as unreadable
    }
    return !body_id.empty() && body_id.find('/') == std::string::npos && size >= 0;
  }

  BlobInfo ToInfo(const std::string& key) const {
    return BlobInfo{key, size, etag, created_micros, content_type, tags};
  }
};

// ---------------------------------------------------------------------------------
// Open, recovery

DirectoryBlobStore::DirectoryBlobStore(const BlobStoreOptions& options, Clock* clock,
                                       FaultInjector* faults)
    : options_(options),
      clock_(clock),
      faults_(faults),
      objects_dir_(options.root + "/objects"),
      tmp_dir_(options.root + "/tmp") {}

DirectoryBlobStore::~DirectoryBlobStore() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Result<std::unique_ptr<DirectoryBlobStore>> DirectoryBlobStore::Open(
    const BlobStoreOptions& options, Clock* clock, FaultInjector* faults) {
  if (options.root.empty()) return InvalidArgument("blob store root is empty");
  if (options.max_object_bytes <= 0) {
    return InvalidArgument("max_object_bytes must be positive");
  }
  if (clock == nullptr) return InvalidArgument("blob store needs a clock");
  std::unique_ptr<DirectoryBlobStore> store(
      new DirectoryBlobStore(options, clock, faults));
  RETURN_IF_ERROR(store->Init());
  return store;
}

Status DirectoryBlobStore::Init() {
  const std::string& root = options_.root;
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec) return Internal("create blob store directory " + root + ": " + ec.message());

  std::string lock_path = root + "/LOCK";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return ErrnoStatus("open", lock_path, errno);
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return FailedPrecondition("blob store " + root +
                                " is already open (another process or BlobStore holds " +
                                lock_path + ")");
    }
    return ErrnoStatus("flock", lock_path, errno);
  }

  for (const std::string& dir : {objects_dir_, tmp_dir_}) {
    if (::mkdir(dir.c_str(), 0755) == 0) {
      if (options_.sync) RETURN_IF_ERROR(blob_files::SyncPath(root));
    } else if (errno != EEXIST) {
      return ErrnoStatus("mkdir", dir, errno);
    }
  }
  ASSIGN_OR_RETURN(presigner_, BlobPresigner::LoadOrCreate(root + "/secret", clock_));
  return Recover();
}

Status DirectoryBlobStore::Recover() {
  // Everything in tmp/ belongs to a writer of a previous process (we hold the lock, and
  // this store has no writers yet).
  ASSIGN_OR_RETURN(std::vector<blob_files::DirEntry> stale,
                   blob_files::ListDir(tmp_dir_));
  for (const auto& entry : stale) {
    std::string path = tmp_dir_ + "/" + entry.name;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus("unlink", path, errno);
    }
  }
  // Links of a capture a previous process did not finish (a backup it was writing).
  std::error_code ec;
  std::filesystem::remove_all(options_.root + "/capture", ec);
  if (ec) return Internal("remove " + options_.root + "/capture: " + ec.message());
  return RecoverDir(objects_dir_, "").status();
}

Result<bool> DirectoryBlobStore::RecoverDir(const std::string& path,
                                            const std::string& key) {
  ASSIGN_OR_RETURN(std::vector<blob_files::DirEntry> entries, blob_files::ListDir(path));
  bool has_meta = false;
  std::vector<std::string> bodies;
  size_t remaining = 0;  // entries that stay
  for (const auto& entry : entries) {
    if (entry.is_dir && !IsReservedName(entry.name)) {
      std::string child_key = key.empty() ? entry.name : key + "/" + entry.name;
      ASSIGN_OR_RETURN(bool now_empty, RecoverDir(path + "/" + entry.name, child_key));
      if (!(now_empty && ::rmdir((path + "/" + entry.name).c_str()) == 0)) ++remaining;
    } else if (!key.empty() && entry.name == kMetaName) {
      has_meta = true;
      ++remaining;
    } else if (!key.empty() && IsBodyName(entry.name)) {
      bodies.push_back(entry.name);
    } else {
      ++remaining;  // not ours: leave it alone
    }
  }
  if (key.empty()) return false;  // objects/ itself always stays

  auto unlink_body = [&](const std::string& name) -> Status {
    std::string body_path = path + "/" + name;
    if (::unlink(body_path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus("unlink", body_path, errno);
    }
    return Status::OK();
  };
  if (!has_meta) {
    // Bodies that no metadata names: an uncommitted put or a half-done delete.
    for (const auto& name : bodies) RETURN_IF_ERROR(unlink_body(name));
    return remaining == 0;
  }
  ++object_count_;
  if (bodies.size() == 1) {
    struct stat st;
    if (::stat((path + "/" + bodies[0]).c_str(), &st) == 0) byte_count_ += st.st_size;
    return false;
  }
  Result<StoredMeta> meta = ReadMeta(key);
  if (!meta.ok()) {
    // Unreadable metadata: keep every body; an operator may want them.
    for (const auto& name : bodies) {
      struct stat st;
      if (::stat((path + "/" + name).c_str(), &st) == 0) byte_count_ += st.st_size;
    }
    return false;
  }
  byte_count_ += meta->size;
  std::string keep = std::string(kBodyPrefix) + meta->body_id;
  for (const auto& name : bodies) {
    if (name != keep) RETURN_IF_ERROR(unlink_body(name));
  }
  return false;
}

// ---------------------------------------------------------------------------------
// Small helpers

std::string DirectoryBlobStore::ObjectDir(std::string_view key) const {
  return objects_dir_ + "/" + std::string(key);
}

Mutex& DirectoryBlobStore::KeyMutex(std::string_view key) {
  return key_mutexes_[std::hash<std::string_view>{}(key) % kLockStripes];
}

Status DirectoryBlobStore::Fault(FaultPoint point) {
  return faults_ == nullptr ? Status::OK() : faults_->Hit(point);
}

BlobStats DirectoryBlobStore::Stats() const {
  return BlobStats{object_count_.load(), byte_count_.load()};
}

Result<DirectoryBlobStore::StoredMeta> DirectoryBlobStore::ReadMeta(
    const std::string& key, bool* unreadable) const {
  std::string path = ObjectDir(key) + "/" + std::string(kMetaName);
  Result<std::string> text = blob_files::ReadSmallFile(path, kMaxMetaBytes);
  if (!text.ok()) {
    if (text.status().IsNotFound()) {
      return NotFound("no such blob: " + QuoteForMessage(key));
    }
    return text.status();
  }
  StoredMeta meta;
  if (!meta.Decode(*text)) {
    if (unreadable != nullptr) *unreadable = true;
    return Internal("metadata of blob " + QuoteForMessage(key) + " (" + path +
                    ") is unreadable");
  }
  return meta;
}

Status DirectoryBlobStore::WriteMeta(const std::string& key, const StoredMeta& meta) {
  ASSIGN_OR_RETURN(std::string tmp_id, NewBodyId());
  return blob_files::WriteFileAtomically(tmp_dir_ + "/" + tmp_id + ".meta",
                                         ObjectDir(key) + "/" + std::string(kMetaName),
                                         meta.Encode(), options_.sync);
}

int64_t DirectoryBlobStore::RemoveBodiesExceptLocked(const std::string& key,
                                                     std::string_view keep_body_id) {
  std::string dir = ObjectDir(key);
  Result<std::vector<blob_files::DirEntry>> entries = blob_files::ListDir(dir);
  if (!entries.ok()) return 0;
  int64_t removed = 0;
  for (const auto& entry : *entries) {
    if (!IsBodyName(entry.name)) continue;
    if (!keep_body_id.empty() &&
        std::string_view(entry.name).substr(kBodyPrefix.size()) == keep_body_id) {
      continue;
    }
    if (::unlink((dir + "/" + entry.name).c_str()) == 0) ++removed;
  }
  return removed;
}

// ---------------------------------------------------------------------------------
// Put

Result<std::unique_ptr<BlobWriter>> DirectoryBlobStore::BeginPut(
    const std::string& key, const BlobPutOptions& options) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(ValidateBlobPutOptions(options));
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobPut));
  ASSIGN_OR_RETURN(std::string body_id, NewBodyId());
  std::string tmp_path = tmp_dir_ + "/" + body_id + ".body";
  UniqueFd fd(::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus("create", tmp_path, errno);
  EVP_MD_CTX* md5 = EVP_MD_CTX_new();
  if (md5 == nullptr || EVP_DigestInit_ex(md5, EVP_md5(), nullptr) != 1) {
    EVP_MD_CTX_free(md5);
    ::unlink(tmp_path.c_str());
    return Internal("cannot initialize MD5");
  }
  return std::unique_ptr<BlobWriter>(
      new DirectoryBlobWriter(this, key, options, body_id, tmp_path, fd.Release(), md5));
}

Result<BlobInfo> DirectoryBlobStore::Put(const std::string& key, std::string_view body,
                                         const BlobPutOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<BlobWriter> writer, BeginPut(key, options));
  RETURN_IF_ERROR(writer->Append(body));
  return writer->Commit();
}

Result<BlobInfo> DirectoryBlobStore::CommitBody(const std::string& key,
                                                const std::string& tmp_body_path,
                                                const std::string& body_id, int64_t size,
                                                const std::string& etag,
                                                const BlobPutOptions& options) {
  MutexLock lock(&KeyMutex(key));
  if (HasBlobPutConditions(options)) {
    Result<StoredMeta> current = ReadMeta(key);
    if (!current.ok() && !current.status().IsNotFound()) return current.status();
    RETURN_IF_ERROR(CheckBlobPutConditions(
        key, options, current.ok() ? std::optional(current->etag) : std::nullopt));
  }
  const std::string dir = ObjectDir(key);
  const std::string body_path = dir + "/" + std::string(kBodyPrefix) + body_id;
  // A concurrent delete of a neighbouring key may remove our (still empty) directory
  // between MakeDirs and rename; make it again.
  constexpr int kMaxAttempts = 100;
  for (int attempt = 0;; ++attempt) {
    RETURN_IF_ERROR(blob_files::MakeDirs(objects_dir_, key, options_.sync));
    if (::rename(tmp_body_path.c_str(), body_path.c_str()) == 0) break;
    int err = errno;
    if (err != ENOENT || attempt + 1 >= kMaxAttempts) {
      return ErrnoStatus("rename to " + body_path, tmp_body_path, err);
    }
  }
  auto discard_body = [&] {
    ::unlink(body_path.c_str());
    blob_files::RemoveEmptyDirs(objects_dir_, key);
  };
  if (options_.sync) {
    // The body's name must be durable before metadata naming it can be.
    Status synced = blob_files::SyncPath(dir);
    if (!synced.ok()) {
      discard_body();
      return synced;
    }
  }
  // An error here leaves the renamed body behind, exactly as a crash at this point
  // would: tests use it to check that such debris is invisible and cleaned up.
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobPutAfterBody));

  ReaderMutexLock gate(&capture_gate_);
  Result<StoredMeta> old = ReadMeta(key);
  if (capture_ != nullptr && old.ok()) CaptureLocked(key, *old);
  StoredMeta meta;
  meta.body_id = body_id;
  meta.size = size;
  meta.etag = etag;
  meta.created_micros = clock_->NowMicros();
  meta.content_type = options.content_type.empty() ? std::string(kDefaultContentType)
                                                   : options.content_type;
  meta.tags = options.tags;
  Status committed = WriteMeta(key, meta);  // the commit point
  if (!committed.ok()) {
    // The rename may have happened with only the directory sync failing: then the new
    // metadata is in place and its body must stay.
    Result<StoredMeta> now = ReadMeta(key);
    if (!now.ok() || now->body_id != body_id) {
      discard_body();
      return committed;
    }
  }
  if (old.ok()) {
    byte_count_ += size - old->size;
  } else {
    if (old.status().IsNotFound()) ++object_count_;  // else: unreadable, already counted
    byte_count_ += size;
  }
  // Committed: an error from here on still leaves the new object in place (a client
  // seeing it would retry the put, which is idempotent).
  RETURN_IF_ERROR(committed);
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobPutAfterCommit));
  RemoveBodiesExceptLocked(key, body_id);
  return meta.ToInfo(key);
}

DirectoryBlobWriter::DirectoryBlobWriter(DirectoryBlobStore* store, std::string key,
                                         BlobPutOptions options, std::string body_id,
                                         std::string tmp_path, int fd, evp_md_ctx_st* md5)
    : store_(store),
      key_(std::move(key)),
      options_(std::move(options)),
      body_id_(std::move(body_id)),
      tmp_path_(std::move(tmp_path)),
      fd_(fd),
      md5_(md5) {}

DirectoryBlobWriter::~DirectoryBlobWriter() { Abort(); }

void DirectoryBlobWriter::Abort() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (md5_ != nullptr) {
    EVP_MD_CTX_free(md5_);
    md5_ = nullptr;
  }
  if (!finished_) {
    ::unlink(tmp_path_.c_str());
    finished_ = true;
    if (failure_.ok()) failure_ = FailedPrecondition("blob writer was aborted");
  }
}

Status DirectoryBlobWriter::Append(std::string_view data) {
  if (!failure_.ok()) return failure_;
  if (finished_) return FailedPrecondition("blob writer already committed");
  const int64_t limit = store_->options_.max_object_bytes;
  if (static_cast<int64_t>(data.size()) > limit - size_) {
    Status too_large = ResourceExhausted("blob " + QuoteForMessage(key_) +
                                         " exceeds the maximum object size of " +
                                         std::to_string(limit) + " bytes");
    failure_ = too_large;
    Abort();
    return too_large;
  }
  Status written = blob_files::WriteAll(fd_, data, tmp_path_);
  if (written.ok() && EVP_DigestUpdate(md5_, data.data(), data.size()) != 1) {
    written = Internal("MD5 update failed");
  }
  if (!written.ok()) {
    failure_ = written;
    Abort();
    return written;
  }
  size_ += static_cast<int64_t>(data.size());
  return Status::OK();
}

Result<BlobInfo> DirectoryBlobWriter::Commit() {
  if (!failure_.ok()) return failure_;
  if (finished_) return FailedPrecondition("blob writer already committed");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_length = 0;
  Status status;
  if (EVP_DigestFinal_ex(md5_, digest, &digest_length) != 1) {
    status = Internal("MD5 final failed");
  }
  if (status.ok() && store_->options_.sync && ::fsync(fd_) != 0) {
    status = ErrnoStatus("fsync", tmp_path_, errno);
  }
  int closed = ::close(fd_);
  fd_ = -1;
  if (status.ok() && closed != 0) status = ErrnoStatus("close", tmp_path_, errno);
  if (!status.ok()) {
    failure_ = status;
    Abort();
    return status;
  }
  Result<BlobInfo> info = store_->CommitBody(key_, tmp_path_, body_id_, size_,
                                             Hex(digest, digest_length), options_);
  if (!info.ok()) {
    failure_ = info.status();
    Abort();  // removes the temporary file if the rename never happened
    return info;
  }
  finished_ = true;
  Abort();  // frees the MD5 context; nothing else left to do
  failure_ = FailedPrecondition("blob writer already committed");
  return info;
}

// ---------------------------------------------------------------------------------
// Reads

Result<BlobInfo> DirectoryBlobStore::Copy(const std::string& from, const std::string& to,
                                          const BlobPutOptions& options,
                                          const std::string& from_etag) {
  RETURN_IF_ERROR(ValidateKey(to));
  RETURN_IF_ERROR(ValidateBlobCopyOptions(options));
  // A read of one version streamed into a new put: memory stays bounded whatever the
  // size, and a put of `from` meanwhile does not change what is copied.
  ASSIGN_OR_RETURN(std::unique_ptr<BlobReader> reader, OpenReader(from));
  if (!from_etag.empty() && reader->info().etag != from_etag) {
    return ConditionFailed("object " + from + " is not the version " + from_etag +
                           " any more");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<BlobWriter> writer, BeginPut(to, options));
  Status streamed = reader->Stream(
      0, -1, [&](std::string_view chunk) { return writer->Append(chunk); });
  if (!streamed.ok()) {
    writer->Abort();
    return streamed;
  }
  return writer->Commit();
}

Result<BlobInfo> DirectoryBlobStore::Head(const std::string& key) {
  RETURN_IF_ERROR(ValidateKey(key));
  ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(key));
  return meta.ToInfo(key);
}

Result<std::unique_ptr<BlobReader>> DirectoryBlobStore::OpenReader(
    const std::string& key) {
  RETURN_IF_ERROR(ValidateKey(key));
  // The metadata names the body; a concurrent overwrite may commit and remove that body
  // between our two opens. Then the metadata has changed and we try again.
  constexpr int kMaxAttempts = 100;
  std::string last_body_id;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(key));
    if (meta.body_id == last_body_id) {
      return Internal("body of blob " + QuoteForMessage(key) +
                      " is missing though its metadata names it (damaged store)");
    }
    std::string path = ObjectDir(key) + "/" + std::string(kBodyPrefix) + meta.body_id;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      return std::unique_ptr<BlobReader>(
          new DirectoryBlobReader(meta.ToInfo(key), fd, path));
    }
    if (errno != ENOENT) return ErrnoStatus("open", path, errno);
    last_body_id = meta.body_id;
  }
  return Unavailable("blob " + QuoteForMessage(key) + " keeps changing; try again");
}

Result<std::string> DirectoryBlobStore::Get(const std::string& key, BlobInfo* info) {
  return GetRange(key, 0, -1, info);
}

Result<std::string> DirectoryBlobStore::GetRange(const std::string& key, int64_t offset,
                                                 int64_t length, BlobInfo* info) {
  ASSIGN_OR_RETURN(std::unique_ptr<BlobReader> reader, OpenReader(key));
  ASSIGN_OR_RETURN(std::string data, reader->ReadAt(offset, length));
  if (info != nullptr) *info = reader->info();
  return data;
}

DirectoryBlobReader::DirectoryBlobReader(BlobInfo info, int fd, std::string path)
    : info_(std::move(info)), fd_(fd), path_(std::move(path)) {}

DirectoryBlobReader::~DirectoryBlobReader() { ::close(fd_); }

Result<std::string> DirectoryBlobReader::ReadAt(int64_t offset, int64_t length) const {
  if (offset < 0 || offset > info_.size) {
    return OutOfRange("offset " + std::to_string(offset) + " is outside blob " +
                      QuoteForMessage(info_.key) + " of " + std::to_string(info_.size) +
                      " bytes");
  }
  int64_t available = info_.size - offset;
  int64_t n = length < 0 ? available : std::min(length, available);
  return blob_files::ReadAt(fd_, offset, static_cast<size_t>(n), path_);
}

Status DirectoryBlobReader::Stream(int64_t offset, int64_t length,
                                   const std::function<Status(std::string_view)>& sink,
                                   size_t chunk_bytes) const {
  if (offset < 0 || offset > info_.size) return ReadAt(offset, 0).status();
  if (chunk_bytes == 0) chunk_bytes = 1 << 20;
  int64_t end = length < 0 ? info_.size : std::min(info_.size, offset + length);
  for (int64_t at = offset; at < end;) {
    size_t n = static_cast<size_t>(std::min<int64_t>(end - at, chunk_bytes));
    ASSIGN_OR_RETURN(std::string chunk, blob_files::ReadAt(fd_, at, n, path_));
    if (chunk.size() != n) {
      return Internal("body of blob " + QuoteForMessage(info_.key) +
                      " is shorter than its metadata says (damaged store)");
    }
    RETURN_IF_ERROR(sink(chunk));
    at += static_cast<int64_t>(n);
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------
// Delete and tags

Result<std::optional<int64_t>> DirectoryBlobStore::DeleteLocked(const std::string& key,
                                                                bool sync) {
  const std::string dir = ObjectDir(key);
  const std::string meta_path = dir + "/" + std::string(kMetaName);
  ReaderMutexLock gate(&capture_gate_);
  Result<StoredMeta> meta = ReadMeta(key);
  if (capture_ != nullptr && meta.ok()) CaptureLocked(key, *meta);
  std::optional<int64_t> deleted;
  if (::unlink(meta_path.c_str()) == 0) {  // the commit point of a delete
    deleted = meta.ok() ? meta->size : 0;
    --object_count_;
    byte_count_ -= *deleted;
    if (options_.sync && sync) RETURN_IF_ERROR(blob_files::SyncPath(dir));
  } else if (errno != ENOENT && errno != ENOTDIR) {
    return ErrnoStatus("unlink", meta_path, errno);
  }
  RemoveBodiesExceptLocked(key, "");  // with the metadata gone these are debris
  blob_files::RemoveEmptyDirs(objects_dir_, key);
  return deleted;
}

Status DirectoryBlobStore::Delete(const std::string& key) {
  RETURN_IF_ERROR(ValidateKey(key));
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobDelete));
  MutexLock lock(&KeyMutex(key));
  return DeleteLocked(key).status();
}

std::string DirectoryBlobStore::NearestExistingDir(const std::string& key) const {
  std::string relative = key;
  while (!relative.empty()) {
    const std::string path = objects_dir_ + "/" + relative;
    struct stat info;
    if (::stat(path.c_str(), &info) == 0) return path;
    const size_t slash = relative.rfind('/');
    relative = slash == std::string::npos ? std::string() : relative.substr(0, slash);
  }
  return objects_dir_;
}

Status DirectoryBlobStore::DeleteBatch(const std::vector<std::string>& keys,
                                       const std::function<Status()>& after_each) {
  for (const std::string& key : keys) RETURN_IF_ERROR(ValidateKey(key));
  size_t attempted = 0;
  Status status = Status::OK();
  for (const std::string& key : keys) {
    status = Fault(FaultPoint::kBlobDelete);
    if (!status.ok()) break;
    ++attempted;
    {
      MutexLock lock(&KeyMutex(key));
      status = DeleteLocked(key, /*sync=*/false).status();
    }
    if (!status.ok()) break;
    if (after_each) status = after_each();
    if (!status.ok()) break;
  }
  if (!options_.sync) return status;
  // What was deleted is made durable even when the batch stopped early. The directories
  // are found once all deletions are done: a later one may remove the directory an
  // earlier one left.
  std::set<std::string> changed_dirs;
  for (size_t i = 0; i < attempted; ++i) changed_dirs.insert(NearestExistingDir(keys[i]));
  for (std::string dir : changed_dirs) {
    Status synced = blob_files::SyncPath(dir);
    // Removed meanwhile by another deletion (which syncs its own parent): its nearest
    // ancestor holds the change now.
    while (synced.code() == StatusCode::kNotFound && dir.size() > objects_dir_.size()) {
      const std::string parent = dir.substr(0, dir.rfind('/'));
      dir = NearestExistingDir(parent.size() > objects_dir_.size()
                                   ? parent.substr(objects_dir_.size() + 1)
                                   : std::string());
      synced = blob_files::SyncPath(dir);
    }
    if (status.ok()) status = synced;
  }
  return status;
}

Result<BlobTags> DirectoryBlobStore::GetTags(const std::string& key) {
  ASSIGN_OR_RETURN(BlobInfo info, Head(key));
  return std::move(info.tags);
}

Status DirectoryBlobStore::PutTags(const std::string& key, const BlobTags& tags) {
  RETURN_IF_ERROR(ValidateKey(key));
  BlobPutOptions check;
  check.tags = tags;
  RETURN_IF_ERROR(ValidateBlobPutOptions(check));
  RETURN_IF_ERROR(Fault(FaultPoint::kBlobPutTags));
  MutexLock lock(&KeyMutex(key));
  ASSIGN_OR_RETURN(StoredMeta meta, ReadMeta(key));
  if (meta.tags == tags) return Status::OK();
  meta.tags = tags;
  return WriteMeta(key, meta);
}

// ---------------------------------------------------------------------------------
// Presigned URLs

Result<std::optional<std::string>> DirectoryBlobStore::PresignUrl(
    const std::string& method, const std::string& key, int64_t expires_unix_s,
    const BlobTags& put_tags) {
  (void)method, (void)key, (void)expires_unix_s, (void)put_tags;
  return std::optional<std::string>();  // the server serves them (server_presigner)
}

// ---------------------------------------------------------------------------------
// List
//
// Order. Keys compare byte-wise, but the directory tree is not in that order by
// itself: the keys under directory "a" ("a/...") sort after "a!" and before "a0". So
// each directory's children are turned into tokens, "<name>" for the object named by
// the child (if it has \meta) and "<name>/" for everything below it, the tokens are
// sorted, and the walk visits them in that order, recursing into "<name>/" tokens. All
// keys below "<name>/" share that prefix, so they sort exactly where the token does.

// Which items a continuation excludes: everything up to and including `after` and,
// for a common prefix, every key that starts with it.
struct DirectoryBlobStore::ListBound {
  std::string after;  // empty: nothing excluded
  bool is_prefix = false;

  bool Allows(std::string_view item) const {
    if (after.empty()) return true;
    if (is_prefix && item.starts_with(after)) return false;
    return item > std::string_view(after);
  }
  // Whether any key starting with `subtree` (which ends in '/') may be allowed.
  bool MayContain(std::string_view subtree) const {
    if (after.empty()) return true;
    if (is_prefix && subtree.starts_with(after)) return false;
    if (std::string_view(after).starts_with(subtree)) return true;  // partly after
    return subtree > std::string_view(after);
  }
};

namespace {

bool HasMeta(const std::string& dir_path) {
  std::string path = dir_path + "/" + std::string(kMetaName);
  return ::access(path.c_str(), F_OK) == 0;
}

}  // namespace

bool DirectoryBlobStore::SubtreeHasObject(const std::string& dir_path) {
  Result<std::vector<blob_files::DirEntry>> entries = blob_files::ListDir(dir_path);
  if (!entries.ok()) return false;
  for (const auto& entry : *entries) {
    if (entry.is_dir && !IsReservedName(entry.name) &&
        HasMeta(dir_path + "/" + entry.name)) {
      return true;
    }
  }
  for (const auto& entry : *entries) {
    if (entry.is_dir && !IsReservedName(entry.name) &&
        SubtreeHasObject(dir_path + "/" + entry.name)) {
      return true;
    }
  }
  return false;
}

Result<bool> DirectoryBlobStore::WalkForList(const std::string& dir_path,
                                             const std::string& key_prefix,
                                             std::string_view name_filter, bool recurse,
                                             const ListBound& bound,
                                             const ListVisitor& visit) {
  Result<std::vector<blob_files::DirEntry>> entries = blob_files::ListDir(dir_path);
  if (!entries.ok()) {
    // Removed by a concurrent delete (or never there): nothing to list.
    if (entries.status().IsNotFound()) return true;
    return entries.status();
  }
  struct Token {
    std::string text;  // full key, or full key + "/" for the subtree
    size_t child;
    bool subtree;
  };
  std::vector<Token> tokens;
  for (size_t i = 0; i < entries->size(); ++i) {
    const auto& entry = (*entries)[i];
    if (!entry.is_dir || IsReservedName(entry.name)) continue;
    if (!std::string_view(entry.name).starts_with(name_filter)) continue;
    std::string key = key_prefix + entry.name;
    if (bound.Allows(key)) tokens.push_back({key, i, false});
    key.push_back('/');
    if (bound.MayContain(key)) tokens.push_back({std::move(key), i, true});
  }
  std::sort(tokens.begin(), tokens.end(),
            [](const Token& a, const Token& b) { return a.text < b.text; });
  for (Token& token : tokens) {
    std::string child_path = dir_path + "/" + (*entries)[token.child].name;
    if (!token.subtree) {
      if (!HasMeta(child_path)) continue;
      ASSIGN_OR_RETURN(bool go_on, visit(std::move(token.text), false));
      if (!go_on) return false;
    } else if (recurse) {
      ASSIGN_OR_RETURN(bool go_on,
                       WalkForList(child_path, token.text, "", true, bound, visit));
      if (!go_on) return false;
    } else {
      // A common prefix: reported if it is after the bound and holds some object.
      if (!bound.Allows(token.text) || !SubtreeHasObject(child_path)) continue;
      ASSIGN_OR_RETURN(bool go_on, visit(std::move(token.text), true));
      if (!go_on) return false;
    }
  }
  return true;
}

Result<BlobListResult> DirectoryBlobStore::List(const BlobListOptions& options) {
  RETURN_IF_ERROR(ValidateBlobListOptions(options));
  ListBound bound;
  if (!options.continuation.empty()) {
    ASSIGN_OR_RETURN(bound.after, DecodeBlobContinuation(options));
    // Keys never end in '/' (blob_key.h): an item that does is a common prefix.
    bound.is_prefix = bound.after.back() == '/';
  }

  BlobListResult result;
  // The prefix splits into directories to enter and a filter on the names in the last
  // one. A directory part that no key could contain means no key has this prefix; it is
  // never turned into a path.
  const std::string& prefix = options.prefix;
  size_t last_slash = prefix.rfind('/');
  std::string dir_part =
      last_slash == std::string::npos ? std::string() : prefix.substr(0, last_slash);
  std::string_view name_filter = std::string_view(prefix).substr(
      last_slash == std::string::npos ? 0 : last_slash + 1);
  if (last_slash != std::string::npos && !ValidateBlobKey(dir_part).ok()) {
    return result;
  }
  std::string dir_path = dir_part.empty() ? objects_dir_ : ObjectDir(dir_part);
  std::string key_prefix = dir_part.empty() ? std::string() : dir_part + "/";

  const size_t limit = static_cast<size_t>(options.limit);
  size_t count = 0;
  bool truncated = false;
  std::string last_item;
  ListVisitor visit = [&](std::string item, bool is_prefix) -> Result<bool> {
    if (count == limit) {
      truncated = true;  // one more exists: stop and hand out a continuation
      return false;
    }
    if (is_prefix) {
      result.prefixes.push_back(item);
    } else {
      Result<StoredMeta> meta = ReadMeta(item);
      if (meta.ok()) {
        result.keys.push_back(meta->ToInfo(item));
      } else if (meta.status().IsNotFound()) {
        return true;  // deleted since the walk saw it
      } else {
        BlobInfo unreadable;
        unreadable.key = item;
        unreadable.size = -1;
        result.keys.push_back(std::move(unreadable));
      }
    }
    ++count;
    last_item = std::move(item);
    return true;
  };
  RETURN_IF_ERROR(WalkForList(dir_path, key_prefix, name_filter,
                              options.delimiter.empty(), bound, visit)
                      .status());
  if (truncated) {
    result.continuation = EncodeBlobContinuation(options, last_item);
  }
  return result;
}

// ---------------------------------------------------------------------------------
// Lifecycle sweep

Result<SweepReport> DirectoryBlobStore::Sweep(const LifecycleRule& rule,
                                              const BlobKeepPredicate& keep,
                                              const std::atomic<bool>* cancel) {
  if (rule.tag_key.empty()) return InvalidArgument("lifecycle rule needs a tag key");
  if (rule.max_age_micros < 0) return InvalidArgument("lifecycle max age is negative");
  SweepReport report;
  SweepDir(objects_dir_, "", rule, keep, cancel, &report);
  return report;
}

void DirectoryBlobStore::SweepDir(const std::string& path, const std::string& key,
                                  const LifecycleRule& rule,
                                  const BlobKeepPredicate& keep,
                                  const std::atomic<bool>* cancel, SweepReport* report) {
  if (cancel != nullptr && cancel->load()) {
    report->cancelled = true;
    return;
  }
  Result<std::vector<blob_files::DirEntry>> entries = blob_files::ListDir(path);
  if (!entries.ok()) {
    if (entries.status().IsNotFound()) return;  // deleted meanwhile
    ++report->errors;
    if (report->first_error.empty()) report->first_error = entries.status().ToString();
    return;
  }
  bool has_meta = false;
  int64_t body_count = 0;
  std::vector<std::string> children;
  for (const auto& entry : *entries) {
    if (entry.is_dir && !IsReservedName(entry.name)) {
      children.push_back(entry.name);
    } else if (entry.name == kMetaName) {
      has_meta = true;
    } else if (IsBodyName(entry.name)) {
      ++body_count;
    }
  }
  if (!key.empty()) SweepObject(key, has_meta, body_count, rule, keep, report);
  std::sort(children.begin(), children.end());
  for (const std::string& child : children) {
    if (report->cancelled) return;
    SweepDir(path + "/" + child, key.empty() ? child : key + "/" + child, rule, keep,
             cancel, report);
  }
  // Directories left empty by debris removal above, or by a crash between a delete's
  // unlinks and its rmdirs. rmdir removes only empty directories; a put racing it makes
  // its directory again (see CommitBody).
  if (!key.empty() && !has_meta) ::rmdir(path.c_str());
}

void DirectoryBlobStore::SweepObject(const std::string& key, bool has_meta,
                                     int64_t body_count, const LifecycleRule& rule,
                                     const BlobKeepPredicate& keep, SweepReport* report) {
  auto record_error = [&](const Status& status) {
    ++report->errors;
    if (report->first_error.empty()) report->first_error = status.ToString();
  };
  if (!has_meta) {
    if (body_count == 0) return;
    // Bodies without metadata. Under the key's lock no put is between its body rename
    // and its commit, so if there is still no \meta they are debris.
    MutexLock lock(&KeyMutex(key));
    if (!HasMeta(ObjectDir(key))) {
      report->debris_removed += RemoveBodiesExceptLocked(key, "");
    }
    return;
  }
  ++report->examined;
  bool unreadable = false;
  Result<StoredMeta> meta = ReadMeta(key, &unreadable);
  if (!meta.ok()) {
    if (meta.status().IsNotFound()) return;  // deleted meanwhile
    if (unreadable) {
      ++report->unreadable;  // cannot know its tags: never delete it
    } else {
      record_error(meta.status());
    }
    return;
  }
  if (body_count > 1) {  // an old body left by a crash after a commit
    MutexLock lock(&KeyMutex(key));
    Result<StoredMeta> current = ReadMeta(key);
    if (current.ok()) {
      report->debris_removed += RemoveBodiesExceptLocked(key, current->body_id);
    }
  }
  if (!SweepShouldDelete(rule, meta->tags, meta->created_micros, clock_->NowMicros(), key,
                         keep, report)) {
    return;
  }
  Status fault = Fault(FaultPoint::kBlobSweepDelete);
  if (!fault.ok()) {
    record_error(fault);
    return;
  }
  MutexLock lock(&KeyMutex(key));
  Result<StoredMeta> current = ReadMeta(key);
  if (!current.ok() || current->body_id != meta->body_id ||
      !rule.Selects(current->tags) ||
      !rule.Expired(current->created_micros, clock_->NowMicros())) {
    ++report->changed;  // untagged, overwritten or deleted since we looked: it wins
    return;
  }
  Result<std::optional<int64_t>> deleted = DeleteLocked(key);
  if (!deleted.ok()) {
    record_error(deleted.status());
    return;
  }
  if (!deleted->has_value()) return;
  ++report->deleted;
  report->deleted_bytes += **deleted;
  if (report->deleted_keys.size() < kMaxDeletedKeysReported) {
    report->deleted_keys.push_back(key);
  }
}

// ---------------------------------------------------------------------------------
// Capture

Result<std::unique_ptr<BlobCapture>> DirectoryBlobStore::Capture(
    const std::function<Status()>& at_point) {
  ASSIGN_OR_RETURN(std::string id, NewBodyId());
  RETURN_IF_ERROR(blob_files::MakeDirs(options_.root, "capture/" + id, false));
  std::unique_ptr<DirectoryBlobCapture> capture(
      new DirectoryBlobCapture(this, options_.root + "/capture/" + id));
  WriterMutexLock gate(&capture_gate_);
  if (capture_ != nullptr) {
    capture->stopped_ = true;  // never active: the destructor only removes its dir
    return FailedPrecondition("another capture of blob store " + options_.root +
                              " is running (one backup at a time)");
  }
  Status point = at_point();
  if (!point.ok()) {
    capture->stopped_ = true;
    return point;
  }
  capture_ = capture.get();
  return std::unique_ptr<BlobCapture>(std::move(capture));
}

void DirectoryBlobStore::CaptureLocked(const std::string& key, const StoredMeta& meta) {
  capture_->Add(key, meta.body_id, meta.ToInfo(key));
}

DirectoryBlobCapture::~DirectoryBlobCapture() {
  Stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

void DirectoryBlobCapture::Add(const std::string& key, const std::string& body_id,
                               BlobInfo info) {
  MutexLock lock(&mu_);
  if (captured_.count(key) != 0) return;
  const std::string body =
      store_->ObjectDir(key) + "/" + std::string(kBodyPrefix) + body_id;
  std::string link = dir_ + "/" + std::to_string(next_link_++);
  if (::link(body.c_str(), link.c_str()) != 0) {
    if (error_.ok()) error_ = ErrnoStatus("link to " + link, body, errno);
    return;
  }
  captured_[key] = CapturedBlob{std::move(info), body_id, std::move(link)};
}

Status DirectoryBlobCapture::Walk() {
  BlobListOptions page_options;
  while (true) {
    ASSIGN_OR_RETURN(BlobListResult page, store_->List(page_options));
    for (const BlobInfo& listed : page.keys) {
      MutexLock key_lock(&store_->KeyMutex(listed.key));
      {
        MutexLock lock(&mu_);
        if (captured_.count(listed.key) != 0) continue;  // changed since the instant
      }
      bool unreadable = false;
      Result<DirectoryBlobStore::StoredMeta> meta =
          store_->ReadMeta(listed.key, &unreadable);
      if (!meta.ok()) {
        if (unreadable) {
          ++unreadable_;
        } else if (!meta.status().IsNotFound()) {
          return meta.status();
        }
        continue;  // NotFound: created after the instant and deleted since
      }
      Add(listed.key, meta->body_id, meta->ToInfo(listed.key));
    }
    if (!page.continuation) break;
    page_options.continuation = *page.continuation;
  }
  Stop();
  MutexLock lock(&mu_);
  objects_.clear();
  for (auto& [key, blob] : captured_) objects_.push_back(blob);
  return error_;
}

void DirectoryBlobCapture::Stop() {
  if (stopped_) return;
  stopped_ = true;
  WriterMutexLock gate(&store_->capture_gate_);
  if (store_->capture_ == this) store_->capture_ = nullptr;
}

}  // namespace sheetlog
