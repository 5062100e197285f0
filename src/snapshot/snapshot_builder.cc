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
      delta_(std::make_shared<const SheetDelta>(std::move(delta))),
      options_(std::move(options)),
      encoder_(options_.layout) {
  manifest_.id = id_;
  manifest_.layout = options_.layout;
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
  ASSIGN_OR_RETURN(std::unique_ptr<CellCursor> input, OpenInput());
  cursor_ = std::make_unique<DeltaCursor>(std::move(input), delta_, taken_);
  return Status::OK();
}

Result<std::unique_ptr<CellCursor>> SnapshotBuilder::OpenInput() {
  // A replacing import drops every older cell: the previous snapshot is not needed.
  if ((!previous_root_ && !base_) || delta_->replaced()) return EmptyCursor();
  if (base_) return base_(taken_.input_after);
  ASSIGN_OR_RETURN(previous_, SnapshotReader::Open(store_, *previous_root_));
  const SnapshotId& prev = previous_->manifest().id;
  // A fork's first snapshots build on the snapshot it shares with its source (named by
  // the fork's own log: EventLog::Fork), so the previous snapshot may be another
  // sheet's; it must still be stored where its sheet's snapshots are, and not follow
  // this one. It may hold the same entries (seq equal): an exact truncation at the head
  // leaves a base snapshot of every entry before its seq, and the next Snapshot entry
  // takes that seq.
  const bool own = prev.sheet_id == id_.sheet_id;
  const bool shared =
      !own && previous_root_->rfind(SnapshotKeyPrefix(prev.sheet_id), 0) == 0;
  if ((!own && !shared) || prev.seq > id_.seq) {
    return InvalidArgument("previous snapshot " + *previous_root_ + " (sheet " +
                           prev.sheet_id + ", seq " + std::to_string(prev.seq) +
                           ") cannot precede snapshot at seq " + std::to_string(id_.seq) +
                           " of sheet " + id_.sheet_id);
  }
  return std::unique_ptr<CellCursor>(previous_->Scan(taken_.input_after));
}

Result<bool> SnapshotBuilder::WriteNextChunk() {
  if (!started_) RETURN_IF_ERROR(Start());
  if (done_) return true;
  bool end = false;
  while (true) {
    if (!pending_) {
      PlacedCell cell;
      ASSIGN_OR_RETURN(bool more, cursor_->Next(&cell));
      if (!more) {
        end = true;
        break;
      }
      pending_ = std::move(cell);
      pending_position_ = cursor_->position();
    }
    if (!encoder_.TryAdd(*pending_)) break;  // it starts the next chunk
    pending_.reset();
    taken_ = pending_position_;
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
              {"input_after", RefToJson(taken_.input_after)},
              {"overlay_after", RefToJson(taken_.overlay_after)},
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
      !RefFromJson(checkpoint.value("input_after", json()), &taken_.input_after) ||
      !RefFromJson(checkpoint.value("overlay_after", json()), &taken_.overlay_after)) {
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
