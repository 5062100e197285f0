// BlobPayloadSource: a BlobReader behind PayloadSource. Contract in
// blob_payload_source.h.
#include "src/snapshot/blob_payload_source.h"

namespace sheetlog {

BlobPayloadSource::BlobPayloadSource(std::unique_ptr<BlobReader> reader)
    : reader_(std::move(reader)) {}

Result<std::unique_ptr<BlobPayloadSource>> BlobPayloadSource::Open(
    BlobStore* blobs, const std::string& key) {
  ASSIGN_OR_RETURN(std::unique_ptr<BlobReader> reader, blobs->OpenReader(key));
  return std::unique_ptr<BlobPayloadSource>(new BlobPayloadSource(std::move(reader)));
}

int64_t BlobPayloadSource::size() const { return reader_->info().size; }

Result<std::string> BlobPayloadSource::ReadAt(int64_t offset, int64_t length) const {
  return reader_->ReadAt(offset, length);
}

}  // namespace sheetlog
