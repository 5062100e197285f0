// Reads a snapshot (FORMAT.md): the manifest, cell ranges touching only the chunks
// whose tiles meet the range, and every cell in row-major order, chunk by chunk, in
// memory bounded by one chunk (for export and for building the next snapshot).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/status.h"
#include "src/sheet/a1.h"
#include "src/sheet/cell_cursor.h"
#include "src/sheet/sheet_edit.h"
#include "src/snapshot/chunk_codec.h"
#include "src/snapshot/snapshot_layout.h"

namespace sheetlog {

// A sorted list of disjoint inclusive intervals of one axis (rows or columns).
class AxisSpans {
 public:
  AxisSpans() = default;
  // One interval [lo, hi]. REQUIRES: lo <= hi.
  static AxisSpans Of(int64_t lo, int64_t hi) {
    AxisSpans s;
    s.Add(lo, hi);
    return s;
  }
  // Appends [lo, hi]. REQUIRES: lo <= hi; intervals are added in increasing order of
  // lo (one that overlaps or touches the previous one merges into it).
  void Add(int64_t lo, int64_t hi);
  // True if some interval meets [lo, hi].
  bool Meets(int64_t lo, int64_t hi) const;
  bool Contains(int64_t x) const { return Meets(x, x); }
  bool empty() const { return spans_.empty(); }
  const std::vector<std::pair<int64_t, int64_t>>& spans() const { return spans_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> spans_;
};

// Reads the cells of a region of a sheet (a snapshot's, or a stream's: cells_at.h).
class RegionReader {
 public:
  virtual ~RegionReader() = default;
  // The cells whose row lies in `rows` and whose column lies in `cols`, in row-major
  // order.
  virtual Result<std::vector<PlacedCell>> ReadRegion(const AxisSpans& rows,
                                                     const AxisSpans& cols) const = 0;
};

class SnapshotReader : public RegionReader {
 public:
  // Fetches and parses the root manifest at `root_key`. NotFound if there is no such
  // object; InvalidArgument if it is not a manifest of a known version; blob store
  // errors as they come. `store` must outlive the reader.
  static Result<std::unique_ptr<SnapshotReader>> Open(BlobStore* store,
                                                      const std::string& root_key);

  const SnapshotManifest& manifest() const { return manifest_; }

  // The cells inside `range`, in row-major order. Fetches, per chunk with at least one
  // tile whose bounding box meets the range, one ranged GET spanning those tiles;
  // no other chunk is touched. InvalidArgument if a chunk is malformed; NotFound if a
  // chunk object is missing. Thread-safe.
  Result<std::vector<PlacedCell>> ReadRange(const CellRange& range) const;

  // The cells whose row lies in `rows` and whose column lies in `cols` (a union of
  // rectangles, as a range maps back through inserts and deletes), in row-major order,
  // fetching as ReadRange does: one ranged GET per chunk with a tile meeting the region.
  Result<std::vector<PlacedCell>> ReadRegion(const AxisSpans& rows,
                                             const AxisSpans& cols) const override;

  // A forward cursor over the cells after a position, in row-major order. Holds one
  // chunk object at a time (fetched whole, checksum verified). Not thread-safe; the
  // reader must outlive it.
  class Cursor : public CellCursor {
   public:
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;

    // The next cell into *cell: true, or false at the end. Errors: a missing chunk
    // (NotFound) or a damaged one (InvalidArgument); every later call fails too.
    Result<bool> Next(PlacedCell* cell) override;

   private:
    friend class SnapshotReader;
    Cursor(const SnapshotReader* reader, std::optional<CellRef> after);
    Status LoadChunk();

    const SnapshotReader* reader_;
    std::optional<CellRef> after_;  // skip cells at or before this
    size_t chunk_ = 0;              // index of the chunk to load next / loaded
    size_t tile_ = 0;               // next tile of the loaded chunk
    bool loaded_ = false;
    std::string bytes_;  // the loaded chunk object
    std::optional<TileDecoder> decoder_;
    Status failed_;
  };

  // Cells with key > *after (all cells if nullopt). Tiles lying wholly at or before
  // `after` are skipped using the index, so starting in the middle fetches no chunk
  // before the one holding the position.
  // Fetches nothing until the first Next().
  std::unique_ptr<Cursor> Scan(std::optional<CellRef> after = std::nullopt) const;

  // Calls `visit` for every cell in row-major order. Stops at the first error (of the
  // reader or of `visit`) and returns it.
  Status ForEach(const std::function<Status(const PlacedCell&)>& visit) const;

  // Chunk objects fetched (GETs, whole or ranged) and body bytes fetched since Open.
  int64_t chunks_fetched() const { return chunks_fetched_.load(); }
  int64_t bytes_fetched() const { return bytes_fetched_.load(); }

 private:
  SnapshotReader(BlobStore* store, SnapshotManifest manifest)
      : store_(store), manifest_(std::move(manifest)) {}
  Result<std::string> FetchRange(const std::string& key, int64_t offset,
                                 int64_t length) const;

  BlobStore* store_;
  const SnapshotManifest manifest_;
  mutable std::atomic<int64_t> chunks_fetched_{0};
  mutable std::atomic<int64_t> bytes_fetched_{0};
};

// Deletes a snapshot's chunk objects and then its root manifest (so a crash midway
// leaves a root whose chunks may be missing, never chunks nothing points at, and a
// repeat finishes the job). OK if the root is already gone.
Status DeleteSnapshotObjects(BlobStore* store, const std::string& root_key);

}  // namespace sheetlog
