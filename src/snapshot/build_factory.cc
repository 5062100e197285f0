#include "src/snapshot/build_factory.h"

namespace sheetlog {

SnapshotBuildFactory MakeSnapshotBuildFactory(BlobStore* blobs, Uploads* uploads) {
  (void)blobs;
  (void)uploads;
  return [](const SnapshotJob&, const std::optional<std::string>&,
            const std::vector<EntryRecord>&,
            const nlohmann::json&) -> Result<std::unique_ptr<SnapshotBuild>> {
    return Unavailable("snapshot builder not wired yet");
  };
}

}  // namespace sheetlog
