// The SnapshotWorker's builds, over src/snapshot's streaming builder: the entries since
// the previous snapshot become a SheetDelta (external bodies read from the blob store),
// and the builder walks the previous snapshot through it, chunk by chunk.
#pragma once

#include "emulator/blob/blob_store.h"
#include "src/snapshot/worker.h"

namespace sheetlog {

class Uploads;

SnapshotBuildFactory MakeSnapshotBuildFactory(BlobStore* blobs, Uploads* uploads);

}  // namespace sheetlog
