// Internal to src/api: entries as api.md shows them, with their external bodies (kept
// in the blob store) as presigned references or inline. Shared by the sheet and
// spreadsheet routes and the event streams.
#pragma once

#include <string>

#include "src/api/router.h"
#include "src/log/log_records.h"

namespace sheetlog {
class BlobStore;
class Clock;
class Uploads;
}  // namespace sheetlog

namespace sheetlog::api {

// Thread-safe: it only reads (the blob store, the clock) and presigns.
class EntryPresenter {
 public:
  EntryPresenter(BlobStore* blobs, Uploads* uploads, Clock* clock)
      : blobs_(blobs), uploads_(uploads), clock_(clock) {}

  // An entry: seq, segment, num, created, type, version, body, external,
  // snapshot_root, and its metadata fields once set.
  json Entry(const EntryRecord& entry) const;
  // {"key", "size", "url"} for an external body: url is a presigned GET (size and url
  // are null when the object or the signature is not to be had).
  json External(const std::string& key) const;
  // The external body itself, parsed as JSON when it is JSON (else a string).
  json InlineBody(const EntryRecord& entry) const;
  // Presigned GET of a snapshot's root manifest.
  std::string ManifestUrl(const std::string& root) const;

 private:
  BlobStore* blobs_;
  Uploads* uploads_;
  Clock* clock_;
};

// {"seq", "segment", "num", "created", "external"} of an appended entry.
json AppendResultJson(const AppendResult& result);

}  // namespace sheetlog::api
