// Which snapshot a set of objects belongs to, and the deterministic object keys of
// seed 000's "Idempotence": every object of a snapshot is named by a version-5 (hash)
// UUID of the snapshot entry's identity, so a repeated or concurrent creation of the
// same snapshot writes the same keys (with the same bytes, see FORMAT.md) instead of
// leaving orphans behind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "emulator/status.h"

namespace sheetlog {

// The namespace UUID of every snapshot object name. Never change it: it is part of the
// on-disk format (changing it orphans every existing snapshot's objects).
inline constexpr std::string_view kSnapshotNamespaceUuid =
    "6f0c3c5e-2b7a-5d1e-9c43-5a1e7d2b9f10";

// The Snapshot entry a snapshot is built for.
struct SnapshotId {
  std::string sheet_id;
  int64_t segment = 0;
  int64_t entry = 0;  // entry num within the segment
  int64_t seq = 0;    // the entry's seq: the snapshot holds every entry before it

  bool operator==(const SnapshotId&) const = default;
};

// Key of the root manifest: "snapshots/<sheet>/<uuid5(sheet/segment/entry/root)>".
std::string SnapshotRootKey(const SnapshotId& id);

// Key of chunk `index` (0-based). `layout` names the layout parameters that decide
// chunk boundaries (see SnapshotLayout::Name): builders configured differently never
// overwrite each other's chunks with different bytes.
std::string SnapshotChunkKey(const SnapshotId& id, std::string_view layout,
                             int64_t index);

// The key prefix under which every object of `sheet_id`'s snapshots lives.
std::string SnapshotKeyPrefix(std::string_view sheet_id);

// InvalidArgument unless `id` can name objects (a non-empty sheet id that is a valid
// blob key part, segment and entry >= 0).
Status ValidateSnapshotId(const SnapshotId& id);

}  // namespace sheetlog
