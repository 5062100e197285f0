// EditsOfEntries, PlanSheet and NewSnapshotBuilder. Contracts in sheet_plan.h.
#include "src/snapshot/sheet_plan.h"

#include <functional>
#include <variant>

#include "emulator/json_text.h"
#include "src/sheet/delta.h"
#include "src/snapshot/blob_payload_source.h"
#include "src/snapshot/snapshot_reader.h"

namespace sheetlog {

namespace {

// A snapshot's cells in order, the cursor owning its reader.
class SnapshotScan : public CellCursor {
 public:
  explicit SnapshotScan(std::unique_ptr<SnapshotReader> reader)
      : reader_(std::move(reader)), cursor_(reader_->Scan()) {}
  Result<bool> Next(PlacedCell* cell) override { return cursor_->Next(cell); }

 private:
  std::unique_ptr<SnapshotReader> reader_;
  std::unique_ptr<SnapshotReader::Cursor> cursor_;
};

using OpenAll = std::function<Result<std::unique_ptr<CellCursor>>()>;

}  // namespace

namespace {

// The edit of one entry (EditsOfEntries' contract).
Result<SheetEdit> EditOfEntry(const EntryRecord& e, BlobStore* blobs,
                              bool resolve_imports) {
  nlohmann::json body = nullptr;
  if (IsBuiltinType(e.type)) {
    if (e.body) {
      body = ParseJsonOrDiscarded(*e.body);
    } else if (e.external && e.type != "Import") {
      ASSIGN_OR_RETURN(std::string text, blobs->Get(*e.external));
      body = ParseJsonOrDiscarded(text);
    }
    if (body.is_discarded()) {
      return Internal("entry " + std::to_string(e.seq) + " has a body that is not JSON");
    }
  }
  Result<SheetEdit> edit = ParseEdit(e.type, e.version, body);
  if (!edit.ok()) {
    return Internal("entry " + std::to_string(e.seq) +
                    " no longer parses: " + edit.status().message());
  }
  if (auto* import = std::get_if<ImportEdit>(&*edit);
      import && e.external && resolve_imports) {
    ASSIGN_OR_RETURN(std::unique_ptr<BlobPayloadSource> payload,
                     BlobPayloadSource::Open(blobs, *e.external));
    Result<ImportedCells> cells = ReadImportedCells(*import, *payload);
    if (!cells.ok()) {
      return Internal("the import payload of entry " + std::to_string(e.seq) +
                      " no longer parses: " + cells.status().message());
    }
    import->cells = std::make_shared<const ImportedCells>(std::move(cells).value());
  }
  return edit;
}

}  // namespace

Result<std::vector<SheetEdit>> EditsOfEntries(const std::vector<EntryRecord>& entries,
                                              BlobStore* blobs, bool resolve_imports) {
  std::vector<SheetEdit> edits;
  edits.reserve(entries.size());
  for (const EntryRecord& e : entries) {
    ASSIGN_OR_RETURN(SheetEdit edit, EditOfEntry(e, blobs, resolve_imports));
    edits.push_back(std::move(edit));
  }
  return edits;
}

Result<SheetPlan> PlanSheet(BlobStore* blobs, std::optional<std::string> previous_root,
                            const std::vector<EntryRecord>& entries) {
  SheetPlan plan;
  plan.previous_root = std::move(previous_root);
  // The sheet before the edits in plan.delta, opened from its first cell.
  OpenAll open_base;
  if (plan.previous_root) {
    open_base = [blobs,
                 root = *plan.previous_root]() -> Result<std::unique_ptr<CellCursor>> {
      ASSIGN_OR_RETURN(std::unique_ptr<SnapshotReader> reader,
                       SnapshotReader::Open(blobs, root));
      return std::unique_ptr<CellCursor>(new SnapshotScan(std::move(reader)));
    };
  } else {
    open_base = []() -> Result<std::unique_ptr<CellCursor>> { return EmptyCursor(); };
  }
  // One entry at a time, its cells moved into the delta: a body of 10^4 cells is
  // parsed, applied and freed before the next is read.
  for (size_t i = 0; i < entries.size(); ++i) {
    ASSIGN_OR_RETURN(SheetEdit edit,
                     EditOfEntry(entries[i], blobs, /*resolve_imports=*/false));
    const auto* import = std::get_if<ImportEdit>(&edit);
    if (import == nullptr || !entries[i].external) {
      plan.delta.Apply(std::move(edit));
      continue;
    }
    OpenAll open_import = [blobs, key = *entries[i].external,
                           edit = *import]() -> Result<std::unique_ptr<CellCursor>> {
      ASSIGN_OR_RETURN(std::unique_ptr<BlobPayloadSource> payload,
                       BlobPayloadSource::Open(blobs, key));
      return OpenImportCursor(edit, std::move(payload));
    };
    if (import->mode == ImportEdit::Mode::kReplace) {
      open_base = std::move(open_import);
    } else {
      auto before = std::make_shared<const SheetDelta>(std::move(plan.delta));
      open_base = [open_before = std::move(open_base), before,
                   open_import =
                       std::move(open_import)]() -> Result<std::unique_ptr<CellCursor>> {
        ASSIGN_OR_RETURN(std::unique_ptr<CellCursor> sheet, open_before());
        ASSIGN_OR_RETURN(std::unique_ptr<CellCursor> imported, open_import());
        return MergeCursors(ApplyDelta(std::move(sheet), before), std::move(imported));
      };
    }
    plan.delta = SheetDelta();
    plan.base_name = "imports through seq " + std::to_string(entries[i].seq) + " over " +
                     plan.previous_root.value_or("the empty sheet");
  }
  if (!plan.base_name.empty()) plan.base = SkippingSource(std::move(open_base));
  return plan;
}

std::unique_ptr<SnapshotBuilder> NewSnapshotBuilder(BlobStore* blobs, SnapshotId id,
                                                    SheetPlan&& plan,
                                                    SnapshotBuilder::Options options) {
  if (plan.base) {
    return std::make_unique<SnapshotBuilder>(blobs, std::move(id), std::move(plan.base),
                                             std::move(plan.base_name),
                                             std::move(plan.delta), std::move(options));
  }
  return std::make_unique<SnapshotBuilder>(blobs, std::move(id),
                                           std::move(plan.previous_root),
                                           std::move(plan.delta), std::move(options));
}

std::unique_ptr<SnapshotBuilder> NewSnapshotBuilder(BlobStore* blobs, SnapshotId id,
                                                    const SheetPlan& plan,
                                                    SnapshotBuilder::Options options) {
  if (plan.base) {
    return std::make_unique<SnapshotBuilder>(blobs, std::move(id), plan.base,
                                             plan.base_name, plan.delta, options);
  }
  return std::make_unique<SnapshotBuilder>(blobs, std::move(id), plan.previous_root,
                                           plan.delta, options);
}

}  // namespace sheetlog
