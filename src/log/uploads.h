// Large entries, seed 000's playbook: a discardable write of the payload to the blob
// store (tagged auto-delete=true), then the linchpin write — the entry, referencing the
// blob — then a side effect (the change feed's untag handler) that removes the tag.
//
// Clients do it in three steps (Create -> presigned PUT -> Complete); bodies posted
// inline that exceed the inline limit take the same path inside the server
// (AppendLarge).
//
// The lifecycle sweep deletes blobs still tagged auto-delete after --orphan-ttl. A blob
// referenced by an entry must never go, even before its untag has run. The `upload`
// table records the reference (entry_seq) in the same transaction as the entry, and the
// sweep asks KeepForSweep() before deleting. The race this closes: the sweep decides a
// blob is unreferenced, then a Complete appends an entry referencing it, then the sweep
// deletes it. KeepForSweep() and Complete() serialize on one mutex, and a key found
// unreferenced is "condemned": a Complete of a condemned key is refused
// (409) instead of referencing a blob that is about to disappear.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "emulator/blob/blob_store.h"
#include "emulator/env/clock.h"
#include "emulator/env/faults.h"
#include "emulator/env/mutex.h"
#include "src/log/event_log.h"

namespace sheetlog {

inline constexpr const char* kAutoDeleteTag = "auto-delete";

struct UploadInfo {
  std::string upload_id;
  std::string sheet_id;
  std::string blob_key;
  std::string kind;  // "client" or "inline"
  std::string type;
  int64_t version = 1;
  std::optional<std::string> body;  // JSON text
  std::optional<std::string> content_type;
  std::optional<int64_t> size;
  int64_t created = 0;
  int64_t expires = 0;
  std::optional<int64_t> entry_seq;
};

// Thread-safe: HTTP workers, the change feed's handlers and the sweeper call it at once.
class Uploads {
 public:
  // Checks an upload's stored payload before Complete appends its entry.
  using Validator = std::function<Status(const UploadInfo&, BlobStore&)>;

  struct Options {
    // How long a presigned upload URL stays valid. Default: 1 hour.
    int64_t url_ttl_seconds = 3600;
    // Seed 001's break-even: Append keeps a body larger than this (bytes of JSON
    // text) in the blob store, the entry referencing it. Default: 16 KiB.
    int64_t inline_limit = 16 * 1024;
    // Run by Complete on the stored payload (e.g. an Import file must parse, so it
    // can never fail later in the pipeline); its error refuses the upload with
    // nothing written. Empty: payloads are not checked. The composition root installs
    // the spreadsheet's rules (src/snapshot/import_check.h).
    Validator validate_payload;
  };

  // `db` holds the Upload table (schema/sqlite/006_upload.sql); `log` the sheets and
  // entries.
  Uploads(Transactions* db, EventLog* log, BlobStore* blobs, Clock* clock,
          FaultInjector* faults, Options options);

  // Step 1: records the upload; the client PUTs the payload to the presigned URL of
  // `blob_key` before `expires`. NotFound for an unknown sheet.
  Result<UploadInfo> Create(const std::string& sheet_id, const std::string& type,
                            int64_t version, std::optional<std::string> body,
                            std::optional<std::string> content_type,
                            std::optional<int64_t> size, UnitMeter* meter);
  // NotFound if no such upload of that sheet.
  Result<UploadInfo> Get(const std::string& sheet_id, const std::string& upload_id,
                         UnitMeter* meter);

  // Step 3: appends the entry with `external` = the blob. Idempotent: completing again
  // returns the entry appended the first time (`*already` set). Errors: NotFound (no
  // upload); FailedPrecondition (body not uploaded yet, or the blob is being swept);
  // ConditionFailed with *next_seq_out (expect_seq); Options::validate_payload runs on
  // the stored payload first and its error refuses the upload with nothing written.
  Result<EntryRecord> Complete(const std::string& sheet_id, const std::string& upload_id,
                               std::optional<int64_t> expect_seq, UnitMeter* meter,
                               int64_t* next_seq_out, bool* already);

  // Step 2, the presigned PUT of an upload's payload at `key`: runs `commit` (which
  // makes the written body visible) only while the upload is open. Errors, with
  // `commit` not run: NotFound if no upload has that key (never created, or its sheet
  // was deleted); FailedPrecondition once the upload is completed — the entry is
  // acknowledged and its payload immutable. Serialized with Complete, so a PUT never
  // lands between Complete's check of the payload and the entry that references it.
  // CheckOpenForPayload is the same check without the commit, for refusing a PUT
  // before its body is read.
  Status CheckOpenForPayload(const std::string& key);
  Result<BlobInfo> CommitClientPayload(const std::string& key,
                                       const std::function<Result<BlobInfo>()>& commit);

  // Add Entry for a client's entry, whatever its size: a body over
  // Options::inline_limit goes through AppendLarge, any other straight to the log
  // (EventLog::AddEntry, with its errors).
  Result<AppendResult> Append(AppendRequest request, UnitMeter* meter,
                              int64_t* next_seq_out);
  // Append without holding the caller while an inline entry commits
  // (EventLog::AddEntryAsync, same contract for `done` and `meter`). A body over the
  // inline limit goes through AppendLarge on the caller's thread, and `done` runs
  // before this returns.
  void AppendAsync(AppendRequest request, UnitMeter* meter, EventLog::AppendDone done);

  // An inline body too large to keep in the entry: blob first (tagged auto-delete),
  // then the entry referencing it. `request.body` is moved to the blob.
  Result<AppendResult> AppendLarge(AppendRequest request, UnitMeter* meter,
                                   int64_t* next_seq_out);

  // The side effect: removes the auto-delete tag (other tags stay). Idempotent; a
  // missing blob is OK (the sheet may have been deleted since).
  Status Untag(const std::string& key);

  // For the lifecycle sweep's keep predicate: true if an entry references `key`.
  // Otherwise condemns `key` (for good: it is older than the orphan TTL and about to be
  // deleted) and returns false.
  bool KeepForSweep(const std::string& key);

  // The payload of an external entry.
  Result<std::string> ReadBody(const std::string& key);

  // Deletes every upload row, inside the caller's transaction: the uploads' part of an
  // admin reset (App::Reset, which deletes every object itself).
  Status DeleteAll(Connection& conn);

  // A presigned URL for `method` on `key` valid until `expires`: the blob store's own
  // (absolute: an S3 store's SigV4 URL) or the server's path+query (starting with '/',
  // for a store whose presigned requests the server serves). A PUT URL's object is
  // tagged auto-delete (seed 000's discardable write). Errors: the store's (S3 records
  // the upload's tags before it hands out the URL).
  Result<std::string> PresignedPath(const std::string& method, const std::string& key,
                                    int64_t expires);

  BlobStore* blobs() { return blobs_; }

 private:
  Result<std::optional<UploadInfo>> Lookup(Connection& conn, const std::string& upload_id,
                                           UnitMeter* meter);
  // Lookup in a read transaction of its own.
  Result<std::optional<UploadInfo>> Find(const std::string& upload_id, UnitMeter* meter);

  Transactions* db_;
  EventLog* log_;
  BlobStore* blobs_;
  Clock* clock_;
  FaultInjector* faults_;
  Options options_;

  Mutex reference_mu_;  // serializes Complete with KeepForSweep
  std::set<std::string> condemned_ GUARDED_BY(reference_mu_);
};

// Table of schema/sqlite/006_upload.sql.
const Table& UploadTable();

}  // namespace sheetlog
