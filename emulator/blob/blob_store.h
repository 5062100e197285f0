// emulator/blob: the blob store (S3) as src/ sees it. BlobStore is the interface; two
// implementations stand behind it:
//   DirectoryBlobStore (directory_blob_store.h)  objects as files under the data
//       directory, the default: nothing to run;
//   S3BlobStore (s3_blob_store.h)  any S3-compatible object store (`serve --blobs
//       s3://BUCKET?endpoint=...`), with tags and creation times also kept in the table
//       store so the lifecycle sweep works on stores without lifecycle rules.
// Both pass the same conformance tests (tests/unit/blob_*_test.cc, one source
// instantiated for each); where they differ it is said here, per operation, and tested.
//
// Every object has a body, metadata (size, etag, created time, content type) and a tag
// set. Listing is lexicographic with prefix/delimiter/continuation like ListObjectsV2.
// A lifecycle sweep deletes objects carrying a tag once they are old (seed 000: the
// upload of a large entry's body is written with auto-delete=true, the change feed
// untags it once the entry referencing it is in the log), and presigned URLs let a
// client upload or read without the server's token.
//
// Implementations are thread-safe.
#pragma once

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
#include "emulator/status.h"

namespace sheetlog {

class BlobCapture;
class BlobPresigner;
class BlobReader;
class BlobWriter;

// Tag key -> value. At most 10 tags; keys 1..128 bytes, values 0..256 bytes, both
// printable UTF-8 (S3's limits).
using BlobTags = std::map<std::string, std::string>;

struct BlobPutOptions {
  // At most 255 bytes of printable characters. Default (empty):
  // "application/octet-stream".
  std::string content_type;
  // The object's complete tag set (replaces the old object's tags on overwrite).
  BlobTags tags;
  // S3's conditional writes, checked at the commit under the key's lock (so two puts
  // racing for the same key cannot both pass): `if_none_match` stores the object only
  // if the key holds none (If-None-Match: *), `if_match` only if the current object's
  // etag is this one (If-Match). Otherwise ConditionFailed, and nothing is stored
  // (CheckBlobPutConditions, the one check of them).
  bool if_none_match = false;
  std::optional<std::string> if_match = std::nullopt;
};

// What Head returns, and one object of a listing.
struct BlobInfo {
  std::string key;
  // Body length in bytes; -1 only in List results for an object whose metadata is
  // unreadable (docs/architecture.md "The directory store on disk").
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

  // Whether an object with `tags`, put at `created_micros`, is one this rule deletes at
  // `now_micros`: it carries the rule's tag and is strictly older than the age. Every
  // store judges by these, at its first look and again under the key's lock.
  bool Selects(const BlobTags& tags) const;
  bool Expired(int64_t created_micros, int64_t now_micros) const {
    return now_micros - created_micros > max_age_micros;
  }
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
  int64_t unreadable = 0;      // metadata unreadable: never deleted (directory store)
  int64_t debris_removed = 0;  // uncommitted bodies of crashed or failed writes
  int64_t errors = 0;          // objects skipped because of an I/O error
  std::string first_error;     // the first such error, for the log
  bool cancelled = false;      // stopped early by the cancel flag
  std::vector<std::string> deleted_keys;  // in key order, at most the first 1000
};

// A sweep's first look at one object, counted in `report` (matched, too_young,
// kept_by_predicate): whether to go on and delete it — `rule` selects it, it has expired
// at `now_micros`, and `keep` (called with no lock held; may be empty) does not keep it.
// The store then checks again under the key's lock before it deletes.
bool SweepShouldDelete(const LifecycleRule& rule, const BlobTags& tags,
                       int64_t created_micros, int64_t now_micros, const std::string& key,
                       const BlobKeepPredicate& keep, SweepReport* report);

class BlobStore {
 public:
  virtual ~BlobStore() = default;

  // OK if `key` is a valid object key (blob_key.h), else InvalidArgument saying why.
  // Both stores accept exactly these keys.
  static Status ValidateKey(std::string_view key);

  // "directory" or "s3", for logs and /readyz.
  virtual std::string_view kind() const = 0;

  // Largest body a put may store; a larger one fails with ResourceExhausted and stores
  // nothing.
  virtual int64_t max_object_bytes() const = 0;

  // Stores `body` under `key` (replacing any object there) and returns its metadata.
  // Errors: InvalidArgument (key, tags, content type); ConditionFailed when a condition
  // of `options` does not hold (nothing stored); ResourceExhausted if the body is
  // larger than max_object_bytes (nothing stored); InsufficientStorage if the disk is
  // full; Unavailable if a fault point fired or the object store is unreachable;
  // Internal for other I/O errors. On error the old object, if any, is untouched
  // (S3: a put is all or nothing at the store).
  virtual Result<BlobInfo> Put(const std::string& key, std::string_view body,
                               const BlobPutOptions& options = {}) = 0;

  // Starts a streaming put: the body arrives through BlobWriter::Append and is never
  // held in memory whole (S3: a part at a time, as a multipart upload). Nothing is
  // visible until Commit. Validates key, tags and content type now (same errors as
  // Put).
  virtual Result<std::unique_ptr<BlobWriter>> BeginPut(
      const std::string& key, const BlobPutOptions& options = {}) = 0;

  // Stores a copy of object `from` under `to` with `options`' content type and tags,
  // and returns the new object's metadata. On S3 the store copies (CopyObject): the
  // bytes never pass through this process. `from_etag`, if not empty, is the version
  // to copy: ConditionFailed, nothing stored, if `from` holds another. NotFound if
  // `from` does not exist; InvalidArgument for options' conditions (a copy takes
  // none); otherwise Put's errors.
  virtual Result<BlobInfo> Copy(const std::string& from, const std::string& to,
                                const BlobPutOptions& options,
                                const std::string& from_etag = "") = 0;

  // Metadata of `key`. NotFound if there is no such object.
  virtual Result<BlobInfo> Head(const std::string& key) = 0;

  // The whole body (and, if `info` is not null, the metadata of the same version).
  // NotFound if there is no such object. For large objects prefer OpenReader.
  virtual Result<std::string> Get(const std::string& key, BlobInfo* info = nullptr) = 0;

  // Up to `length` bytes from `offset` (fewer at the end; `length` < 0: to the end).
  // OutOfRange if `offset` is negative or greater than the size.
  virtual Result<std::string> GetRange(const std::string& key, int64_t offset,
                                       int64_t length, BlobInfo* info = nullptr) = 0;

  // Opens the current version of `key` for reading in pieces. NotFound if there is no
  // such object. Directory: the reader keeps reading that version even if the object
  // is overwritten or deleted meanwhile. S3 (no versions): reads are conditional on
  // the etag opened, so a reader of an object overwritten meanwhile fails with
  // ConditionFailed instead of mixing versions, where the store honours If-Match.
  virtual Result<std::unique_ptr<BlobReader>> OpenReader(const std::string& key) = 0;

  // Removes the object. Idempotent: a missing object is OK. InvalidArgument for a bad
  // key; Unavailable if a fault point fired or the store is unreachable.
  virtual Status Delete(const std::string& key) = 0;
  // Removes every object of `keys` (missing ones are OK), with fewer syncs or requests
  // than one Delete each (a sheet's purge: thousands of objects). `after_each`, if
  // set, runs after each deletion and stops the batch with its error. A crash midway
  // leaves some of them deleted (each deletion is all or nothing).
  virtual Status DeleteBatch(const std::vector<std::string>& keys,
                             const std::function<Status()>& after_each = nullptr) = 0;

  // One page of keys (see BlobListOptions/BlobListResult). InvalidArgument for a bad
  // limit, delimiter or continuation token (including a token issued for another
  // prefix or delimiter: it names the listing it belongs to).
  virtual Result<BlobListResult> List(const BlobListOptions& options) = 0;

  // The object's tags. NotFound if there is no such object.
  virtual Result<BlobTags> GetTags(const std::string& key) = 0;
  // Replaces the object's tag set (body, etag and created time unchanged).
  // Idempotent. NotFound if there is no such object; InvalidArgument for bad tags.
  virtual Status PutTags(const std::string& key, const BlobTags& tags) = 0;
  // Removes all tags: PutTags(key, {}).
  Status DeleteTags(const std::string& key) { return PutTags(key, {}); }

  // Presigned URLs: a capability to `method` one key until `expires_unix_s` (the
  // server's clock) without the server's token. A store either mints its own or has
  // the server serve them:
  //
  // PresignUrl: the absolute URL of a store that serves presigned requests itself (S3:
  // SigV4 query signing; the store enforces the expiry, by its own clock, counting
  // expires_unix_s - now of the server's clock from now), or nullopt for a store whose
  // presigned requests the server serves. `put_tags`: the tags an object PUT through
  // the URL gets (S3: recorded now, before the URL exists, so an upload the client
  // never completes is still swept).
  virtual Result<std::optional<std::string>> PresignUrl(const std::string& method,
                                                        const std::string& key,
                                                        int64_t expires_unix_s,
                                                        const BlobTags& put_tags) = 0;
  // server_presigner: what signs and checks the presigned URLs the server serves, for a
  // store whose PresignUrl gives nullopt (directory: the URL is the server's
  // /v1/blobs/KEY?expires=&signature=, signed with the store's secret, blob_presigner.h);
  // null for a store that mints its own (S3), whose URLs point at the store, never at
  // the server. Lives as long as the store.
  virtual const BlobPresigner* server_presigner() const { return nullptr; }
  // True if a presigned URL's requests reach the store without passing through this
  // server (S3: no server presigner): the server cannot refuse a PUT to an upload's URL
  // once the upload is completed, so a completed payload must live at a key no URL
  // names (Uploads::Complete copies it there). The directory store's presigned
  // requests are served by this server, which refuses them then.
  bool PresignedRequestsBypassServer() const { return server_presigner() == nullptr; }

  // One lifecycle pass: deletes the objects `rule` selects, except those `keep` (may be
  // empty) vetoes. Each deletion re-checks, under the key's lock, that the object still
  // carries the tag and is still old enough, so an untag or overwrite that races the
  // sweep always wins. Per-object errors are counted in the report, not returned.
  // Stops between objects once `*cancel` is true (may be null). InvalidArgument if the
  // rule has an empty tag key or a negative age. Directory: walks every object. S3:
  // reads the table store's record of tagged objects, never the bucket (see
  // s3_blob_store.h), so it works on stores without lifecycle rules.
  virtual Result<SweepReport> Sweep(const LifecycleRule& rule,
                                    const BlobKeepPredicate& keep,
                                    const std::atomic<bool>* cancel = nullptr) = 0;

  // Object count and total body bytes. Directory: exact, kept in memory. S3: counted by
  // one listing at open plus this process's own puts and deletes since (objects PUT
  // straight to the store through presigned URLs are counted once the server sees
  // them); never a listing per call.
  virtual BlobStats Stats() const = 0;

  // Starts a capture of every object as it is at one instant, for a backup (RocksDB's
  // Checkpoint over immutable files, plus S3 versioning's "a delete keeps the old
  // version" while it runs). `at_point` runs with every put, overwrite and delete of
  // the store held off (it should be quick: a backup starts its database read
  // transaction there), so the objects at that instant are exactly the committed ones.
  // From then until BlobCapture::Walk returns, an overwrite or delete first keeps the
  // version it replaces in the capture (under the key's lock, before its commit point),
  // and Walk captures every other object's current version: the capture ends up with,
  // for every object that existed at the instant, that version, and never a later one
  // (tags excepted: a tag change is not a new version, and the capture holds the tags
  // the object has when it is captured). Objects created after the instant may or may
  // not be in it. One capture at a time (FailedPrecondition otherwise). An error of
  // `at_point` is returned as is.
  // Directory: a capture costs a hard link per object, and disk space only for versions
  // deleted while it lives (directory_blob_store.h). S3: FailedPrecondition before
  // anything runs (`at_point` included): a bucket is backed up by its own versioning
  // or replication, and objects PUT through presigned URLs never pass through the
  // server, so it could not hold them off.
  virtual Result<std::unique_ptr<BlobCapture>> Capture(
      const std::function<Status()>& at_point) = 0;
};

// One object of a BlobCapture: its metadata and a file of this machine holding its
// body, which stays readable until the capture is destroyed, whatever happens to the
// object meanwhile.
struct CapturedBlob {
  BlobInfo info;
  // The stored version (S3's VersionId): a new put of the key always gets a new one,
  // so equal versions mean equal bodies.
  std::string version;
  std::string body_path;
};

// What BlobStore::Capture returns. Walk it once, read objects(), then destroy it
// (releases what it holds). Not thread-safe; the store must outlive it.
class BlobCapture {
 public:
  // Stops capturing (if Walk did not) and removes what the capture holds.
  virtual ~BlobCapture() = default;

  // Captures every object not captured yet, then stops capturing changes. Fails if an
  // object could not be captured (the capture would miss it).
  virtual Status Walk() = 0;
  // The captured objects in key order (after Walk). Objects whose metadata is
  // unreadable are not in it; unreadable() counts them.
  virtual const std::vector<CapturedBlob>& objects() const = 0;
  virtual int64_t unreadable() const = 0;
};

// A put in progress (BlobStore::BeginPut). Not thread-safe: one thread feeds it.
// Destroying it without Commit aborts it.
class BlobWriter {
 public:
  virtual ~BlobWriter() = default;

  // Appends to the body. ResourceExhausted if the body would exceed max_object_bytes:
  // the writer is then aborted. After any error, every later call fails with the same
  // error.
  virtual Status Append(std::string_view data) = 0;
  // Makes the object visible atomically and returns its metadata. After Commit (ok or
  // not) the writer is finished; a failed Commit leaves the old object untouched.
  virtual Result<BlobInfo> Commit() = 0;
  // Discards the body; nothing becomes visible. Idempotent.
  virtual void Abort() = 0;

  virtual int64_t bytes_written() const = 0;
};

// A version of an object opened for reading (BlobStore::OpenReader). Thread-safe.
class BlobReader {
 public:
  virtual ~BlobReader() = default;

  // Metadata of the version being read.
  virtual const BlobInfo& info() const = 0;

  // Up to `length` bytes from `offset` (fewer at the end; `length` < 0: to the end).
  // OutOfRange if `offset` < 0 or > info().size.
  virtual Result<std::string> ReadAt(int64_t offset, int64_t length) const = 0;

  // Calls `sink` with consecutive pieces of at most `chunk_bytes` covering
  // [offset, offset + length) clipped to the body (`length` < 0: to the end), so a
  // large body streams in bounded memory. Returns the first error of `sink`, which stops
  // the stream; OutOfRange as ReadAt; Internal if the body is shorter than its metadata
  // says.
  virtual Status Stream(int64_t offset, int64_t length,
                        const std::function<Status(std::string_view chunk)>& sink,
                        size_t chunk_bytes = 1 << 20) const = 0;
};

// Checks shared by both stores (blob_store.cc): a put's content type and tags, and a
// listing's arguments, so both refuse exactly the same inputs with the same messages.
Status ValidateBlobPutOptions(const BlobPutOptions& options);
// Whether a put with `options` is conditional (if_none_match or if_match).
bool HasBlobPutConditions(const BlobPutOptions& options);
// The one check of a put's conditions (BlobPutOptions::if_none_match, if_match),
// judged against the object `key` holds now, whose etag is `current_etag` (nullopt:
// no object): OK if they hold (or there are none), else ConditionFailed saying which
// failed. Each store runs it at the commit under the key's lock; the API runs it
// before reading a body, to refuse early what the commit would refuse.
Status CheckBlobPutConditions(const std::string& key, const BlobPutOptions& options,
                              const std::optional<std::string>& current_etag);
// A copy's options: a put's, without conditions (BlobStore::Copy).
Status ValidateBlobCopyOptions(const BlobPutOptions& options);
Status ValidateBlobListOptions(const BlobListOptions& options);
// The continuation token of a listing that returned `last` (a key, or a common prefix
// ending in the delimiter) last, and its parse: the item after which the next page
// starts. Bound to the prefix and delimiter it was issued for.
std::string EncodeBlobContinuation(const BlobListOptions& options, std::string_view last);
Result<std::string> DecodeBlobContinuation(const BlobListOptions& options);

}  // namespace sheetlog
