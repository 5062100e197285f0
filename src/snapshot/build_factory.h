// The SnapshotWorker's builds over src/snapshot's streaming builder, and the step they
// share with GET .../cells: log entries -> sheet edits (external bodies read from the
// blob store, Import payloads read and parsed into cells).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "src/log/event_log.h"
#include "src/sheet/import_file.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/snapshot_builder.h"
#include "src/snapshot/worker.h"

namespace sheetlog {

// A blob read in ranges: how Import payloads are read without holding the file.
class BlobPayloadSource : public PayloadSource {
 public:
  static Result<std::unique_ptr<BlobPayloadSource>> Open(BlobStore* blobs,
                                                         const std::string& key);
  int64_t size() const override { return reader_->info().size; }
  Result<std::string> ReadAt(int64_t offset, int64_t length) const override {
    return reader_->ReadAt(offset, length);
  }

 private:
  explicit BlobPayloadSource(std::unique_ptr<BlobReader> reader)
      : reader_(std::move(reader)) {}
  std::unique_ptr<BlobReader> reader_;
};

// The edits of `entries` in order. Snapshot/EndSegment and unknown types become
// SkippedEdit. An Import entry with an external payload comes back resolved (its
// `cells` read from the blob). An entry whose body or payload does not parse is an
// Internal error: both were validated before the entry was written, so it means the
// log or the blob store was damaged.
Result<std::vector<SheetEdit>> EditsOfEntries(const std::vector<EntryRecord>& entries,
                                              BlobStore* blobs);

// Builds write to `blobs` with `options` (tests shrink the chunk size to make a small
// sheet span many chunks and invocations).
SnapshotBuildFactory MakeSnapshotBuildFactory(BlobStore* blobs,
                                              SnapshotBuilder::Options options = {});

}  // namespace sheetlog
