#include "src/snapshot/build_factory.h"

#include "src/log/tables.h"
#include "src/sheet/delta.h"

namespace sheetlog {

namespace {

class StreamingBuild : public SnapshotBuild {
 public:
  StreamingBuild(BlobStore* blobs, SnapshotId id,
                 std::optional<std::string> previous_root, SheetDelta delta,
                 SnapshotBuilder::Options options)
      : builder_(blobs, std::move(id), std::move(previous_root), std::move(delta),
                 options) {}

  Status Resume(const nlohmann::json& checkpoint) { return builder_.Resume(checkpoint); }
  Result<bool> WriteNextChunk() override { return builder_.WriteNextChunk(); }
  nlohmann::json Checkpoint() const override { return builder_.Checkpoint(); }
  Result<std::string> Finish() override { return builder_.Finish(); }

 private:
  SnapshotBuilder builder_;
};

}  // namespace

Result<std::unique_ptr<BlobPayloadSource>> BlobPayloadSource::Open(
    BlobStore* blobs, const std::string& key) {
  ASSIGN_OR_RETURN(std::unique_ptr<BlobReader> reader, blobs->OpenReader(key));
  return std::unique_ptr<BlobPayloadSource>(new BlobPayloadSource(std::move(reader)));
}

Result<std::vector<SheetEdit>> EditsOfEntries(const std::vector<EntryRecord>& entries,
                                              BlobStore* blobs) {
  std::vector<SheetEdit> edits;
  edits.reserve(entries.size());
  for (const EntryRecord& e : entries) {
    nlohmann::json body = nullptr;
    if (IsBuiltinType(e.type)) {
      if (e.body) {
        body = nlohmann::json::parse(*e.body, nullptr, false);
      } else if (e.external && e.type != "Import") {
        ASSIGN_OR_RETURN(std::string text, blobs->Get(*e.external));
        body = nlohmann::json::parse(text, nullptr, false);
      }
      if (body.is_discarded()) {
        return Internal("entry " + std::to_string(e.seq) +
                        " has a body that is not JSON");
      }
    }
    Result<SheetEdit> edit = ParseEdit(e.type, e.version, body);
    if (!edit.ok()) {
      return Internal("entry " + std::to_string(e.seq) +
                      " no longer parses: " + edit.status().message());
    }
    if (auto* import = std::get_if<ImportEdit>(&*edit); import && e.external) {
      ASSIGN_OR_RETURN(std::unique_ptr<BlobPayloadSource> payload,
                       BlobPayloadSource::Open(blobs, *e.external));
      Result<ImportedCells> cells = ReadImportedCells(*import, *payload);
      if (!cells.ok()) {
        return Internal("the import payload of entry " + std::to_string(e.seq) +
                        " no longer parses: " + cells.status().message());
      }
      import->cells = std::make_shared<const ImportedCells>(std::move(cells).value());
    }
    edits.push_back(std::move(edit).value());
  }
  return edits;
}

SnapshotBuildFactory MakeSnapshotBuildFactory(BlobStore* blobs,
                                              SnapshotBuilder::Options options) {
  return [blobs, options](
             const SnapshotJob& job, int64_t job_seq,
             const std::optional<std::string>& previous_root,
             const std::vector<EntryRecord>& entries_since,
             const nlohmann::json& checkpoint) -> Result<std::unique_ptr<SnapshotBuild>> {
    ASSIGN_OR_RETURN(std::vector<SheetEdit> edits, EditsOfEntries(entries_since, blobs));
    SheetDelta delta;
    for (SheetEdit& edit : edits) {
      delta.Apply(edit);
      edit = SkippedEdit{};  // an import's cells now live in the delta: free the copy
    }
    SnapshotId id{job.sheet_id, job.segment, job.entry, job_seq};
    auto build =
        std::make_unique<StreamingBuild>(blobs, id, previous_root, delta, options);
    if (!checkpoint.is_null()) {
      Status resumed = build->Resume(checkpoint);
      if (resumed.code() == StatusCode::kInvalidArgument) {
        // A checkpoint from another layout or a damaged one: starting over is always
        // safe, it rewrites the same objects.
        build = std::make_unique<StreamingBuild>(blobs, id, previous_root,
                                                 std::move(delta), options);
      } else {
        RETURN_IF_ERROR(resumed);
      }
    }
    return std::unique_ptr<SnapshotBuild>(std::move(build));
  };
}

}  // namespace sheetlog
