// sheetlog-infinisheet: infinisheet's EventLog and BlobStore contracts over sheetlog.
export { SheetlogEventLog } from "./event-log.js";
export type { SheetlogEventLogOptions, CreateSheetOptions } from "./event-log.js";
export { SheetlogBlobStore } from "./blob-store.js";
export type { SheetlogBlobStoreOptions } from "./blob-store.js";
export type { SheetlogConnection } from "./http.js";
export * from "./errors.js";
export * from "./result.js";
export type * from "./types.js";
export { infinisheetEventLog, infinisheetBlobStore } from "./infinisheet.js";
export type { InfinisheetResultKit } from "./infinisheet.js";
export { SheetlogWorker, SheetlogWorkerHost } from "./worker-host.js";
export type {
  InfiniSheetWorker,
  PendingWorkflowMessage,
  SheetlogWorkerHostOptions,
  WorkerJobReport,
} from "./worker-host.js";
