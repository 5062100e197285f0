// MakeSnapshotBuildFactory: a SnapshotBuild over SnapshotBuilder. Contract in
// build_factory.h.
#include "src/snapshot/build_factory.h"

#include "src/snapshot/sheet_plan.h"

namespace sheetlog {

namespace {

class StreamingBuild : public SnapshotBuild {
 public:
  explicit StreamingBuild(std::unique_ptr<SnapshotBuilder> builder)
      : builder_(std::move(builder)) {}

  Status Resume(const nlohmann::json& checkpoint) { return builder_->Resume(checkpoint); }
  Result<bool> WriteNextChunk() override { return builder_->WriteNextChunk(); }
  nlohmann::json Checkpoint() const override { return builder_->Checkpoint(); }
  Result<std::string> Finish() override { return builder_->Finish(); }

 private:
  std::unique_ptr<SnapshotBuilder> builder_;
};

}  // namespace

SnapshotBuildFactory MakeSnapshotBuildFactory(BlobStore* blobs,
                                              SnapshotBuilder::Options options) {
  return [blobs, options](
             const SnapshotJob& job, int64_t job_seq,
             const std::optional<std::string>& previous_root,
             const std::vector<EntryRecord>& entries_since,
             const nlohmann::json& checkpoint) -> Result<std::unique_ptr<SnapshotBuild>> {
    ASSIGN_OR_RETURN(SheetPlan plan, PlanSheet(blobs, previous_root, entries_since));
    SnapshotId id{job.sheet_id, job.segment, job.entry, job_seq};
    // The builder takes the plan over: the delta holds every cell written since the
    // previous snapshot, too many to copy.
    auto build = std::make_unique<StreamingBuild>(
        NewSnapshotBuilder(blobs, id, std::move(plan), options));
    if (!checkpoint.is_null()) {
      Status resumed = build->Resume(checkpoint);
      if (resumed.code() == StatusCode::kInvalidArgument) {
        // A checkpoint from another layout or a damaged one: starting over is always
        // safe, it rewrites the same objects. Rare: the sheet is planned again.
        ASSIGN_OR_RETURN(SheetPlan again, PlanSheet(blobs, previous_root, entries_since));
        build = std::make_unique<StreamingBuild>(
            NewSnapshotBuilder(blobs, std::move(id), std::move(again), options));
      } else {
        RETURN_IF_ERROR(resumed);
      }
    }
    return std::unique_ptr<SnapshotBuild>(std::move(build));
  };
}

}  // namespace sheetlog
