// An object of the blob store read in ranges as a PayloadSource: how an Import's payload
// is parsed, checked and streamed into snapshots without holding the file in memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "emulator/blob/blob_store.h"
#include "emulator/status.h"
#include "src/sheet/import_file.h"

namespace sheetlog {

class BlobPayloadSource : public PayloadSource {
 public:
  // `blobs` must outlive the source. Errors: BlobStore::OpenReader's (NotFound for a
  // missing object).
  static Result<std::unique_ptr<BlobPayloadSource>> Open(BlobStore* blobs,
                                                         const std::string& key);
  int64_t size() const override;
  Result<std::string> ReadAt(int64_t offset, int64_t length) const override;

 private:
  explicit BlobPayloadSource(std::unique_ptr<BlobReader> reader);
  std::unique_ptr<BlobReader> reader_;
};

}  // namespace sheetlog
