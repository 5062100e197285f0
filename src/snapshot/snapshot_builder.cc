#include "src/snapshot/snapshot_builder.h"

#include <algorithm>

namespace sheetlog {

using nlohmann::json;

namespace {

constexpr int kCheckpointVersion = 1;
// First read of a chunk when rebuilding the index on resume: enough for the header of
// any chunk with a few hundred tiles; a larger header costs a second read.
constexpr int64_t kHeaderProbeBytes = 8192;

json RefToJson(const std::optional<CellRef>& ref) {
  if (!ref) return nullptr;
  return json::array({ref->row, ref->col});
}

bool RefFromJson(const json& j, std::optional<CellRef>* ref) {
  if (j.is_null()) {
    ref->reset();
    return true;
  }
  if (!j.is_array() || j.size() != 2 || !j[0].is_number_integer() ||
      !j[1].is_number_integer()) {
    return false;
  }
  *ref = CellRef{j[0].get<int64_t>(), j[1].get<int64_t>()};
  return true;
}

}  // namespace

SnapshotBuilder::SnapshotBuilder(BlobStore* store, SnapshotId id,
                                 std::optional<std::string> previous_root,
                                 SheetDelta delta, Options options)
    : SnapshotBuilder(store, std::move(id), std::move(previous_root), nullptr, "",
                      std::move(delta), std::move(options)) {}

SnapshotBuilder::SnapshotBuilder(BlobStore* store, SnapshotId id, CellSource base,
                                 std::string base_name, SheetDelta delta, Options options)
    : SnapshotBuilder(store, std::move(id), std::nullopt, std::move(base),
                      std::move(base_name), std::move(delta), std::move(options)) {}

SnapshotBuilder::SnapshotBuilder(BlobStore* store, SnapshotId id,
                                 std::optional<std::string> previous_root,
                                 CellSource base, std::string base_name, SheetDelta delta,
                                 Options options)
    : store_(store),
      id_(std::move(id)),
      previous_root_(std::move(previous_root)),
      base_(std::move(base)),
      base_name_(std::move(base_name)),
      delta_(std::move(delta)),
      options_(std::move(options)),
      encoder_(options_.layout) {
  manifest_.id = id_;
  manifest_.layout = options_.layout;
  overlay_row_ = delta_.overlay().rows().end();
}

json SnapshotBuilder::InputJson() const {
  if (base_) return json{{"base", base_name_}};
  return previous_root_ ? json(*previous_root_) : json(nullptr);
}

Status SnapshotBuilder::Start() {
  RETURN_IF_ERROR(ValidateSnapshotId(id_));
  RETURN_IF_ERROR(options_.layout.Validate());
  started_ = true;
  if (done_) return Status::OK();
  RETURN_IF_ERROR(OpenPrevious());
  SeekOverlay();
  return Status::OK();
}

Status SnapshotBuilder::OpenPrevious() {
  // A replacing import drops every older cell: the previous snapshot is not needed.
  if ((!previous_root_ && !base_) || delta_.replaced()) {
    input_done_ = true;
    return Status::OK();
  }
  if (base_) {
    ASSIGN_OR_RETURN(cursor_, base_(input_after_));
    return Status::OK();
  }
  ASSIGN_OR_RETURN(previous_, SnapshotReader::Open(store_, *previous_root_));
  const SnapshotId& prev = previous_->manifest().id;
  if (prev.sheet_id != id_.sheet_id || prev.seq >= id_.seq) {
    return InvalidArgument("previous snapshot " + *previous_root_ + " (sheet " +
                           prev.sheet_id + ", seq " + std::to_string(prev.seq) +
                           ") cannot precede snapshot at seq " + std::to_string(id_.seq) +
                           " of sheet " + id_.sheet_id);
  }
  cursor_ = previous_->Scan(input_after_);
  return Status::OK();
}

void SnapshotBuilder::SeekOverlay() {
  const auto& rows = delta_.overlay().rows();
  overlay_index_ = 0;
  if (!overlay_after_) {
    overlay_row_ = rows.begin();
    return;
  }
  overlay_row_ = rows.lower_bound(overlay_after_->row);
  if (overlay_row_ == rows.end() || overlay_row_->first != overlay_after_->row) return;
  const Overlay::Row& row = overlay_row_->second;
  auto it = std::upper_bound(row.begin(), row.end(), overlay_after_->col,
                             [](int64_t col, const std::pair<int64_t, Cell>& entry) {
                               return col < entry.first;
                             });
  overlay_index_ = static_cast<size_t>(it - row.begin());
  if (overlay_index_ == row.size()) {
    ++overlay_row_;
    overlay_index_ = 0;
  }
}

void SnapshotBuilder::AdvanceOverlay() {
  overlay_after_ =
      CellRef{overlay_row_->first, overlay_row_->second[overlay_index_].first};
  if (++overlay_index_ == overlay_row_->second.size()) {
    ++overlay_row_;
    overlay_index_ = 0;
  }
}

Status SnapshotBuilder::FillInput() {
  const RowColumnTransform& transform = delta_.transform();
  while (!input_head_ && !input_done_) {
    ASSIGN_OR_RETURN(bool more, cursor_->Next(&scratch_));
    if (!more) {
      input_done_ = true;
      break;
    }
    std::optional<CellRef> mapped = transform.Forward(scratch_.ref);
    if (!mapped) {
      // Its row or column was deleted: consumed without output.
      input_after_ = scratch_.ref;
      continue;
    }
    input_head_old_ = scratch_.ref;
    input_head_ = PlacedCell{*mapped, std::move(scratch_.cell)};
  }
  return Status::OK();
}

Result<const SnapshotBuilder::Candidate*> SnapshotBuilder::Peek() {
  if (candidate_) return &*candidate_;
  const auto overlay_end = delta_.overlay().rows().end();
  while (true) {
    RETURN_IF_ERROR(FillInput());
    const bool has_overlay = overlay_row_ != overlay_end;
    if (!input_head_ && !has_overlay) return nullptr;
    if (has_overlay) {
      const auto& [col, cell] = overlay_row_->second[overlay_index_];
      const CellRef ref{overlay_row_->first, col};
      if (!input_head_ || ref <= input_head_->ref) {
        const bool replaces_input = input_head_ && ref == input_head_->ref;
        if (cell.empty()) {
          // A clear: consumed with the input cell it removes, and nothing is written.
          AdvanceOverlay();
          if (replaces_input) {
            input_after_ = input_head_old_;
            input_head_.reset();
          }
          continue;
        }
        Candidate c;
        c.cell = PlacedCell{ref, cell};
        c.takes_overlay = true;
        if (replaces_input) {
          c.input_old = input_head_old_;
          input_head_.reset();
        }
        candidate_ = std::move(c);
        return &*candidate_;
      }
    }
    Candidate c;
    c.cell = std::move(*input_head_);
    c.input_old = input_head_old_;
    input_head_.reset();
    candidate_ = std::move(c);
    return &*candidate_;
  }
}

void SnapshotBuilder::Take() {
  if (candidate_->input_old) input_after_ = candidate_->input_old;
  if (candidate_->takes_overlay) AdvanceOverlay();
  candidate_.reset();
}

Result<bool> SnapshotBuilder::WriteNextChunk() {
  if (!started_) RETURN_IF_ERROR(Start());
  if (done_) return true;
  bool end = false;
  while (true) {
    ASSIGN_OR_RETURN(const Candidate* next, Peek());
    if (next == nullptr) {
      end = true;
      break;
    }
    if (!encoder_.TryAdd(next->cell)) break;
    Take();
  }
  if (!encoder_.empty()) {
    ChunkInfo chunk;
    chunk.key = SnapshotChunkKey(id_, options_.layout.Name(),
                                 static_cast<int64_t>(manifest_.chunks.size()));
    chunk.cells = encoder_.cells();
    std::string bytes = encoder_.Finish(&chunk.tiles);
    chunk.bytes = static_cast<int64_t>(bytes.size());
    Result<BlobInfo> put = store_->Put(chunk.key, bytes);
    if (!put.ok()) return put.status().Annotate("writing snapshot chunk " + chunk.key);
    manifest_.chunks.push_back(std::move(chunk));
  }
  done_ = end;
  return done_;
}

json SnapshotBuilder::Checkpoint() const {
  return json{{"v", kCheckpointVersion},
              {"snapshot",
               {{"sheet", id_.sheet_id},
                {"segment", id_.segment},
                {"entry", id_.entry},
                {"seq", id_.seq}}},
              {"layout", options_.layout.Name()},
              {"previous", InputJson()},
              {"chunks", manifest_.chunks.size()},
              {"input_after", RefToJson(input_after_)},
              {"overlay_after", RefToJson(overlay_after_)},
              {"done", done_}};
}

Status SnapshotBuilder::Resume(const json& checkpoint) {
  if (started_) return FailedPrecondition("Resume must come before WriteNextChunk");
  auto bad = [](const std::string& why) {
    return InvalidArgument("snapshot checkpoint: " + why);
  };
  if (!checkpoint.is_object()) return bad("not an object");
  if (checkpoint.value("v", json()) != kCheckpointVersion) return bad("unknown version");
  const json expected_id{{"sheet", id_.sheet_id},
                         {"segment", id_.segment},
                         {"entry", id_.entry},
                         {"seq", id_.seq}};
  if (checkpoint.value("snapshot", json()) != expected_id) {
    return bad("belongs to another snapshot");
  }
  if (checkpoint.value("layout", json()) != options_.layout.Name()) {
    return bad("was written with another layout");
  }
  if (checkpoint.value("previous", json()) != InputJson()) {
    return bad("starts from another previous snapshot");
  }
  const json chunks = checkpoint.value("chunks", json());
  const json done = checkpoint.value("done", json());
  if (!chunks.is_number_unsigned() || !done.is_boolean() ||
      !RefFromJson(checkpoint.value("input_after", json()), &input_after_) ||
      !RefFromJson(checkpoint.value("overlay_after", json()), &overlay_after_)) {
    return bad("malformed position");
  }
  const int64_t count = chunks.get<int64_t>();
  if (count > (int64_t{1} << 32)) return bad("chunk count out of range");
  done_ = done.get<bool>();
  manifest_.chunks.clear();
  for (int64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(ChunkInfo chunk, ReadChunkInfo(i));
    manifest_.chunks.push_back(std::move(chunk));
  }
  return Start();
}

Result<ChunkInfo> SnapshotBuilder::ReadChunkInfo(int64_t index) const {
  ChunkInfo chunk;
  chunk.key = SnapshotChunkKey(id_, options_.layout.Name(), index);
  BlobInfo info;
  Result<std::string> prefix = store_->GetRange(chunk.key, 0, kHeaderProbeBytes, &info);
  if (!prefix.ok()) {
    return prefix.status().Annotate("reading back snapshot chunk " + chunk.key);
  }
  int64_t needed = 0;
  Result<ChunkHeader> header = DecodeChunkHeader(*prefix, &needed);
  if (header.status().code() == StatusCode::kOutOfRange && needed <= info.size &&
      needed > static_cast<int64_t>(prefix->size())) {
    prefix = store_->GetRange(chunk.key, 0, needed, &info);
    if (!prefix.ok()) {
      return prefix.status().Annotate("reading back snapshot chunk " + chunk.key);
    }
    header = DecodeChunkHeader(*prefix, &needed);
  }
  if (!header.ok()) return header.status().Annotate("snapshot chunk " + chunk.key);
  chunk.bytes = info.size;
  chunk.cells = header->cells;
  chunk.tiles = std::move(header->tiles);
  return chunk;
}

Result<std::string> SnapshotBuilder::Finish() {
  if (!done_) return FailedPrecondition("snapshot chunks are not all written yet");
  manifest_.cells = 0;
  manifest_.rows = 0;
  manifest_.cols = 0;
  for (const ChunkInfo& chunk : manifest_.chunks) {
    for (const TileInfo& tile : chunk.tiles) {
      manifest_.cells += tile.cells;
      manifest_.rows = std::max(manifest_.rows, tile.last_row);
      manifest_.cols = std::max(manifest_.cols, tile.col_hi);
    }
  }
  const std::string key = SnapshotRootKey(id_);
  Result<BlobInfo> put = store_->Put(key, manifest_.ToJson());
  if (!put.ok()) return put.status().Annotate("writing snapshot root " + key);
  return key;
}

}  // namespace sheetlog
