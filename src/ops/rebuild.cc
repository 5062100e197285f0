#include "src/ops/rebuild.h"

#include "src/log/tables.h"
#include "src/ops/replay.h"
#include "src/sheet/delta.h"
#include "src/snapshot/sheet_plan.h"
#include "src/snapshot/snapshot_id.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog {

namespace {

constexpr int kPage = 1000;

// Scratch rebuilds are named as a segment number no log reaches (the builder wants the
// same sheet as the previous snapshot), so their keys never meet a real snapshot's;
// they are deleted right after the comparison (a crash in between leaves them behind).
constexpr int64_t kScratchSegmentOffset = int64_t{1} << 40;

// Builds the snapshot of `id` from `previous_root` plus `entries_since` with the
// worker's builder; returns its root key.
Result<std::string> Build(BlobStore* blobs, const SnapshotId& id,
                          const std::optional<std::string>& previous_root,
                          const std::vector<EntryRecord>& entries_since,
                          const SnapshotBuilder::Options& options) {
  ASSIGN_OR_RETURN(SheetPlan plan, PlanSheet(blobs, previous_root, entries_since));
  std::unique_ptr<SnapshotBuilder> builder =
      NewSnapshotBuilder(blobs, id, std::move(plan), options);
  while (true) {
    ASSIGN_OR_RETURN(bool done, builder->WriteNextChunk());
    if (done) break;
  }
  return builder->Finish();
}

// Builds `id` and compares it with `expected`; deletes its objects unless `keep`.
Result<SnapshotComparison> BuildAndCompare(
    BlobStore* blobs, const SnapshotId& id,
    const std::optional<std::string>& previous_root,
    const std::vector<EntryRecord>& entries_since,
    const SnapshotBuilder::Options& options, const std::vector<PlacedCell>& expected,
    bool keep) {
  ASSIGN_OR_RETURN(std::string root,
                   Build(blobs, id, previous_root, entries_since, options));
  Result<SnapshotComparison> compared = [&]() -> Result<SnapshotComparison> {
    ASSIGN_OR_RETURN(std::unique_ptr<SnapshotReader> reader,
                     SnapshotReader::Open(blobs, root));
    return CompareSnapshot(*reader, expected);
  }();
  if (!keep) RETURN_IF_ERROR(DeleteSnapshotObjects(blobs, root));
  return compared;
}

}  // namespace

int64_t RebuildReport::Count(const std::string& outcome) const {
  int64_t n = 0;
  for (const RebuiltSnapshot& s : snapshots) n += s.outcome == outcome ? 1 : 0;
  return n;
}

Result<RebuildReport> RebuildSnapshots(const std::string& sheet_id, EventLog* log,
                                       BlobStore* blobs, const RebuildOptions& options) {
  ASSIGN_OR_RETURN(SheetInfo sheet, log->GetSheet(sheet_id, nullptr));
  RebuildReport report;
  report.sheet = sheet.id;
  LogReplay replay;
  replay.Reset(sheet.first_seq == 0);
  std::optional<std::string> previous_root;
  std::vector<EntryRecord> entries_since;  // after the previous completed snapshot

  auto rebuild = [&](const EntryRecord& e) -> RebuiltSnapshot {
    RebuiltSnapshot out{e.seq, e.segment, e.num, *e.snapshot_root, "", "", 0};
    if (!replay.known()) {
      // The base of a truncated log: adopt it if it can be read.
      Result<std::unique_ptr<SnapshotReader>> reader =
          SnapshotReader::Open(blobs, *e.snapshot_root);
      Result<SnapshotComparison> adopted =
          reader.ok() ? replay.CompareOrAdopt(**reader)
                      : Result<SnapshotComparison>(reader.status());
      if (!adopted.ok()) {
        out.outcome = "failed";
        out.detail = "the earliest retained snapshot cannot be read (" +
                     adopted.status().message() +
                     ") and the entries before it were truncated";
        return out;
      }
      out.outcome = "base";
      out.detail = "earliest retained snapshot: kept as the base";
      out.cells = adopted->snapshot_cells;
      previous_root = *e.snapshot_root;
      return out;
    }
    const std::vector<PlacedCell> expected = replay.sheet().Cells();
    Result<std::unique_ptr<SnapshotReader>> existing =
        SnapshotReader::Open(blobs, *e.snapshot_root);
    Result<SnapshotComparison> before =
        existing.ok() ? CompareSnapshot(**existing, expected)
                      : Result<SnapshotComparison>(existing.status());
    // Recreate it under fresh keys first: the existing objects are touched only once
    // a rebuild is known to equal the log.
    const SnapshotId real{sheet.id, e.segment, e.num, e.seq};
    SnapshotId scratch = real;
    scratch.segment += kScratchSegmentOffset;
    Result<SnapshotComparison> rebuilt =
        BuildAndCompare(blobs, scratch, previous_root, entries_since, options.builder,
                        expected, /*keep=*/false);
    if (!rebuilt.ok() || rebuilt->differing_cells > 0) {
      out.outcome = "failed";
      out.detail = !rebuilt.ok() ? "rebuild failed: " + rebuilt.status().message()
                                 : "the rebuilt snapshot differs from the log: " +
                                       rebuilt->Summary();
      // previous_root and the entries since it stay: the next snapshot is built from
      // the last one known to be right.
      return out;
    }
    out.cells = rebuilt->snapshot_cells;
    if (before.ok() && before->differing_cells == 0) {
      out.outcome = "same";
      previous_root = *e.snapshot_root;
      return out;
    }
    out.detail =
        before.ok()
            ? "the existing snapshot differed from the log: " + before->Summary()
            : "the existing snapshot could not be read: " + before.status().message();
    // Repair: rewrite the snapshot's own deterministic keys, as the worker would.
    Result<SnapshotComparison> repaired =
        BuildAndCompare(blobs, real, previous_root, entries_since, options.builder,
                        expected, /*keep=*/true);
    if (!repaired.ok() || repaired->differing_cells > 0 ||
        SnapshotRootKey(real) != *e.snapshot_root) {
      out.outcome = "failed";
      out.detail += !repaired.ok() ? "; the repair failed: " + repaired.status().message()
                    : SnapshotRootKey(real) != *e.snapshot_root
                        ? "; the entry's root " + *e.snapshot_root +
                              " is not the snapshot's deterministic key " +
                              SnapshotRootKey(real) + " (not repaired)"
                        : "; the repaired snapshot still differs: " + repaired->Summary();
      return out;
    }
    out.outcome = "repaired";
    previous_root = *e.snapshot_root;
    return out;
  };

  for (int64_t next = sheet.first_seq;;) {
    ASSIGN_OR_RETURN(ReadRange page,
                     log->Read(sheet.id, next, std::nullopt, kPage, nullptr));
    if (page.entries.empty()) break;
    next = page.entries.back().seq + 1;
    for (const EntryRecord& e : page.entries) {
      ++report.entries;
      if (e.type == kSnapshotType && e.snapshot_root) {
        report.snapshots.push_back(rebuild(e));
        if (report.snapshots.back().outcome != "failed") entries_since.clear();
        if (options.on_snapshot_done) {
          options.on_snapshot_done(static_cast<int64_t>(report.snapshots.size()));
        }
        continue;
      }
      Status applied = replay.Apply(e, blobs);
      if (!applied.ok()) {
        return Internal("seq " + std::to_string(e.seq) +
                        " cannot be replayed: " + applied.message());
      }
      if (replay.known()) entries_since.push_back(e);
    }
  }
  return report;
}

}  // namespace sheetlog
