#include "src/snapshot/snapshot_reader.h"

#include <algorithm>

namespace sheetlog {

Result<std::unique_ptr<SnapshotReader>> SnapshotReader::Open(
    BlobStore* store, const std::string& root_key) {
  Result<std::string> text = store->Get(root_key);
  if (!text.ok()) return text.status().Annotate("reading snapshot root " + root_key);
  Result<SnapshotManifest> manifest = SnapshotManifest::FromJson(*text);
  if (!manifest.ok()) return manifest.status().Annotate("snapshot root " + root_key);
  return std::unique_ptr<SnapshotReader>(
      new SnapshotReader(store, std::move(manifest).value()));
}

Result<std::string> SnapshotReader::FetchRange(const std::string& key, int64_t offset,
                                               int64_t length) const {
  Result<std::string> bytes = store_->GetRange(key, offset, length);
  if (!bytes.ok()) return bytes.status().Annotate("reading snapshot chunk " + key);
  chunks_fetched_.fetch_add(1);
  bytes_fetched_.fetch_add(static_cast<int64_t>(bytes->size()));
  if (static_cast<int64_t>(bytes->size()) != length) {
    return InvalidArgument("snapshot chunk " + key + " is shorter than its index says");
  }
  return bytes;
}

void AxisSpans::Add(int64_t lo, int64_t hi) {
  if (!spans_.empty() && lo <= spans_.back().second + 1) {
    spans_.back().second = std::max(spans_.back().second, hi);
    return;
  }
  spans_.emplace_back(lo, hi);
}

bool AxisSpans::Meets(int64_t lo, int64_t hi) const {
  // The first interval ending at or after lo is the only candidate.
  auto it = std::lower_bound(
      spans_.begin(), spans_.end(), lo,
      [](const std::pair<int64_t, int64_t>& span, int64_t x) { return span.second < x; });
  return it != spans_.end() && it->first <= hi;
}

Result<std::vector<PlacedCell>> SnapshotReader::ReadRange(const CellRange& range) const {
  return ReadRegion(AxisSpans::Of(range.first.row, range.last.row),
                    AxisSpans::Of(range.first.col, range.last.col));
}

Result<std::vector<PlacedCell>> SnapshotReader::ReadRegion(const AxisSpans& rows,
                                                           const AxisSpans& cols) const {
  std::vector<PlacedCell> cells;
  if (rows.empty() || cols.empty()) return cells;
  const int64_t last_row = rows.spans().back().second;
  auto meets = [&](const TileInfo& t) {
    return rows.Meets(t.first_row, t.last_row) && cols.Meets(t.col_lo, t.col_hi);
  };
  for (const ChunkInfo& chunk : manifest_.chunks) {
    // Chunks are in row-major order: once one starts below the region, all later do.
    if (!chunk.tiles.empty() && chunk.tiles.front().first_row > last_row) break;
    size_t first = chunk.tiles.size(), last = 0;
    for (size_t i = 0; i < chunk.tiles.size(); ++i) {
      if (meets(chunk.tiles[i])) {
        first = std::min(first, i);
        last = i;
      }
    }
    if (first == chunk.tiles.size()) continue;
    const int64_t begin = chunk.tiles[first].offset;
    const int64_t end = chunk.tiles[last].offset + chunk.tiles[last].length;
    ASSIGN_OR_RETURN(std::string bytes, FetchRange(chunk.key, begin, end - begin));
    for (size_t i = first; i <= last; ++i) {
      const TileInfo& tile = chunk.tiles[i];
      if (!meets(tile)) continue;
      std::string_view body =
          std::string_view(bytes).substr(tile.offset - begin, tile.length);
      RETURN_IF_ERROR(DecodeTile(body, tile, [&](PlacedCell&& cell) {
        if (rows.Contains(cell.ref.row) && cols.Contains(cell.ref.col)) {
          cells.push_back(std::move(cell));
        }
      }));
    }
  }
  return cells;
}

SnapshotReader::Cursor::Cursor(const SnapshotReader* reader, std::optional<CellRef> after)
    : reader_(reader), after_(after) {}

std::unique_ptr<SnapshotReader::Cursor> SnapshotReader::Scan(
    std::optional<CellRef> after) const {
  return std::unique_ptr<Cursor>(new Cursor(this, after));
}

Status SnapshotReader::Cursor::LoadChunk() {
  const ChunkInfo& chunk = reader_->manifest_.chunks[chunk_];
  Result<std::string> bytes = reader_->store_->Get(chunk.key);
  if (!bytes.ok()) return bytes.status().Annotate("reading snapshot chunk " + chunk.key);
  reader_->chunks_fetched_.fetch_add(1);
  reader_->bytes_fetched_.fetch_add(static_cast<int64_t>(bytes->size()));
  ASSIGN_OR_RETURN(ChunkHeader header, VerifyChunk(*bytes, chunk.key));
  if (header.tiles != chunk.tiles) {
    return InvalidArgument("snapshot chunk " + chunk.key +
                           " does not match the manifest's tile index");
  }
  bytes_ = std::move(bytes).value();
  loaded_ = true;
  tile_ = 0;
  return Status::OK();
}

Result<bool> SnapshotReader::Cursor::Next(PlacedCell* cell) {
  if (!failed_.ok()) return failed_;
  const std::vector<ChunkInfo>& chunks = reader_->manifest_.chunks;
  while (true) {
    if (decoder_) {
      Result<bool> more = decoder_->Next(cell);
      if (!more.ok()) {
        failed_ = more.status();
        return failed_;
      }
      if (*more) {
        if (after_ && !(*after_ < cell->ref)) continue;
        after_.reset();  // every later cell is past it
        return true;
      }
      decoder_.reset();
    }
    if (loaded_) {
      const std::vector<TileInfo>& tiles = chunks[chunk_].tiles;
      if (tile_ < tiles.size()) {
        const TileInfo& tile = tiles[tile_++];
        if (after_ && tile.LastKeyBound() <= *after_) continue;
        decoder_.emplace(std::string_view(bytes_).substr(tile.offset, tile.length), tile);
        continue;
      }
      loaded_ = false;
      bytes_.clear();
      bytes_.shrink_to_fit();
      ++chunk_;
    }
    if (chunk_ >= chunks.size()) return false;
    const ChunkInfo& chunk = chunks[chunk_];
    if (chunk.tiles.empty() || (after_ && chunk.tiles.back().LastKeyBound() <= *after_)) {
      ++chunk_;
      continue;
    }
    Status loaded = LoadChunk();
    if (!loaded.ok()) {
      failed_ = loaded;
      return failed_;
    }
  }
}

Status SnapshotReader::ForEach(
    const std::function<Status(const PlacedCell&)>& visit) const {
  std::unique_ptr<Cursor> cursor = Scan();
  PlacedCell cell;
  while (true) {
    ASSIGN_OR_RETURN(bool more, cursor->Next(&cell));
    if (!more) return Status::OK();
    RETURN_IF_ERROR(visit(cell));
  }
}

Status DeleteSnapshotObjects(BlobStore* store, const std::string& root_key) {
  Result<std::string> text = store->Get(root_key);
  if (text.status().code() == StatusCode::kNotFound) return Status::OK();
  RETURN_IF_ERROR(text.status());
  Result<SnapshotManifest> manifest = SnapshotManifest::FromJson(*text);
  if (manifest.ok()) {
    for (const ChunkInfo& chunk : manifest->chunks)
      RETURN_IF_ERROR(store->Delete(chunk.key));
  }
  return store->Delete(root_key);
}

}  // namespace sheetlog
