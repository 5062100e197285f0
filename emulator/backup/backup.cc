#include "emulator/backup/backup.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/blob/directory_blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/uuid.h"
#include "emulator/json_text.h"
#include "emulator/sqlite/database.h"

namespace sheetlog {
namespace backup_detail {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFormat = "sheetlog-backup";
constexpr int kFormatVersion = 1;
constexpr const char* kManifest = "manifest.json";
constexpr size_t kChunk = 1 << 20;

Status ErrnoError(const std::string& what, const std::string& path, int err) {
  std::string message = what + " " + path + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return InsufficientStorage(message);
  return Internal(message);
}

// A running digest (OpenSSL EVP): SHA-256 for the backup's checksums, MD5 to check a
// body against its ETag.
class Digest {
 public:
  explicit Digest(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()) {
    if (ctx_ != nullptr) EVP_DigestInit_ex(ctx_, md, nullptr);
  }
  ~Digest() { EVP_MD_CTX_free(ctx_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;
  void Update(std::string_view data) { EVP_DigestUpdate(ctx_, data.data(), data.size()); }
  std::string HexFinal() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_, out, &n);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < n; ++i) {
      hex.push_back(kHex[out[i] >> 4]);
      hex.push_back(kHex[out[i] & 15]);
    }
    return hex;
  }

 private:
  EVP_MD_CTX* ctx_;
};

std::string Sha256Hex(std::string_view data) {
  Digest digest(EVP_sha256());
  digest.Update(data);
  return digest.HexFinal();
}

// Reads `path` in chunks of at most kChunk bytes; stops at the first error of `sink`.
Status ReadChunks(const std::string& path,
                  const std::function<Status(std::string_view)>& sink) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path, errno);
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { ::close(*f); });
  std::string buffer(kChunk, '\0');
  while (true) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read", path, errno);
    if (n == 0) return Status::OK();
    RETURN_IF_ERROR(sink(std::string_view(buffer.data(), static_cast<size_t>(n))));
  }
}

// SHA-256 and size of a file.
Result<std::pair<std::string, int64_t>> HashFile(const std::string& path) {
  Digest digest(EVP_sha256());
  int64_t size = 0;
  RETURN_IF_ERROR(ReadChunks(path, [&](std::string_view chunk) {
    digest.Update(chunk);
    size += static_cast<int64_t>(chunk.size());
    return Status::OK();
  }));
  return std::make_pair(digest.HexFinal(), size);
}

Status SyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? Status::OK() : ErrnoError("sync", path, err);
}

// An output file written in pieces, synced and renamed into place by Finish.
class OutFile {
 public:
  ~OutFile() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
    }
  }
  Status Open(const std::string& tmp) {
    tmp_ = tmp;
    fd_ = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    return fd_ < 0 ? ErrnoError("create", tmp, errno) : Status::OK();
  }
  Status Write(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError("write", tmp_, errno);
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::OK();
  }
  // Syncs and renames over `path` (its directory is synced by the caller).
  Status Finish(const std::string& path) {
    const bool synced = ::fsync(fd_) == 0;
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (!synced) {
      ::unlink(tmp_.c_str());
      return ErrnoError("sync", tmp_, err);
    }
    if (::rename(tmp_.c_str(), path.c_str()) != 0) {
      const int rename_err = errno;
      ::unlink(tmp_.c_str());
      return ErrnoError("rename to " + path, tmp_, rename_err);
    }
    return Status::OK();
  }

 private:
  std::string tmp_;
  int fd_ = -1;
};

Status WriteWholeFile(const std::string& dir, const std::string& name,
                      std::string_view data) {
  OutFile out;
  RETURN_IF_ERROR(out.Open(dir + "/" + name + ".tmp"));
  RETURN_IF_ERROR(out.Write(data));
  RETURN_IF_ERROR(out.Finish(dir + "/" + name));
  return SyncPath(dir);
}

std::string BlobFile(const std::string& sha256) {
  return "blobs/" + sha256.substr(0, 2) + "/" + sha256;
}

bool IsSha256Hex(const std::string& text) {
  return text.size() == 64 &&
         text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string UtcText(int64_t unix_s, const char* format) {
  time_t t = static_cast<time_t>(unix_s);
  struct tm tm;
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, format, &tm);
  return text;
}

// The manifest's checksum: SHA-256 of its JSON text without the checksum member
// (nlohmann::json orders members by name, so the text is canonical).
std::string ManifestChecksum(json manifest) {
  manifest.erase("manifest_sha256");
  return Sha256Hex(manifest.dump());
}

// Reads and checks DIR/manifest.json: present, parses, its own checksum, the format.
Result<json> ReadManifest(const std::string& dir) {
  const std::string path = dir + "/" + kManifest;
  std::string text;
  RETURN_IF_ERROR(ReadChunks(path, [&](std::string_view chunk) {
    text.append(chunk);
    return text.size() > (512u << 20) ? FailedPrecondition(path + " is too large")
                                      : Status::OK();
  }));
  json manifest = ParseJsonOrDiscarded(text);
  if (manifest.is_discarded() || !manifest.is_object()) {
    return FailedPrecondition(path + " is not a JSON object: the backup is damaged");
  }
  if (manifest.value("format", "") != kFormat ||
      manifest.value("format_version", 0) != kFormatVersion) {
    return FailedPrecondition(path + " is not a sheetlog backup manifest of format " +
                              std::to_string(kFormatVersion));
  }
  if (!manifest.contains("manifest_sha256") ||
      manifest["manifest_sha256"] != ManifestChecksum(manifest)) {
    return FailedPrecondition(path + " fails its checksum: the backup is damaged");
  }
  return manifest;
}

bool Inside(const fs::path& inner, const fs::path& outer) {
  auto [end, ignored] =
      std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return end == outer.end();
}

Result<BackupReport> WriteBackupImpl(Database& db, BlobStore& blobs,
                                     const BackupOptions& options);
Result<RestoreReport> RestoreBackupImpl(const std::string& from,
                                        const std::string& db_path,
                                        const std::string& blob_root, Clock* clock);

}  // namespace backup_detail

nlohmann::json BackupReport::ToJson() const {
  using nlohmann::json;
  return json{{"to", to},
              {"id", id},
              {"database", {{"file", database_file}, {"bytes", database_bytes}}},
              {"blobs", blobs},
              {"blob_bytes", blob_bytes},
              {"blobs_copied", blobs_copied},
              {"bytes_copied", bytes_copied},
              {"blobs_reused", blobs_reused},
              {"incremental", incremental},
              {"unreadable_blobs", unreadable_blobs}};
}

nlohmann::json RestoreReport::ToJson() const {
  using nlohmann::json;
  return json{{"from", from},
              {"id", id},
              {"version", app_version},
              {"schema_version", schema_version},
              {"database_bytes", database_bytes},
              {"blobs", blobs},
              {"blob_bytes", blob_bytes}};
}

Result<BackupReport> WriteBackup(Database& db, BlobStore& blobs,
                                 const BackupOptions& options) {
  return backup_detail::WriteBackupImpl(db, blobs, options);
}

Result<RestoreReport> RestoreBackup(const std::string& from, const std::string& db_path,
                                    const std::string& blob_root, Clock* clock) {
  return backup_detail::RestoreBackupImpl(from, db_path, blob_root, clock);
}

namespace backup_detail {

Result<BackupReport> WriteBackupImpl(Database& db, BlobStore& blobs,
                                     const BackupOptions& options) {
  const fs::path to(options.to);
  if (!to.is_absolute()) {
    return InvalidArgument("backup directory must be an absolute path, got " +
                           QuoteForMessage(options.to));
  }
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(to, ec);
  std::vector<fs::path> own_dirs{fs::path(db.path()).parent_path()};
  // The directory store's objects are files of this machine (S3's are not).
  if (const auto* directory = dynamic_cast<const DirectoryBlobStore*>(&blobs)) {
    own_dirs.push_back(directory->options().root);
  }
  for (const fs::path& own : own_dirs) {
    const fs::path canonical = fs::weakly_canonical(fs::absolute(own), ec);
    if (Inside(target, canonical) || Inside(canonical, target)) {
      return InvalidArgument("backup directory " + options.to +
                             " overlaps the data directory " + canonical.string());
    }
  }

  // One instant for both: the database's read transaction starts while the blob store
  // holds every change off (backup.h). Taken before anything is written, so a store
  // that cannot be captured (S3) refuses the backup with nothing changed.
  std::unique_ptr<DatabaseSnapshot> snapshot;
  ASSIGN_OR_RETURN(std::unique_ptr<BlobCapture> capture, blobs.Capture([&]() -> Status {
    ASSIGN_OR_RETURN(snapshot, db.BeginSnapshot());
    return Status::OK();
  }));

  fs::create_directories(to, ec);
  if (ec) return Internal("create " + options.to + ": " + ec.message());
  fs::permissions(to, fs::perms::owner_all, ec);

  BackupReport report;
  report.to = options.to;
  // The previous backup, if any: bodies it holds by (key, version) are not read again.
  std::map<std::pair<std::string, std::string>, std::string> previous;
  std::string previous_database;
  if (fs::exists(to / kManifest)) {
    ASSIGN_OR_RETURN(json manifest, ReadManifest(options.to));
    report.incremental = true;
    previous_database = manifest["database"].value("file", "");
    for (const json& blob : manifest["blobs"]) {
      previous[{blob.value("key", ""), blob.value("version", "")}] =
          blob.value("sha256", "");
    }
  } else {
    for (const auto& entry : fs::directory_iterator(to, ec)) {
      return InvalidArgument("backup directory " + options.to +
                             " is neither empty nor a sheetlog backup (it holds " +
                             entry.path().filename().string() + ")");
    }
  }

  const int64_t now_s = options.clock ? options.clock->NowSeconds() : time(nullptr);
  report.id = UtcText(now_s, "%Y%m%dT%H%M%SZ") + "-" + NewRandomUuid().substr(0, 8);
  report.database_file = "database-" + report.id + ".sqlite";

  RETURN_IF_ERROR(capture->Walk());
  report.unreadable_blobs = capture->unreadable();
  const std::string database_path = options.to + "/" + report.database_file;
  ASSIGN_OR_RETURN(report.database_bytes, snapshot->CopyTo(database_path + ".tmp"));
  snapshot.reset();  // lets the database checkpoint its WAL again
  if (::rename((database_path + ".tmp").c_str(), database_path.c_str()) != 0) {
    return ErrnoError("rename to " + database_path, database_path + ".tmp", errno);
  }
  ASSIGN_OR_RETURN(auto database_sum, HashFile(database_path));

  json manifest_blobs = json::array();
  std::set<std::string> kept;  // blob files the new manifest references
  std::set<std::string> dirs_written;
  for (const CapturedBlob& blob : capture->objects()) {
    const BlobInfo& info = blob.info;
    std::string sha;
    auto before = previous.find({info.key, blob.version});
    if (before != previous.end() && IsSha256Hex(before->second)) {
      struct stat st;
      const std::string path = options.to + "/" + BlobFile(before->second);
      if (::stat(path.c_str(), &st) == 0 && st.st_size == info.size) {
        sha = before->second;
        ++report.blobs_reused;
      }
    }
    if (sha.empty()) {
      fs::create_directories(to / "blobs", ec);
      OutFile out;
      const std::string tmp = options.to + "/blobs/" + NewRandomUuid() + ".tmp";
      RETURN_IF_ERROR(out.Open(tmp));
      Digest sha256(EVP_sha256());
      Digest md5(EVP_md5());
      int64_t size = 0;
      RETURN_IF_ERROR(ReadChunks(blob.body_path, [&](std::string_view chunk) {
        sha256.Update(chunk);
        md5.Update(chunk);
        size += static_cast<int64_t>(chunk.size());
        return out.Write(chunk);
      }));
      if (size != info.size || md5.HexFinal() != info.etag) {
        return Internal("object " + QuoteForMessage(info.key) +
                        " does not match its metadata (size " + std::to_string(size) +
                        " of " + std::to_string(info.size) +
                        ", or its MD5 differs from its ETag): the blob store is "
                        "damaged; nothing was backed up");
      }
      sha = sha256.HexFinal();
      const std::string dir = options.to + "/blobs/" + sha.substr(0, 2);
      fs::create_directories(dir, ec);
      if (ec) return Internal("create " + dir + ": " + ec.message());
      RETURN_IF_ERROR(out.Finish(options.to + "/" + BlobFile(sha)));
      dirs_written.insert(dir);
      ++report.blobs_copied;
      report.bytes_copied += size;
    }
    kept.insert(sha);
    ++report.blobs;
    report.blob_bytes += info.size;
    manifest_blobs.push_back(json{{"key", info.key},
                                  {"size", info.size},
                                  {"sha256", sha},
                                  {"etag", info.etag},
                                  {"content_type", info.content_type},
                                  {"tags", info.tags},
                                  {"created_micros", info.created_micros},
                                  {"version", blob.version}});
  }
  capture.reset();  // removes its links
  for (const std::string& dir : dirs_written) RETURN_IF_ERROR(SyncPath(dir));
  if (!dirs_written.empty()) RETURN_IF_ERROR(SyncPath(options.to + "/blobs"));
  RETURN_IF_ERROR(SyncPath(options.to));

  json manifest{{"format", kFormat},
                {"format_version", kFormatVersion},
                {"id", report.id},
                {"created", UtcText(now_s, "%Y-%m-%dT%H:%M:%SZ")},
                {"app_version", options.app_version},
                {"schema_version", options.schema_version},
                {"database",
                 {{"file", report.database_file},
                  {"size", database_sum.second},
                  {"sha256", database_sum.first}}},
                {"blobs", std::move(manifest_blobs)}};
  manifest["manifest_sha256"] = ManifestChecksum(manifest);
  // The commit point: until this rename the directory holds the previous backup.
  RETURN_IF_ERROR(WriteWholeFile(options.to, kManifest, manifest.dump(1) + "\n"));

  // What the previous backup held and this one does not.
  if (!previous_database.empty() && previous_database != report.database_file &&
      previous_database.find('/') == std::string::npos) {
    fs::remove(to / previous_database, ec);
  }
  if (fs::exists(to / "blobs")) {
    for (const auto& sub : fs::directory_iterator(to / "blobs", ec)) {
      if (!sub.is_directory()) {
        fs::remove(sub.path(), ec);  // a .tmp of an interrupted backup
        continue;
      }
      for (const auto& file : fs::directory_iterator(sub.path(), ec)) {
        if (kept.count(file.path().filename().string()) == 0) fs::remove(file.path(), ec);
      }
    }
  }
  return report;
}

Result<RestoreReport> RestoreBackupImpl(const std::string& from,
                                        const std::string& db_path,
                                        const std::string& blob_root, Clock* clock) {
  ASSIGN_OR_RETURN(json manifest, ReadManifest(from));
  RestoreReport report;
  report.from = from;
  report.id = manifest.value("id", "");
  report.app_version = manifest.value("app_version", "");
  report.schema_version = manifest.value("schema_version", 0);
  const json& database = manifest["database"];
  const std::string database_file = database.value("file", "");
  if (database_file.empty() || database_file.find('/') != std::string::npos) {
    return FailedPrecondition("the manifest names no database file");
  }

  // Every file against its checksum before anything is written.
  struct Expected {
    int64_t size;
    std::string sha256;
  };
  std::map<std::string, Expected> files;  // relative path -> expected
  files[database_file] = {database.value("size", int64_t{-1}),
                          database.value("sha256", "")};
  for (const json& blob : manifest["blobs"]) {
    const std::string sha = blob.value("sha256", "");
    if (!IsSha256Hex(sha)) {
      return FailedPrecondition("the manifest gives object " +
                                QuoteForMessage(blob.value("key", "")) +
                                " no valid SHA-256");
    }
    files[BlobFile(sha)] = {blob.value("size", int64_t{-1}), sha};
  }
  for (const auto& [relative, expected] : files) {
    const std::string path = from + "/" + relative;
    Result<std::pair<std::string, int64_t>> actual = HashFile(path);
    if (!actual.ok()) {
      return FailedPrecondition("backup file " + path + " cannot be read (" +
                                actual.status().message() +
                                "): the backup fails its checksums; nothing restored");
    }
    if (actual->second != expected.size || actual->first != expected.sha256) {
      return FailedPrecondition("backup file " + path + " fails its checksum (SHA-256 " +
                                actual->first + ", " + std::to_string(actual->second) +
                                " bytes; the manifest says " + expected.sha256 + ", " +
                                std::to_string(expected.size) +
                                " bytes); nothing restored");
    }
  }

  std::error_code ec;
  if (fs::exists(db_path, ec)) {
    return FailedPrecondition(db_path + " exists: restore only into an empty place");
  }
  if (fs::exists(blob_root, ec) && !fs::is_empty(blob_root, ec)) {
    return FailedPrecondition(blob_root +
                              " is not empty: restore only into an empty "
                              "place");
  }
  const std::string db_dir = fs::path(db_path).parent_path().string();
  fs::create_directories(db_dir, ec);
  if (ec) return Internal("create " + db_dir + ": " + ec.message());
  {
    OutFile out;
    RETURN_IF_ERROR(out.Open(db_path + ".restore"));
    RETURN_IF_ERROR(ReadChunks(from + "/" + database_file,
                               [&](std::string_view chunk) { return out.Write(chunk); }));
    RETURN_IF_ERROR(out.Finish(db_path));
    RETURN_IF_ERROR(SyncPath(db_dir));
  }
  report.database_bytes = files[database_file].size;

  BlobStoreOptions store_options;
  store_options.root = blob_root;
  ASSIGN_OR_RETURN(std::unique_ptr<DirectoryBlobStore> store,
                   DirectoryBlobStore::Open(store_options, clock));
  for (const json& blob : manifest["blobs"]) {
    const std::string key = blob.value("key", "");
    BlobPutOptions put;
    put.content_type = blob.value("content_type", "");
    put.tags = blob.value("tags", BlobTags{});
    ASSIGN_OR_RETURN(std::unique_ptr<BlobWriter> writer, store->BeginPut(key, put));
    RETURN_IF_ERROR(
        ReadChunks(from + "/" + BlobFile(blob["sha256"]),
                   [&](std::string_view chunk) { return writer->Append(chunk); }));
    ASSIGN_OR_RETURN(BlobInfo info, writer->Commit());
    if (info.etag != blob.value("etag", "")) {
      return Internal("restored object " + QuoteForMessage(key) + " has ETag " +
                      info.etag + ", the manifest says " + blob.value("etag", ""));
    }
    ++report.blobs;
    report.blob_bytes += info.size;
  }
  return report;
}

}  // namespace backup_detail
}  // namespace sheetlog
