// Encoding and decoding of snapshot chunk objects (FORMAT.md, "Chunk object").
// Internal to src/snapshot.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/snapshot_layout.h"

namespace sheetlog {

// Builds one chunk object from cells given in strictly increasing row-major order,
// cutting them into tiles by the layout's rules. Deterministic: the same cells with
// the same layout always give the same bytes.
class ChunkEncoder {
 public:
  explicit ChunkEncoder(const SnapshotLayout& layout) : layout_(layout) {}

  // Appends `cell` unless that would make the chunk larger than layout.chunk_bytes
  // while it already holds a cell; then returns false and leaves the chunk unchanged
  // (the caller writes this chunk and starts the next one with `cell`).
  // REQUIRES: cell.ref is greater than the previous cell's key; row, col >= 1; the
  // cell is not empty (Cell::empty()).
  bool TryAdd(const PlacedCell& cell);

  bool empty() const { return cells_ == 0; }
  int64_t cells() const { return cells_; }
  // The exact size Finish() would produce now.
  int64_t EncodedSize() const;

  // The chunk object, and its tiles (offsets within the object) in *tiles.
  // Leaves the encoder empty, ready for the next chunk.
  std::string Finish(std::vector<TileInfo>* tiles);

 private:
  struct OpenTile {
    TileInfo info;
    std::string body;
    CellRef last;
  };
  static size_t EntrySize(const TileInfo& t, int64_t body_len);
  static void PutEntry(std::string* out, const TileInfo& t, int64_t body_len);
  static void EncodeCell(const PlacedCell& cell, const OpenTile* tile, std::string* out);
  int64_t SizeWith(size_t closed_header, size_t open_entry, int64_t bodies,
                   int64_t tiles) const;

  const SnapshotLayout layout_;
  std::vector<TileInfo> closed_;  // offsets are relative to the first body byte
  std::string closed_bodies_;
  size_t closed_header_bytes_ = 0;
  bool has_open_ = false;
  OpenTile open_;
  int64_t cells_ = 0;
};

// The tile directory of a chunk, from a prefix of its bytes.
struct ChunkHeader {
  std::vector<TileInfo> tiles;  // offsets within the object
  int64_t header_end = 0;       // offset of the first tile body
  int64_t cells = 0;
};

// Parses the header. If `prefix` is too short, returns OutOfRange and sets
// *needed to the number of leading bytes that would suffice. InvalidArgument if the
// bytes are not a chunk of a known version.
Result<ChunkHeader> DecodeChunkHeader(std::string_view prefix, int64_t* needed);

// Checks the trailing CRC of a whole chunk object and returns its header.
// InvalidArgument (naming `key`) on a mismatch or malformed bytes.
Result<ChunkHeader> VerifyChunk(std::string_view object, std::string_view key);

// Decodes one tile body cell by cell, so that only the encoded bytes are in memory.
// `body` must outlive the decoder.
class TileDecoder {
 public:
  TileDecoder(std::string_view body, const TileInfo& tile) : in_(body), tile_(tile) {}
  // The next cell into *cell: true, or false after the last one. InvalidArgument if
  // the body is malformed (every later call fails too).
  Result<bool> Next(PlacedCell* cell);

 private:
  std::string_view in_;
  TileInfo tile_;
  int64_t decoded_ = 0;
  CellRef last_;
  Status failed_;
};

// Decodes one whole tile body into `sink`, in order. InvalidArgument if malformed.
Status DecodeTile(std::string_view body, const TileInfo& tile,
                  const std::function<void(PlacedCell&&)>& sink);

}  // namespace sheetlog
