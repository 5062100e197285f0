// Builds snapshot N from snapshot N-1 (or from nothing) plus the edits between them,
// chunk by chunk, resumably (seed 000 "Checkpoints"), in memory bounded by one input
// chunk, one output chunk and the edits — never by the size of the sheet.
//
// The edits come summarised as src/sheet's SheetDelta: a monotone row/column transform,
// an overlay of the cells written since (in final positions, clears included) and the
// replaced flag of a replacing import. The builder walks the previous snapshot in
// row-major order, maps each cell through the transform, merges the overlay (the
// overlay wins; a clear removes) and cuts the output — row-major too, because both axis
// maps preserve order — into tiles and chunks (FORMAT.md).
//
// Usage, as the snapshot worker drives it:
//   SnapshotBuilder builder(store, id, previous_root, std::move(delta), options);
//   RETURN_IF_ERROR(builder.Resume(saved_checkpoint));   // if there is one
//   while (true) {
//     ASSIGN_OR_RETURN(bool done, builder.WriteNextChunk());
//     save(builder.Checkpoint());                         // after every chunk
//     if (done) break;
//   }
//   ASSIGN_OR_RETURN(std::string root_key, builder.Finish());
//
// Determinism (seed 000 "Idempotence"): the objects written are a function of the
// previous snapshot's cells, the delta, the snapshot id and the layout. A repeated run,
// a run resumed from any checkpoint in a new process, and a concurrent duplicate all
// write the same keys with the same bytes.
//
// Not thread-safe: one owner drives it.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/status.h"
#include "src/sheet/delta.h"
#include "src/snapshot/chunk_codec.h"
#include "src/snapshot/snapshot_id.h"
#include "src/snapshot/snapshot_layout.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog {

class SnapshotBuilder {
 public:
  struct Options {
    // How cells are cut into tiles and chunks. Default: 1 MiB chunks, 64 KiB tiles,
    // 256-row stripes.
    SnapshotLayout layout;
  };

  // `store` must outlive the builder. `previous_root`: the root key of the previous
  // completed snapshot (nullopt: build from an empty sheet). Nothing is read or
  // written until the first call.
  SnapshotBuilder(BlobStore* store, SnapshotId id,
                  std::optional<std::string> previous_root, SheetDelta delta,
                  Options options);
  // The same over any sorted cells instead of a previous snapshot (an imported file,
  // or a combination: see sheet_plan.h). `base_name` stands for them in
  // checkpoints: a checkpoint resumes only a builder with the same name, so it must
  // name exactly these cells.
  SnapshotBuilder(BlobStore* store, SnapshotId id, CellSource base, std::string base_name,
                  SheetDelta delta, Options options);
  SnapshotBuilder(const SnapshotBuilder&) = delete;
  SnapshotBuilder& operator=(const SnapshotBuilder&) = delete;

  // Continues from a Checkpoint() of a builder with the same store, id, previous root,
  // delta and layout (typically in another process). Reads back the headers of the
  // chunks already written to rebuild the tile index. REQUIRES: called before any
  // WriteNextChunk. Errors: InvalidArgument if the checkpoint is malformed or belongs
  // to a different snapshot, previous root or layout (starting over from scratch is
  // then always safe: it rewrites the same objects); NotFound if a chunk the
  // checkpoint counts is missing; blob store errors.
  Status Resume(const nlohmann::json& checkpoint);

  // Writes the next chunk object (at most layout.chunk_bytes, unless one cell alone is
  // larger). Returns true once every chunk is written (possibly by this call; an empty
  // sheet has no chunks at all), false if more remain. After an error the builder must
  // be discarded; a new one resumes from the last checkpoint.
  Result<bool> WriteNextChunk();

  // Small JSON (a few hundred bytes, independent of the sheet's size) from which
  // Resume continues exactly where this builder stands.
  nlohmann::json Checkpoint() const;

  // Writes the root manifest and returns its key. Idempotent. FailedPrecondition
  // unless WriteNextChunk has returned true.
  Result<std::string> Finish();

  // Manifest of what has been written so far (complete after Finish).
  const SnapshotManifest& manifest() const { return manifest_; }
  int64_t chunks_written() const { return static_cast<int64_t>(manifest_.chunks.size()); }
  // The previous snapshot's reader (after the first call; null when built over a
  // CellSource), for its fetch counters.
  const SnapshotReader* previous() const { return previous_.get(); }

 private:
  SnapshotBuilder(BlobStore* store, SnapshotId id,
                  std::optional<std::string> previous_root, CellSource base,
                  std::string base_name, SheetDelta delta, Options options);
  Status Start();
  // The input cells after taken_.input_after: the previous snapshot's, the base's, or
  // none.
  Result<std::unique_ptr<CellCursor>> OpenInput();
  Result<ChunkInfo> ReadChunkInfo(int64_t index) const;
  // What checkpoints record as the input: the previous root, the base's name or null.
  nlohmann::json InputJson() const;

  BlobStore* const store_;
  const SnapshotId id_;
  const std::optional<std::string> previous_root_;
  const CellSource base_;  // null: the previous snapshot is the input
  const std::string base_name_;
  const std::shared_ptr<const SheetDelta> delta_;
  const Options options_;

  bool started_ = false;
  bool done_ = false;
  SnapshotManifest manifest_;  // chunks written so far
  ChunkEncoder encoder_;

  // The output stream: the input through the delta (the previous snapshot's reader is
  // kept for its counters).
  std::unique_ptr<SnapshotReader> previous_;
  std::unique_ptr<DeltaCursor> cursor_;
  // What the chunks written so far consumed: where a checkpoint resumes.
  DeltaCursor::Position taken_;
  // A cell read that did not fit the last chunk, and the position after it.
  std::optional<PlacedCell> pending_;
  DeltaCursor::Position pending_position_;
};

}  // namespace sheetlog
