// S3BlobStore: the BlobStore (blob_store.h) on any S3-compatible object store, for
// `sheetlog serve --blobs 's3://BUCKET?endpoint=...'` (s3_client.h parses the URL).
//
// The split between the bucket and the table store:
//   - the bucket holds every object's body and the metadata S3 keeps (size, etag,
//     content type, LastModified). An object exists iff the bucket has it.
//   - the table store's blob_mirror table (emulator/schema/009_blob_mirror.sql) holds,
//     for each object that carries or carried tags, its tag set and its creation time on
//     the server's clock. It is the source of truth for tags: GetTags and the lifecycle
//     sweep read it, so the sweep never lists the bucket and works on stores without
//     lifecycle rules or tagging; the store's own tags (x-amz-tagging, PutObjectTagging)
//     are written as a copy where it keeps them (tagging=on, the default), so bucket
//     lifecycle rules can act too. Objects that never had tags have no row.
//   Ordering makes a crash leak, never lose: a put writes (or removes) the row before
//   its commit point at the store, a presigned upload's row is written before its URL
//   exists, a delete removes the object before the row. A row without its object is
//   removed by the sweep; an object without its row is never swept.
//
// Differences from the directory store (tested, or named where the test server cannot
// show them; see docs/architecture.md "Blob stores"):
//   - presigned URLs are the store's own (SigV4 query signing, sigv4.h): they point at
//     the store and it enforces their expiry by its own clock; the server's presigned
//     route refuses them. A PUT through an upload's URL reaches the store directly, so
//     the server cannot refuse one after the upload completed (the directory store
//     answers 409): the URL's expiry (1 hour) bounds that window.
//   - a reader whose object is overwritten meanwhile fails (reads are conditional on
//     the etag opened, where the store honours If-Match) instead of reading the old
//     version: S3 without versioning keeps none.
//   - List returns no content type (ListObjectsV2 does not), and `created` is the
//     store's LastModified for objects without a mirror row. Common prefixes are rolled
//     up here from a listing without delimiter (skipping past each one), so every
//     store answers the same.
//   - a multipart object's etag is the store's (on AWS "md5-of-parts-N", not the MD5 of
//     the body).
//   - Stats() is counted by listing the bucket at open and at each sweep, plus this
//     process's own puts and deletes in between.
//   - conditional puts (BlobPutOptions::if_none_match/if_match) are checked under the
//     key's lock in this process and also sent to the store (If-None-Match/If-Match, as
//     AWS S3 supports since 2024), so several nodes stay correct on stores that honour
//     them.
//   - Capture (a backup's) is refused (FailedPrecondition): a bucket is backed up by
//     its own versioning or replication, and presigned uploads bypass the server, so
//     it could not hold every change off for an instant. `sheetlog backup` copies the
//     directory store only.
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
  bool PresignedRequestsBypassServer() const override { return true; }
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
  Result<std::optional<std::string>> PresignUrl(const std::string& method,
                                                const std::string& key,
                                                int64_t expires_unix_s,
                                                const BlobTags& put_tags) override;
  std::string Sign(std::string_view method, std::string_view key,
                   int64_t expires_unix_s) const override;
  Status VerifyPresigned(std::string_view method, std::string_view key,
                         int64_t expires_unix_s,
                         std::string_view signature_hex) const override;
  // Reads blob_mirror: `examined` counts its rows, not the bucket's objects. Refreshes
  // Stats() with a listing of the bucket afterwards.
  Result<SweepReport> Sweep(const LifecycleRule& rule, const BlobKeepPredicate& keep,
                            const std::atomic<bool>* cancel = nullptr) override;
  BlobStats Stats() const override;
  std::string local_root() const override { return ""; }
  // FailedPrecondition, before anything runs (see the file comment).
  Result<std::unique_ptr<BlobCapture>> Capture(
      const std::function<Status()>& at_point) override;

  S3Client& client() { return client_; }

 private:
  friend class S3BlobWriter;
  struct MirrorRow {
    BlobTags tags;
    int64_t created_micros = 0;
  };

  S3BlobStore(const S3BlobStoreOptions& options, Transactions* tables, Clock* clock,
              FaultInjector* faults);

  Status Fault(FaultPoint point);
  Mutex& KeyMutex(const std::string& key);

  Result<std::optional<MirrorRow>> ReadRow(const std::string& key);
  Status WriteRow(const std::string& key, const MirrorRow& row);
  Status DeleteRows(const std::vector<std::string>& keys);
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
  Transactions* const tables_;
  Clock* const clock_;
  FaultInjector* const faults_;
  std::array<Mutex, kLockStripes> key_mutexes_;
  std::atomic<int64_t> object_count_{0};
  std::atomic<int64_t> byte_count_{0};
};

}  // namespace sheetlog
