// Where the server keeps its own objects in the blob store. Every object it writes
// for a sheet lives under "<area>/<sheet id>/" of one of four areas:
//   snapshots/  snapshot roots and chunks (src/snapshot/snapshot_id.h)
//   archives/   truncated segments written as JSON lines (EventLog::ArchiveKey)
//   uploads/    payloads of client uploads, PUT through presigned URLs (Uploads)
//   entries/    inline bodies too large to keep in the entry (Uploads::AppendLarge)
// Clients may read these objects, but not write, delete or tag them: the server's
// invariants (snapshots equal the log, payloads of acknowledged entries never change)
// depend on them. The one exception is the presigned PUT of an open upload.
#pragma once

#include <array>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sheetlog {

inline constexpr std::array<std::string_view, 4> kServerBlobAreas = {
    "snapshots/", "archives/", "uploads/", "entries/"};

// The server's area `key` lies in (e.g. "snapshots/"), or nullopt for a client key.
std::optional<std::string_view> ServerBlobArea(std::string_view key);

// The prefixes under which every object of `sheet_id` lives, one per area.
std::vector<std::string> SheetBlobPrefixes(std::string_view sheet_id);

// The keys among `keys` (blobs a truncation or deletion of `sheet_id` released) that
// may be deleted now: those under the sheet's own prefixes that no fork holds
// (`held`: EventLog::HeldBlobs, read after the release committed). A fork's released
// keys that lie under its source's prefixes are the source's: they stay.
std::vector<std::string> DeletableBlobs(const std::vector<std::string>& keys,
                                        std::string_view sheet_id,
                                        const std::set<std::string>& held);

}  // namespace sheetlog
