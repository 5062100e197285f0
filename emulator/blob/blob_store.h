// emulator/blob: the S3 stand-in. Objects are files under one root directory; each
// object has a body, metadata (size, MD5 etag, created time, content type) and a tag set.
// Writes are atomic (a reader sees the old or the new object, never a mix or a partial
// body), listing is lexicographic with prefix/delimiter/continuation like
// ListObjectsV2, a lifecycle sweep deletes objects carrying a tag once they are old
// (seed 000: the upload of a large entry's body is written with auto-delete=true, the
// change feed untags it once the entry referencing it is in the log), and presigned URLs
// let a client upload without the server's token.
//
// On-disk layout (names containing '\' can never collide with a key part: see
// blob_key.h):
//
//   <root>/LOCK                 flock()ed by the open BlobStore: one per directory
//   <root>/secret               presigning secret, 0600 (blob_presigner.h)
//   <root>/tmp/                 bodies being written, metadata being replaced
//   <root>/capture/<id>/        hard links to the bodies a BlobCapture holds (removed
//                               with it, and by Open after a crash)
//   <root>/objects/<key>/       one directory per key, e.g. objects/sheets/s1/body/
//       \meta                   metadata (JSON). Its presence IS the object.
//       \body.<id>              the body the metadata names (<id>: 32 random hex digits)
//
// A key is a directory rather than a file so that "a" and "a/b" can both be objects,
// as in S3. Directories left empty by deletes are removed.
//
// Commit protocol and crash safety. A put streams the body into tmp/<id>.body (syncing
// it), then, holding the key's lock: creates the key's directory, renames the body to
// \body.<id> and syncs the directory, writes the new metadata to tmp/, syncs it, renames
// it over \meta and syncs the directory again. That rename is the single commit point:
// before it readers and a crash see the old object (or none), after it the new one.
// Only then is the old body removed. A delete removes \meta first (its commit point),
// then the bodies, then empty directories. Consequences after a crash:
//   - a body that no \meta names is debris of an uncommitted put or of a delete: it is
//     never visible, never listed, never counted, and Open() (or the next put, delete
//     or sweep of that key) removes it;
//   - tmp/ holds only debris: Open() empties it.
// A \meta that cannot be parsed (only possible through outside damage: it is always
// written complete and synced before it is renamed into place) makes the object
// "unreadable": Head/Get/tags fail with Internal, List shows it with size -1, and the
// lifecycle sweep NEVER deletes it (it cannot know the tags), counting it in
// SweepReport::unreadable instead. An explicit Delete removes it.
//
// With options.sync = false (tests, --in-memory) nothing is fsynced: the same ordering
// holds within the running process, but a machine crash may lose recent writes.
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

#include "emulator/blob/blob_key.h"
#include "emulator/env/fault_points.h"
#include "emulator/env/mutex.h"
#include "emulator/status.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace sheetlog {

class BlobCapture;
class BlobPresigner;
class BlobReader;
class BlobWriter;
class Clock;
class FaultInjector;

// Tag key -> value. At most 10 tags; keys 1..128 bytes, values 0..256 bytes, both
// printable UTF-8 (S3's limits).
using BlobTags = std::map<std::string, std::string>;

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

struct BlobPutOptions {
  // At most 255 bytes of printable characters. Default (empty):
  // "application/octet-stream".
  std::string content_type;
  // The object's complete tag set (replaces the old object's tags on overwrite).
  BlobTags tags;
  // S3's conditional writes, checked at the commit under the key's lock (so two puts
  // racing for the same key cannot both pass): `if_none_match` stores the object only
  // if the key holds none (If-None-Match: *), `if_match` only if the current object's
  // etag is this one (If-Match). Otherwise ConditionFailed, and nothing is stored.
  bool if_none_match = false;
  std::optional<std::string> if_match = std::nullopt;
};

// What Head returns, and one object of a listing.
struct BlobInfo {
  std::string key;
  // Body length in bytes; -1 only in List results for an object whose metadata is
  // unreadable (see the file comment).
  int64_t size = 0;
  // Lowercase hex MD5 of the body, as S3's ETag for a single-part upload (unquoted).
  std::string etag;
  // Clock time at which the put committed (S3's LastModified).
  int64_t created_micros = 0;
  std::string content_type;
  BlobTags tags;
};

struct BlobListOptions {
  // Only keys starting with this (any string; one that no valid key can start with
  // simply lists nothing).
  std::string prefix;
  // "" lists every key under the prefix; "/" rolls keys that have a '/' after the prefix
  // up into one common prefix each (ListObjectsV2's CommonPrefixes). Other delimiters
  // are refused (InvalidArgument).
  std::string delimiter;
  // Most keys + common prefixes to return, 1..1000. Default: 1000.
  int limit = 1000;
  // BlobListResult::continuation of the previous page; empty for the first page.
  std::string continuation;
};

struct BlobListResult {
  // Objects in byte-wise lexicographic key order, then...
  std::vector<BlobInfo> keys;
  // ...common prefixes (each ending in the delimiter), also in order. Keys and prefixes
  // interleave in one order; they are returned in two lists as S3 does.
  std::vector<std::string> prefixes;
  // Set if there may be more: pass it as BlobListOptions::continuation (with the same
  // prefix and delimiter) to get the items strictly after the last one returned. It is
  // an opaque encoding of that last key or prefix, not a position, so it stays valid
  // however many objects are added or removed in between: every object that exists
  // throughout a paged listing is returned exactly once.
  std::optional<std::string> continuation;
};

struct BlobStats {
  int64_t objects = 0;
  int64_t bytes = 0;  // sum of body sizes
};

// Which objects the lifecycle sweep deletes: those whose tag `tag_key` equals
// `tag_value` and whose created time is more than `max_age_micros` before now.
struct LifecycleRule {
  std::string tag_key = "auto-delete";
  std::string tag_value = "true";
  int64_t max_age_micros = 3LL * 24 * 3600 * 1000000;  // 3 days (--orphan-ttl)
};

// Called by the sweep for each object the rule would delete, without any store lock
// held. Return true to keep the object this time (e.g. an entry references it but its
// untag side effect has not run yet). When unsure (say the event log is unavailable),
// return true: a kept object is only looked at again at the next sweep.
using BlobKeepPredicate = std::function<bool(const std::string& key)>;

struct SweepReport {
  int64_t examined = 0;           // objects looked at
  int64_t matched = 0;            // carried the rule's tag
  int64_t too_young = 0;          // matched, not old enough yet
  int64_t kept_by_predicate = 0;  // old enough, vetoed by the keep predicate
  int64_t changed = 0;            // retagged/overwritten between the check and delete
  int64_t deleted = 0;
  int64_t deleted_bytes = 0;
  int64_t unreadable = 0;      // metadata unreadable: never deleted (see file comment)
  int64_t debris_removed = 0;  // uncommitted bodies of crashed or failed writes
  int64_t errors = 0;          // objects skipped because of an I/O error
  std::string first_error;     // the first such error, for the log
  bool cancelled = false;      // stopped early by the cancel flag
  std::vector<std::string> deleted_keys;  // in key order, at most the first 1000
};

class BlobStore {
 public:
  // Opens (creating if needed) the store at options.root: takes the directory's lock,
  // loads or creates the presigning secret, empties tmp/, removes debris of crashed
  // writes, and counts objects and bytes for Stats(). Errors: InvalidArgument for bad
  // options; FailedPrecondition if another BlobStore (in this or another process) has
  // the directory open; I/O errors as Internal/Unavailable.
  // `clock` must outlive the store; `faults` may be null (no fault points).
  static Result<std::unique_ptr<BlobStore>> Open(const BlobStoreOptions& options,
                                                 Clock* clock,
                                                 FaultInjector* faults = nullptr);
  // REQUIRES: no BlobWriter or BlobReader of this store is still alive.
  ~BlobStore();
  BlobStore(const BlobStore&) = delete;
  BlobStore& operator=(const BlobStore&) = delete;

  // OK if `key` is a valid object key (blob_key.h), else InvalidArgument saying why.
  static Status ValidateKey(std::string_view key);

  // Stores `body` under `key` (replacing any object there) and returns its metadata.
  // Errors: InvalidArgument (key, tags, content type); ConditionFailed when a condition
  // of `options` does not hold (nothing stored); ResourceExhausted if the body is
  // larger than max_object_bytes (nothing stored); Unavailable if the disk is full or a
  // fault point fired; Internal for other I/O errors. On error the old object, if any,
  // is untouched.
  Result<BlobInfo> Put(const std::string& key, std::string_view body,
                       const BlobPutOptions& options = {});

  // Starts a streaming put: the body arrives through BlobWriter::Append and is never
  // held in memory. Nothing is visible until Commit. Validates key, tags and content
  // type now (same errors as Put).
  Result<std::unique_ptr<BlobWriter>> BeginPut(const std::string& key,
                                               const BlobPutOptions& options = {});

  // Metadata of `key`. NotFound if there is no such object; Internal if its metadata is
  // unreadable.
  Result<BlobInfo> Head(const std::string& key);

  // The whole body (and, if `info` is not null, the metadata of the same version).
  // NotFound if there is no such object. For large objects prefer OpenReader.
  Result<std::string> Get(const std::string& key, BlobInfo* info = nullptr);

  // Up to `length` bytes from `offset` (fewer at the end; `length` < 0: to the end).
  // OutOfRange if `offset` is negative or greater than the size.
  Result<std::string> GetRange(const std::string& key, int64_t offset, int64_t length,
                               BlobInfo* info = nullptr);

  // Opens the current version of `key` for reading in pieces. The reader keeps reading
  // that version even if the object is overwritten or deleted meanwhile.
  // NotFound if there is no such object.
  Result<std::unique_ptr<BlobReader>> OpenReader(const std::string& key);

  // Removes the object. Idempotent: a missing object is OK. InvalidArgument for a bad
  // key; Unavailable if a fault point fired.
  Status Delete(const std::string& key);
  // Removes every object of `keys` (missing ones are OK), durably when it returns like
  // Delete, but with one fsync per directory the deletions changed instead of one per
  // object (a sheet's purge: thousands of objects, a handful of directories).
  // `after_each`, if set, runs after each deletion and stops the batch with its error.
  // A crash midway leaves some of them deleted (each deletion is all or nothing).
  Status DeleteBatch(const std::vector<std::string>& keys,
                     const std::function<Status()>& after_each = nullptr);

  // One page of keys (see BlobListOptions/BlobListResult). Walks only the directories
  // under the prefix, each sorted on its own, and stops after limit + 1 items.
  // InvalidArgument for a bad limit, delimiter or continuation token (including a
  // token issued for another prefix or delimiter: it names the listing it belongs to).
  Result<BlobListResult> List(const BlobListOptions& options);

  // The object's tags. NotFound if there is no such object.
  Result<BlobTags> GetTags(const std::string& key);
  // Replaces the object's tag set (body, etag and created time unchanged).
  // Idempotent. NotFound if there is no such object; InvalidArgument for bad tags.
  Status PutTags(const std::string& key, const BlobTags& tags);
  // Removes all tags: PutTags(key, {}).
  Status DeleteTags(const std::string& key);

  // Presigned URLs for this store's secret (see BlobPresigner): the signature that lets
  // `method` on `key` until `expires_unix_s`, and its check (PermissionDenied
  // "signature does not match" / "presigned URL expired").
  std::string Sign(std::string_view method, std::string_view key,
                   int64_t expires_unix_s) const;
  Status VerifyPresigned(std::string_view method, std::string_view key,
                         int64_t expires_unix_s, std::string_view signature_hex) const;

  // One lifecycle pass over every object: deletes those `rule` selects, except those
  // `keep` (may be empty) vetoes, and removes debris of crashed writes. Each deletion
  // re-checks, under the key's lock, that the object still has the same body, still
  // carries the tag and is still old enough, so an untag or overwrite that races the
  // sweep always wins. Per-object I/O errors are counted in the report, not returned.
  // Stops between objects once `*cancel` is true (may be null).
  // InvalidArgument if the rule has an empty tag key or a negative age.
  Result<SweepReport> Sweep(const LifecycleRule& rule, const BlobKeepPredicate& keep,
                            const std::atomic<bool>* cancel = nullptr);

  // Object count and total body bytes, kept in memory (two atomic loads). Exact except
  // for objects whose metadata is unreadable.
  BlobStats Stats() const;

  // Starts a capture of every object as it is at one instant, for a backup (RocksDB's
  // Checkpoint over immutable files, plus S3 versioning's "a delete keeps the old
  // version" while it runs). `at_point` runs with every put, overwrite and delete of
  // the store held off (it should be quick: a backup starts its database read
  // transaction there), so the objects at that instant are exactly the committed ones.
  // From then until BlobCapture::Walk returns, an overwrite or delete first hard-links
  // the version it replaces into the capture (under the key's lock, before its commit
  // point), and Walk links every other object's current version: the capture ends up
  // with, for every object that existed at the instant, that version, and never a
  // later one (tags excepted: a tag change is not a new version, and the capture holds
  // the tags the object has when it is captured). Objects created after the instant
  // may or may not be in it. Bodies are never copied here; a capture costs a link per
  // object, and disk space only for versions deleted while it lives. One capture at a
  // time (FailedPrecondition otherwise). An error of `at_point` is returned as is.
  Result<std::unique_ptr<BlobCapture>> Capture(const std::function<Status()>& at_point);

  const BlobStoreOptions& options() const { return options_; }

 private:
  friend class BlobWriter;
  struct StoredMeta;

  BlobStore(const BlobStoreOptions& options, Clock* clock, FaultInjector* faults);

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

  // The commit step of a put (see the file comment). Takes the key's lock.
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
  BlobCapture* capture_ GUARDED_BY(capture_gate_) = nullptr;  // the active capture
  friend class BlobCapture;
};

// One object of a BlobCapture: its metadata and a path to its body that stays readable
// until the capture is destroyed, whatever happens to the object meanwhile.
struct CapturedBlob {
  BlobInfo info;
  // The stored version (S3's VersionId): a new put of the key always gets a new one,
  // so equal versions mean equal bodies.
  std::string version;
  std::string body_path;
};

// What BlobStore::Capture returns. Walk it once, read objects(), then destroy it
// (removes its links). Not thread-safe; the store must outlive it.
class BlobCapture {
 public:
  ~BlobCapture();
  BlobCapture(const BlobCapture&) = delete;
  BlobCapture& operator=(const BlobCapture&) = delete;

  // Links every object not captured yet, then stops capturing changes. Fails if any
  // link failed (the capture would miss that object).
  Status Walk();
  // The captured objects in key order (after Walk). Objects whose metadata is
  // unreadable are not in it; unreadable() counts them.
  const std::vector<CapturedBlob>& objects() const { return objects_; }
  int64_t unreadable() const { return unreadable_; }

 private:
  friend class BlobStore;
  BlobCapture(BlobStore* store, std::string dir) : store_(store), dir_(std::move(dir)) {}
  // Called under the key's lock (and the gate, for changes).
  void Add(const std::string& key, const std::string& body_id, BlobInfo info);
  void Stop();

  BlobStore* const store_;
  const std::string dir_;
  Mutex mu_;
  std::map<std::string, CapturedBlob> captured_ GUARDED_BY(mu_);
  Status error_ GUARDED_BY(mu_);  // the first link failure
  int64_t next_link_ GUARDED_BY(mu_) = 0;
  bool stopped_ = false;
  int64_t unreadable_ = 0;
  std::vector<CapturedBlob> objects_;
};

// A put in progress (BlobStore::BeginPut). Not thread-safe: one thread feeds it.
// Destroying it without Commit aborts it.
class BlobWriter {
 public:
  ~BlobWriter();
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;

  // Appends to the body. ResourceExhausted if the body would exceed max_object_bytes:
  // the writer is then aborted (its temporary file removed). After any error, every
  // later call fails with the same error.
  Status Append(std::string_view data);
  // Makes the object visible atomically and returns its metadata. After Commit (ok or
  // not) the writer is finished; a failed Commit leaves the old object untouched.
  Result<BlobInfo> Commit();
  // Discards the body; nothing becomes visible. Idempotent.
  void Abort();

  int64_t bytes_written() const { return size_; }

 private:
  friend class BlobStore;
  BlobWriter(BlobStore* store, std::string key, BlobPutOptions options,
             std::string body_id, std::string tmp_path, int fd, evp_md_ctx_st* md5);

  BlobStore* const store_;
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

// A version of an object opened for reading (BlobStore::OpenReader). Thread-safe.
class BlobReader {
 public:
  ~BlobReader();
  BlobReader(const BlobReader&) = delete;
  BlobReader& operator=(const BlobReader&) = delete;

  // Metadata of the version being read.
  const BlobInfo& info() const { return info_; }

  // Up to `length` bytes from `offset` (fewer at the end; `length` < 0: to the end).
  // OutOfRange if `offset` < 0 or > info().size.
  Result<std::string> ReadAt(int64_t offset, int64_t length) const;

  // Calls `sink` with consecutive pieces of at most `chunk_bytes` covering
  // [offset, offset + length) clipped to the body (`length` < 0: to the end), so a
  // large body streams in bounded memory. Returns the first error of `sink`, which stops
  // the stream; OutOfRange as ReadAt; Internal if the body file is shorter than its
  // metadata says (outside damage).
  Status Stream(int64_t offset, int64_t length,
                const std::function<Status(std::string_view chunk)>& sink,
                size_t chunk_bytes = 1 << 20) const;

 private:
  friend class BlobStore;
  BlobReader(BlobInfo info, int fd, std::string path);

  const BlobInfo info_;
  const int fd_;
  const std::string path_;
};

}  // namespace sheetlog
