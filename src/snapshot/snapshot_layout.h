// The parameters that decide how a snapshot's cells are cut into tiles and chunks, and
// the manifest that indexes them (see FORMAT.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/snapshot_id.h"

namespace sheetlog {

inline constexpr int kSnapshotFormatVersion = 1;

struct SnapshotLayout {
  // Largest chunk object, in bytes (exceeded only by a chunk holding a single cell
  // that is larger by itself). Default: 1 MiB. At least 1024.
  int64_t chunk_bytes = 1 << 20;
  // Largest tile body, in bytes (exceeded only by a single larger cell): the unit a
  // range read decodes. Default: 64 KiB. 1..chunk_bytes.
  int64_t tile_bytes = 64 << 10;
  // Most rows one tile spans, counted from its first row. Default: 256. >= 1.
  int64_t stripe_rows = 256;

  // "v<format>-c<chunk_bytes>-t<tile_bytes>-s<stripe_rows>": part of every chunk key.
  std::string Name() const;
  // InvalidArgument if a parameter is out of its range.
  Status Validate() const;

  bool operator==(const SnapshotLayout&) const = default;
};

// One tile of a chunk: a run of cells in row-major order.
struct TileInfo {
  int64_t first_row = 0;
  int64_t last_row = 0;
  int64_t col_lo = 0;
  int64_t col_hi = 0;
  int64_t cells = 0;
  int64_t offset = 0;  // of the tile body within the chunk object
  int64_t length = 0;  // of the tile body

  // True if the tile's bounding box meets rows [row_lo, row_hi] x cols [col_lo, col_hi].
  bool Intersects(int64_t row_lo, int64_t row_hi, int64_t c_lo, int64_t c_hi) const {
    return first_row <= row_hi && last_row >= row_lo && col_lo <= c_hi && col_hi >= c_lo;
  }
  // An upper bound of the tile's last cell in row-major order.
  CellRef LastKeyBound() const { return {last_row, col_hi}; }

  bool operator==(const TileInfo&) const = default;
};

struct ChunkInfo {
  std::string key;
  int64_t bytes = 0;
  int64_t cells = 0;
  std::vector<TileInfo> tiles;

  bool operator==(const ChunkInfo&) const = default;
};

// The root object of a snapshot.
struct SnapshotManifest {
  SnapshotId id;
  SnapshotLayout layout;
  int64_t cells = 0;
  int64_t rows = 0;  // the largest row holding a cell (1-based); 0 if empty
  int64_t cols = 0;  // the largest column holding a cell (1-based); 0 if empty
  std::vector<ChunkInfo> chunks;

  // Deterministic JSON (sorted keys, no whitespace), see FORMAT.md.
  std::string ToJson() const;
  // InvalidArgument if `text` is not a manifest of a known version.
  static Result<SnapshotManifest> FromJson(std::string_view text);

  bool operator==(const SnapshotManifest&) const = default;
};

}  // namespace sheetlog
