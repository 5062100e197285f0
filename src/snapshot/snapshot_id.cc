#include "src/snapshot/snapshot_id.h"

#include "emulator/blob/blob_key.h"
#include "emulator/env/uuid.h"

namespace sheetlog {

namespace {

std::string EntryName(const SnapshotId& id) {
  return id.sheet_id + "/" + std::to_string(id.segment) + "/" + std::to_string(id.entry);
}

}  // namespace

std::string SnapshotKeyPrefix(std::string_view sheet_id) {
  return "snapshots/" + std::string(sheet_id) + "/";
}

std::string SnapshotRootKey(const SnapshotId& id) {
  return SnapshotKeyPrefix(id.sheet_id) +
         NameUuid(kSnapshotNamespaceUuid, EntryName(id) + "/root");
}

std::string SnapshotChunkKey(const SnapshotId& id, std::string_view layout,
                             int64_t index) {
  return SnapshotKeyPrefix(id.sheet_id) +
         NameUuid(kSnapshotNamespaceUuid, EntryName(id) + "/" + std::string(layout) +
                                              "/" + std::to_string(index));
}

Status ValidateSnapshotId(const SnapshotId& id) {
  if (id.sheet_id.empty()) return InvalidArgument("snapshot id has no sheet");
  Status part = ValidateBlobKeyPart(id.sheet_id);
  if (!part.ok()) return part.Annotate("snapshot sheet id");
  if (id.segment < 0 || id.entry < 0 || id.seq < 0) {
    return InvalidArgument("snapshot segment, entry and seq must be >= 0");
  }
  return Status::OK();
}

}  // namespace sheetlog
