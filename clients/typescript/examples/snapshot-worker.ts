// A snapshot worker process for an infinisheet app whose log and blobs live in sheetlog:
// run one (or several, on several machines) beside the app, and infinisheet's snapshot
// workflow runs for every entry the app marks pending, once each, even across restarts.
//
//   SHEETLOG_URL=http://127.0.0.1:8787 SHEET_ID=<uuid> BLOB_ROOT=apps/budget \
//     node --experimental-strip-types examples/snapshot-worker.ts
//
// It needs infinisheet's packages (npm install @candidstartup/infinisheet-types
// @candidstartup/event-sourced-spreadsheet-data), which this package does not depend on:
// it is not compiled by this package's build or tests.
import { ResultAsync, err, ok } from "@candidstartup/infinisheet-types";
import { EventSourcedSpreadsheetWorkflow } from "@candidstartup/event-sourced-spreadsheet-data";
import {
  SheetlogBlobStore,
  SheetlogEventLog,
  SheetlogWorker,
  SheetlogWorkerHost,
  infinisheetBlobStore,
  infinisheetEventLog,
} from "sheetlog-infinisheet";

const url = process.env.SHEETLOG_URL ?? "http://127.0.0.1:8787";
const sheetId = process.env.SHEET_ID;
const token = process.env.SHEETLOG_TOKEN;
if (!sheetId) throw new Error("set SHEET_ID to the sheet of the app's log");
const kit = { ResultAsync, ok, err };

// The same log and blob store the app uses (its SheetlogEventLog's sheetId, its root).
const eventLog = infinisheetEventLog(new SheetlogEventLog({ url, token, sheetId }), kit);
const blobStore = infinisheetBlobStore(
  new SheetlogBlobStore({ url, token, root: process.env.BLOB_ROOT ?? `apps/${sheetId}` }),
  kit,
);

// infinisheet's workflow is the worker; the host feeds it the sheet's pending entries.
const worker = new SheetlogWorker();
new EventSourcedSpreadsheetWorkflow(eventLog as never, blobStore as never, worker as never);
const host = new SheetlogWorkerHost(
  {
    url,
    token,
    sheetId,
    onJob: (job) =>
      console.log(`entry ${job.sequenceId}: ${job.workflow} ${job.outcome}`,
                  job.error === undefined ? "" : JSON.stringify(job.error)),
  },
  worker,
);
await host.start();
console.log(`following sheet ${sheetId} on ${url}`);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    host.stop();
    process.exit(0);
  });
}
