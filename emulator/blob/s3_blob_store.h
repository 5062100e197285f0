// S3BlobStore: the BlobStore (blob_store.h) on any S3-compatible object store, for
// `sheetlog serve --blobs 's3://BUCKET?endpoint=...'` (s3_client.h parses the URL).
//
// The bucket holds every object's body and the metadata S3 keeps; an object exists iff
// the bucket has it. The table store's blob_mirror table, kept through BlobTagMirror
// (blob_tag_mirror.h), holds the tags and creation time of every object that carries or
// carried tags and is the source of truth for tags: GetTags and the lifecycle sweep read
// it, never listing the bucket. This store decides when a row is written or removed;
// the ordering of row and object makes a crash leak, never lose.
//
// Where it differs from the directory store (presigned URLs are the store's own, a
// reader of an overwritten object fails, listings carry no content type, multipart
// etags, Stats, conditional puts also sent to the store, Capture refused), and the
// split in full: docs/architecture.md "Blob stores".
//
// Thread-safe. Puts, deletes and tag changes of one key are serialized in this process
// by a striped key lock, held across the store request that commits them.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "emulator/blob/blob_store.h"
#include "emulator/blob/blob_tag_mirror.h"
#include "emulator/blob/s3_client.h"
#include "emulator/env/fault_points.h"
#include "emulator/env/mutex.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class Clock;
class FaultInjector;
class S3BlobWriter;

struct S3BlobStoreOptions {
  S3Location location;
  // Largest body a put may store. Default: 5 GiB (S3's single-PUT limit; larger bodies
  // would be possible as multipart uploads, but the directory store has the same limit).
  int64_t max_object_bytes = 5LL << 30;
};

class S3BlobStore final : public BlobStore {
 public:
  // Checks that the bucket is reachable with the credentials (FailedPrecondition if it
  // does not exist, PermissionDenied for refused credentials, Unavailable if the store
  // does not answer) and counts its objects for Stats(). `tables` holds blob_mirror;
  // `tables`, `clock` and `faults` (may be null) must outlive the store.
  static Result<std::unique_ptr<S3BlobStore>> Open(const S3BlobStoreOptions& options,
                                                   Transactions* tables, Clock* clock,
                                                   FaultInjector* faults = nullptr);
  ~S3BlobStore() override;

  std::string_view kind() const override { return "s3"; }
  int64_t max_object_bytes() const override { return options_.max_object_bytes; }

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
  // The store's own URL (SigV4 query signing); server_presigner() is null: the server
  // serves no presigned request of this store.
  Result<std::optional<std::string>> PresignUrl(const std::string& method,
                                                const std::string& key,
                                                int64_t expires_unix_s,
                                                const BlobTags& put_tags) override;
  // Reads blob_mirror: `examined` counts its rows, not the bucket's objects. Refreshes
  // Stats() with a listing of the bucket afterwards.
  Result<SweepReport> Sweep(const LifecycleRule& rule, const BlobKeepPredicate& keep,
                            const std::atomic<bool>* cancel = nullptr) override;
  BlobStats Stats() const override;
  // FailedPrecondition, before anything runs: a bucket is backed up by its own
  // versioning or replication, and presigned uploads bypass the server, so it could
  // not hold every change off for an instant. `sheetlog backup` copies the directory
  // store only.
  Result<std::unique_ptr<BlobCapture>> Capture(
      const std::function<Status()>& at_point) override;

  S3Client& client() { return client_; }

 private:
  friend class S3BlobWriter;
  using MirrorRow = BlobTagMirror::Row;

  S3BlobStore(const S3BlobStoreOptions& options, Transactions* tables, Clock* clock,
              FaultInjector* faults);

  Status Fault(FaultPoint point);
  Mutex& KeyMutex(const std::string& key);

  BlobInfo InfoOf(const S3ObjectInfo& object, const std::optional<MirrorRow>& row) const;

  // The conditions of `options` against the current object; sets `*replaced_size` if
  // it looked and found one. REQUIRES: the key's lock.
  Status CheckConditions(const std::string& key, const BlobPutOptions& options,
                         std::optional<int64_t>* replaced_size);
  // Stats() after a put: one object more unless it is known to replace one (of
  // `replaced_size` bytes).
  void CountPut(int64_t size, const std::optional<int64_t>& replaced_size);
  // Writes or removes the key's row for a put with `options` (before its commit
  // point); returns the row it replaced, to restore if the put fails. REQUIRES: the
  // key's lock.
  Result<std::optional<MirrorRow>> PrepareRowForPut(const std::string& key,
                                                    const BlobPutOptions& options,
                                                    int64_t created_micros);
  void RestoreRow(const std::string& key, const std::optional<MirrorRow>& previous);
  // The request headers of a conditional put.
  static std::vector<std::string> ConditionHeaders(const BlobPutOptions& options);

  Status RefreshStats();

  static constexpr size_t kLockStripes = 64;

  const S3BlobStoreOptions options_;
  S3Client client_;
  BlobTagMirror mirror_;
  Clock* const clock_;
  FaultInjector* const faults_;
  std::array<Mutex, kLockStripes> key_mutexes_;
  std::atomic<int64_t> object_count_{0};
  std::atomic<int64_t> byte_count_{0};
};

}  // namespace sheetlog
