#include "src/ops/replay.h"

#include "src/snapshot/sheet_plan.h"

namespace sheetlog {

namespace {

std::string Describe(const Cell* cell) {
  return cell == nullptr ? std::string("empty") : cell->DebugString();
}

}  // namespace

std::string SnapshotComparison::Summary() const {
  std::string out = std::to_string(differing_cells) + " cell" +
                    (differing_cells == 1 ? " differs" : "s differ") + " (snapshot " +
                    std::to_string(snapshot_cells) + " cells, replay " +
                    std::to_string(replay_cells) + ")";
  if (first_difference) {
    out += "; first at " + FormatCellRef(*first_difference) + ": snapshot " +
           first_in_snapshot + ", replay " + first_in_replay;
  }
  return out;
}

void LogReplay::Reset(bool from_empty) {
  known_ = from_empty;
  sheet_ = Sheet();
}

Status LogReplay::Apply(const EntryRecord& entry, BlobStore* blobs) {
  if (!known_) return Status::OK();
  Result<std::vector<SheetEdit>> edits = EditsOfEntries({entry}, blobs);
  if (!edits.ok()) {
    Reset(false);
    return edits.status();
  }
  for (const SheetEdit& edit : *edits) sheet_.Apply(edit);
  return Status::OK();
}

Result<SnapshotComparison> LogReplay::CompareOrAdopt(const SnapshotReader& snapshot) {
  if (known_) return CompareSnapshot(snapshot, sheet_.Cells());
  std::vector<PlacedCell> cells;
  RETURN_IF_ERROR(snapshot.ForEach([&](const PlacedCell& cell) {
    cells.push_back(cell);
    return Status::OK();
  }));
  SnapshotComparison adopted;
  adopted.snapshot_cells = adopted.replay_cells = static_cast<int64_t>(cells.size());
  sheet_ = Sheet::FromCells(std::move(cells));
  known_ = true;
  return adopted;
}

Result<SnapshotComparison> CompareSnapshot(const SnapshotReader& snapshot,
                                           const std::vector<PlacedCell>& expected) {
  SnapshotComparison out;
  out.compared = true;
  out.replay_cells = static_cast<int64_t>(expected.size());
  auto differ = [&](const CellRef& ref, const Cell* in_snapshot, const Cell* in_replay) {
    if (out.differing_cells++ == 0) {
      out.first_difference = ref;
      out.first_in_snapshot = Describe(in_snapshot);
      out.first_in_replay = Describe(in_replay);
    }
  };
  size_t next = 0;
  RETURN_IF_ERROR(snapshot.ForEach([&](const PlacedCell& cell) {
    ++out.snapshot_cells;
    for (; next < expected.size() && expected[next].ref < cell.ref; ++next) {
      differ(expected[next].ref, nullptr, &expected[next].cell);
    }
    if (next < expected.size() && expected[next].ref == cell.ref) {
      if (!(expected[next].cell == cell.cell)) {
        differ(cell.ref, &cell.cell, &expected[next].cell);
      }
      ++next;
    } else {
      differ(cell.ref, &cell.cell, nullptr);
    }
    return Status::OK();
  }));
  for (; next < expected.size(); ++next) {
    differ(expected[next].ref, nullptr, &expected[next].cell);
  }
  return out;
}

}  // namespace sheetlog
