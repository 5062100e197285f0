// DirectoryBlobStore: the default BlobStore (blob_store.h). Objects are files under one
// root directory (the data directory's blobs/); each object has a body, metadata (size,
// MD5 etag, created time, content type) and a tag set.
// Writes are atomic (a reader sees the old or the new object, never a mix or a partial
// body) and each has one commit point, so a crash shows the old object or the new one,
// never debris (Open removes what an interrupted put or delete left). Listing is
// lexicographic with prefix/delimiter/continuation like ListObjectsV2, a lifecycle sweep
// deletes objects carrying a tag once they are old (but never an object whose metadata
// is unreadable: SweepReport::unreadable), and presigned URLs let a client upload
// without the server's token. With options.sync = false (tests, --in-memory) nothing is
// fsynced, and a machine crash may lose recent writes.
// The on-disk layout and the commit protocol: docs/architecture.md "The directory store
// on disk".
//
// Thread-safe. Writes to the same key are serialized by a striped per-key lock held
// only for the commit (never while a body streams in), so concurrent puts of one key
// end with exactly one of them (the last to commit). Reads take no lock.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/env/fault_points.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace sheetlog {

class BlobPresigner;
class Clock;
class DirectoryBlobCapture;
class FaultInjector;

struct BlobStoreOptions {
  // Directory holding everything (created, with parents, if missing). REQUIRED.
  std::string root;
  // fsync bodies, metadata and directories so an acknowledged write survives a power
  // failure. Default: true. Tests and --in-memory turn it off.
  bool sync = true;
  // Largest body a put may store; a larger one fails with ResourceExhausted and stores
  // nothing. Default: 5 GiB (S3's single-PUT limit).
  int64_t max_object_bytes = 5LL << 30;
};

class DirectoryBlobStore final : public BlobStore {
 public:
  // Opens (creating if needed) the store at options.root: takes the directory's lock,
  // loads or creates the presigning secret, empties tmp/, removes debris of crashed
  // writes, and counts objects and bytes for Stats(). Errors: InvalidArgument for bad
  // options; FailedPrecondition if another store (in this or another process) has the
  // directory open; I/O errors as Internal/Unavailable.
  // `clock` must outlive the store; `faults` may be null (no fault points).
  static Result<std::unique_ptr<DirectoryBlobStore>> Open(
      const BlobStoreOptions& options, Clock* clock, FaultInjector* faults = nullptr);
  // REQUIRES: no BlobWriter or BlobReader of this store is still alive.
  ~DirectoryBlobStore() override;
  DirectoryBlobStore(const DirectoryBlobStore&) = delete;
  DirectoryBlobStore& operator=(const DirectoryBlobStore&) = delete;

  std::string_view kind() const override { return "directory"; }
  int64_t max_object_bytes() const override { return options_.max_object_bytes; }

  // The operations of BlobStore (blob_store.h), as the file comment describes them.
  // List walks only the directories under the prefix, each sorted on its own, and
  // stops after limit + 1 items; an object whose metadata is unreadable is listed with
  // size -1, and Head/Get/tags of it fail with Internal. The sweep also removes debris
  // of crashed writes and never deletes an unreadable object (SweepReport::unreadable).
  Result<BlobInfo> Put(const std::string& key, std::string_view body,
                       const BlobPutOptions& options = {}) override;
  Result<std::unique_ptr<BlobWriter>> BeginPut(
      const std::string& key, const BlobPutOptions& options = {}) override;
  Result<BlobInfo> Copy(const std::string& from, const std::string& to,
                        const BlobPutOptions& options,
                        const std::string& from_etag = "") override;
  Result<BlobInfo> Head(const std::string& key) override;
  Result<std::string> Get(const std::string& key, BlobInfo* info = nullptr) override;
  Result<std::string> GetRange(const std::string& key, int64_t offset, int64_t length,
                               BlobInfo* info = nullptr) override;
  Result<std::unique_ptr<BlobReader>> OpenReader(const std::string& key) override;
  Status Delete(const std::string& key) override;
  Status DeleteBatch(const std::vector<std::string>& keys,
                     const std::function<Status()>& after_each = nullptr) override;
  Result<BlobListResult> List(const BlobListOptions& options) override;
  Result<BlobTags> GetTags(const std::string& key) override;
  Status PutTags(const std::string& key, const BlobTags& tags) override;
  // Presigned requests are served by the server (nullopt), signed and checked by
  // server_presigner(): this store's secret (blob_presigner.h).
  Result<std::optional<std::string>> PresignUrl(const std::string& method,
                                                const std::string& key,
                                                int64_t expires_unix_s,
                                                const BlobTags& put_tags) override;
  const BlobPresigner* server_presigner() const override { return presigner_.get(); }
  Result<SweepReport> Sweep(const LifecycleRule& rule, const BlobKeepPredicate& keep,
                            const std::atomic<bool>* cancel = nullptr) override;
  // Exact except for objects whose metadata is unreadable (two atomic loads).
  BlobStats Stats() const override;
  // A DirectoryBlobCapture: hard links under <root>/capture/<id>/; bodies are never
  // copied.
  Result<std::unique_ptr<BlobCapture>> Capture(
      const std::function<Status()>& at_point) override;

  // options().root: the directory of this machine holding the objects (a backup
  // refuses a target that overlaps it).
  const BlobStoreOptions& options() const { return options_; }

 private:
  friend class DirectoryBlobCapture;
  friend class DirectoryBlobWriter;
  struct StoredMeta;

  DirectoryBlobStore(const BlobStoreOptions& options, Clock* clock,
                     FaultInjector* faults);

  Status Init();
  Status Recover();
  // Recovers the directory of `key` ("" = objects/ itself) and everything below it.
  // Returns true if the directory is left empty.
  Result<bool> RecoverDir(const std::string& path, const std::string& key);

  std::string ObjectDir(std::string_view key) const;
  Mutex& KeyMutex(std::string_view key);
  Status Fault(FaultPoint point);

  // NotFound if there is no object; Internal if the metadata is unreadable (then
  // `*unreadable` is set to true, if given) or cannot be read.
  Result<StoredMeta> ReadMeta(const std::string& key, bool* unreadable = nullptr) const;
  // Replaces \meta atomically. REQUIRES: the key's lock held; its directory exists.
  Status WriteMeta(const std::string& key, const StoredMeta& meta);

  // The commit step of a put (docs/architecture.md "The directory store on disk").
  // Takes the key's lock.
  Result<BlobInfo> CommitBody(const std::string& key, const std::string& tmp_body_path,
                              const std::string& body_id, int64_t size,
                              const std::string& etag, const BlobPutOptions& options);
  // Removes the object and its directory (if empty); returns the bytes of the deleted
  // body (0 if unknown) or nullopt if there was no object. `sync`: make it durable now
  // (else the caller syncs NearestExistingDir(key) later). REQUIRES: the key's lock.
  Result<std::optional<int64_t>> DeleteLocked(const std::string& key, bool sync = true);
  // The key's object directory or, if it is gone, its nearest ancestor that exists:
  // the directory whose entries a deletion of the key changed last.
  std::string NearestExistingDir(const std::string& key) const;
  // Unlinks every \body.* of the key's directory except `keep_body_id`; returns how
  // many. REQUIRES: the key's lock.
  int64_t RemoveBodiesExceptLocked(const std::string& key, std::string_view keep_body_id);

  // Listing helpers (see blob_store.cc).
  struct ListBound;
  using ListVisitor = std::function<Result<bool>(std::string key, bool is_prefix)>;
  Result<bool> WalkForList(const std::string& dir_path, const std::string& key_prefix,
                           std::string_view name_filter, bool recurse,
                           const ListBound& bound, const ListVisitor& visit);
  bool SubtreeHasObject(const std::string& dir_path);

  // Sweep helpers.
  void SweepDir(const std::string& path, const std::string& key,
                const LifecycleRule& rule, const BlobKeepPredicate& keep,
                const std::atomic<bool>* cancel, SweepReport* report);
  void SweepObject(const std::string& key, bool has_meta, int64_t body_count,
                   const LifecycleRule& rule, const BlobKeepPredicate& keep,
                   SweepReport* report);

  // Links `meta`'s body of `key` into the active capture unless it already holds the
  // key. REQUIRES: the key's lock and capture_gate_ (shared or exclusive) held.
  void CaptureLocked(const std::string& key, const StoredMeta& meta)
      REQUIRES_SHARED(capture_gate_);

  static constexpr size_t kLockStripes = 64;

  const BlobStoreOptions options_;
  Clock* const clock_;
  FaultInjector* const faults_;
  std::string objects_dir_;
  std::string tmp_dir_;
  int lock_fd_ = -1;
  std::unique_ptr<BlobPresigner> presigner_;
  // Serializes commits, deletes and tag changes per key (striped by hash).
  std::array<Mutex, kLockStripes> key_mutexes_;
  std::atomic<int64_t> object_count_{0};
  std::atomic<int64_t> byte_count_{0};
  // Every change to an object's version (commit of a put, delete) holds this shared,
  // from reading the version it replaces to its commit point; Capture holds it
  // exclusively while it fixes its instant. Lock order: a key's lock, then this.
  SharedMutex capture_gate_;
  DirectoryBlobCapture* capture_ GUARDED_BY(capture_gate_) = nullptr;  // the active one
};

// A capture of a DirectoryBlobStore (BlobStore::Capture): hard links to the captured
// bodies in <root>/capture/<id>/, removed by the destructor.
class DirectoryBlobCapture final : public BlobCapture {
 public:
  ~DirectoryBlobCapture() override;
  DirectoryBlobCapture(const DirectoryBlobCapture&) = delete;
  DirectoryBlobCapture& operator=(const DirectoryBlobCapture&) = delete;

  // Fails if any link failed.
  Status Walk() override;
  const std::vector<CapturedBlob>& objects() const override { return objects_; }
  int64_t unreadable() const override { return unreadable_; }

 private:
  friend class DirectoryBlobStore;
  DirectoryBlobCapture(DirectoryBlobStore* store, std::string dir)
      : store_(store), dir_(std::move(dir)) {}
  // Called under the key's lock (and the gate, for changes).
  void Add(const std::string& key, const std::string& body_id, BlobInfo info);
  void Stop();

  DirectoryBlobStore* const store_;
  const std::string dir_;
  Mutex mu_;
  std::map<std::string, CapturedBlob> captured_ GUARDED_BY(mu_);
  Status error_ GUARDED_BY(mu_);  // the first link failure
  int64_t next_link_ GUARDED_BY(mu_) = 0;
  bool stopped_ = false;
  int64_t unreadable_ = 0;
  std::vector<CapturedBlob> objects_;
};

// A put in progress (DirectoryBlobStore::BeginPut): the body streams into a temporary
// file. Not thread-safe.
class DirectoryBlobWriter final : public BlobWriter {
 public:
  ~DirectoryBlobWriter() override;
  DirectoryBlobWriter(const DirectoryBlobWriter&) = delete;
  DirectoryBlobWriter& operator=(const DirectoryBlobWriter&) = delete;

  // ResourceExhausted beyond max_object_bytes removes the temporary file.
  Status Append(std::string_view data) override;
  Result<BlobInfo> Commit() override;
  void Abort() override;
  int64_t bytes_written() const override { return size_; }

 private:
  friend class DirectoryBlobStore;
  DirectoryBlobWriter(DirectoryBlobStore* store, std::string key, BlobPutOptions options,
                      std::string body_id, std::string tmp_path, int fd,
                      evp_md_ctx_st* md5);

  DirectoryBlobStore* const store_;
  const std::string key_;
  const BlobPutOptions options_;
  const std::string body_id_;
  const std::string tmp_path_;
  int fd_;
  evp_md_ctx_st* md5_;
  int64_t size_ = 0;
  bool finished_ = false;
  Status failure_;  // sticky
};

// A version opened for reading (DirectoryBlobStore::OpenReader): an open file of the
// body, which stays readable when the object is overwritten or deleted. Thread-safe.
class DirectoryBlobReader final : public BlobReader {
 public:
  ~DirectoryBlobReader() override;
  DirectoryBlobReader(const DirectoryBlobReader&) = delete;
  DirectoryBlobReader& operator=(const DirectoryBlobReader&) = delete;

  const BlobInfo& info() const override { return info_; }
  Result<std::string> ReadAt(int64_t offset, int64_t length) const override;
  Status Stream(int64_t offset, int64_t length,
                const std::function<Status(std::string_view chunk)>& sink,
                size_t chunk_bytes = 1 << 20) const override;

 private:
  friend class DirectoryBlobStore;
  DirectoryBlobReader(BlobInfo info, int fd, std::string path);

  const BlobInfo info_;
  const int fd_;
  const std::string path_;
};

}  // namespace sheetlog
