// The worker host (src/worker-host.ts) against the real server: infinisheet's snapshot
// workflow runs for entries marked pending, found on the sheet's event stream, once per
// entry across hosts (processes), after a restart, and after a host that held a job died.
//
// The workflow here takes the same steps as infinisheet's EventSourcedSpreadsheetWorkflow,
// over a spreadsheet reduced to what the test checks (cells set by SetCellValueAndFormat
// entries): read the log from the last snapshot up to the entry, save the snapshot to the
// blob store under the entry's sequence id, then setMetadata({pending: undefined,
// snapshot: name}). A snapshot named X holds the cells of every entry before X; a reader
// loads it and applies the entries from X on (query("snapshot", ...)).
import { describe, expect, inject, test } from "vitest";

import {
  SheetlogBlobStore,
  SheetlogEventLog,
  SheetlogWorker,
  SheetlogWorkerHost,
  type BlobDir,
  type LogEntry,
  type PendingWorkflowMessage,
  type WorkerJobReport,
} from "../src/index.js";

const url = inject("sheetlogUrl");

interface CellEntry extends LogEntry {
  type: "SetCellValueAndFormat";
  row: number;
  column: number;
  value: number;
}

type Cells = Record<string, number>;

function apply(cells: Cells, entries: LogEntry[]): void {
  for (const e of entries as CellEntry[]) {
    if (e.type === "SetCellValueAndFormat") cells[`${e.row},${e.column}`] = e.value;
  }
}

async function unwrap<T>(result: PromiseLike<{ isOk(): boolean; value?: T; error?: unknown }>): Promise<T> {
  const r = await result;
  if (!r.isOk()) throw new Error(JSON.stringify(r.error));
  return r.value as T;
}

// Every entry in [from, end) of `log`, page by page.
async function readLog(
  log: SheetlogEventLog<LogEntry>,
  from: bigint | "snapshot" | "start",
  end: bigint | "end",
): Promise<{ start: bigint; entries: LogEntry[]; requests: number }> {
  const entries: LogEntry[] = [];
  let start: bigint | undefined;
  let next: bigint | "snapshot" | "start" = from;
  let requests = 0;
  for (;;) {
    const page = await unwrap(log.query(next, end));
    requests++;
    start ??= page.startSequenceId;
    entries.push(...page.entries);
    if (page.isComplete) return { start, entries, requests };
    next = page.endSequenceId;
  }
}

async function snapshotDir(store: SheetlogBlobStore): Promise<BlobDir<string>> {
  return unwrap(store.getRootDir());
}

// A snapshot workflow in the shape of infinisheet's, counting its runs.
function snapshotWorkflow(log: SheetlogEventLog<LogEntry>, store: SheetlogBlobStore) {
  const runs: bigint[] = [];
  const worker = new SheetlogWorker();
  worker.onReceiveMessage = async (message: PendingWorkflowMessage) => {
    runs.push(message.sequenceId);
    expect(message.workflow).toBe("snapshot");
    const dir = await snapshotDir(store);
    // The state before the entry: the last snapshot (the first entry read carries it)
    // with the entries from it on, or every entry when there is none yet.
    const { entries } = await readLog(log, "snapshot", message.sequenceId);
    const cells: Cells = {};
    const base = entries[0]?.snapshot;
    if (base !== undefined) {
      Object.assign(cells, JSON.parse(new TextDecoder().decode(await unwrap(dir.readBlob(base)))));
    }
    apply(cells, entries);
    const name = message.sequenceId.toString();
    await unwrap(dir.writeBlob(name, new TextEncoder().encode(JSON.stringify(cells))));
    return log.setMetadata(message.sequenceId, { pending: undefined, snapshot: name });
  };
  return { worker, runs };
}

// Appends `count` cell entries without expect_seq, several at a time (their order does
// not matter: each sets its own cell), so a large log is written quickly.
async function appendCells(sheetId: string, first: number, count: number): Promise<void> {
  const batch = 32;
  for (let i = 0; i < count; i += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, count - i) }, async (_, k) => {
        const n = first + i + k;
        const response = await fetch(`${url}/v1/sheets/${sheetId}/entries`, {
          method: "POST",
          body: JSON.stringify({
            type: "SetCellValueAndFormat",
            body: { row: n, column: 0, value: n },
          }),
        });
        if (response.status !== 201) throw new Error(`append: ${await response.text()}`);
      }),
    );
  }
}

function waitFor(what: string, condition: () => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + 30_000;
    const check = () => {
      if (condition()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(check, 20);  // re-checks a condition; asserts nothing about time
    };
    check();
  });
}

describe("SheetlogWorkerHost", () => {
  test("runs the snapshot workflow for a pending entry; a 10,000-entry sheet reopens from it", async () => {
    const log = await SheetlogEventLog.create<LogEntry>({ url, name: "ten thousand" });
    const store = new SheetlogBlobStore({ url, root: `apps/${log.sheetId}` });
    const { worker, runs } = snapshotWorkflow(log, store);
    const reports: WorkerJobReport[] = [];
    const host = new SheetlogWorkerHost(
      { url, sheetId: log.sheetId, onJob: (r) => reports.push(r) },
      worker,
    );
    await host.start();

    await appendCells(log.sheetId, 0, 9_999); // ids 0..9998
    // The app's 10,000th entry asks for a snapshot, as EventSourcedSpreadsheetData does.
    await unwrap(
      log.addEntry(
        { type: "SetCellValueAndFormat", row: 9_999, column: 0, value: 9_999, pending: "snapshot" } as CellEntry,
        9_999n,
      ),
    );
    await waitFor("the workflow ran", () => reports.some((r) => r.outcome === "done"));
    expect(runs).toEqual([9_999n]);
    host.stop();

    // Reopened elsewhere: from the snapshot, reading one page of entries, not ten.
    const reader = new SheetlogEventLog<LogEntry>({ url, sheetId: log.sheetId });
    const opened = await readLog(reader, "snapshot", "end");
    expect(opened.start).toBe(9_999n);
    expect(opened.requests).toBe(1);
    expect(opened.entries).toHaveLength(1);
    expect(opened.entries[0]).toMatchObject({ snapshot: "9999", pending: undefined });
    const dir = await snapshotDir(new SheetlogBlobStore({ url, root: `apps/${log.sheetId}` }));
    const cells: Cells = JSON.parse(
      new TextDecoder().decode(await unwrap(dir.readBlob(opened.entries[0]!.snapshot!))),
    );
    apply(cells, opened.entries);
    // The same sheet as a replay of the whole log.
    const full = await readLog(reader, "start", "end");
    expect(full.entries).toHaveLength(10_000);
    const replayed: Cells = {};
    apply(replayed, full.entries);
    expect(Object.keys(cells)).toHaveLength(10_000);
    expect(cells).toEqual(replayed);
  });

  test("runs each job once across hosts, and a job left pending by a stopped host on restart", async () => {
    const log = await SheetlogEventLog.create<LogEntry>({ url, name: "two hosts" });
    const store = new SheetlogBlobStore({ url, root: `apps/${log.sheetId}` });
    const a = snapshotWorkflow(log, store);
    const b = snapshotWorkflow(log, store);
    const hostA = new SheetlogWorkerHost({ url, sheetId: log.sheetId, hostId: "a" }, a.worker);
    const hostB = new SheetlogWorkerHost({ url, sheetId: log.sheetId, hostId: "b" }, b.worker);
    await Promise.all([hostA.start(), hostB.start()]);
    for (let id = 0; id < 6; id++) {
      const entry = { type: "SetCellValueAndFormat", row: id, column: 1, value: id } as CellEntry;
      if (id === 2 || id === 5) entry.pending = "snapshot";
      await unwrap(log.addEntry(entry, BigInt(id)));
    }
    const done = () => [...a.runs, ...b.runs];
    await waitFor("both jobs ran", () => done().length === 2);
    await Promise.all([hostA.idle(), hostB.idle()]);
    expect(done().sort()).toEqual([2n, 5n]);
    hostA.stop();
    hostB.stop();

    // While no host runs, an entry is marked: the next host to start finds it.
    await unwrap(
      log.addEntry({ type: "SetCellValueAndFormat", row: 6, column: 1, value: 6 } as CellEntry, 6n),
    );
    await unwrap(log.setMetadata(6n, { pending: "snapshot" }));
    const c = snapshotWorkflow(log, store);
    const hostC = new SheetlogWorkerHost({ url, sheetId: log.sheetId, hostId: "c" }, c.worker);
    await hostC.start();
    await waitFor("the restarted host ran it", () => c.runs.length === 1);
    await hostC.idle();
    expect(c.runs).toEqual([6n]);
    hostC.stop();
    const entries = (await readLog(log, "start", "end")).entries;
    expect(entries.filter((e) => e.pending !== undefined)).toEqual([]);
    expect(entries.map((e) => e.snapshot).filter(Boolean)).toEqual(["2", "5", "6"]);
  });

  test("a job whose host died holding it is taken over once its lease expires", async () => {
    const log = await SheetlogEventLog.create<LogEntry>({ url, name: "died" });
    const store = new SheetlogBlobStore({ url, root: `apps/${log.sheetId}` });
    // Host "dead" claims the job and never finishes it (its process is gone).
    const stuck = new SheetlogWorker();
    let claimed = false;
    stuck.onReceiveMessage = () => {
      claimed = true;
      return new Promise(() => {});
    };
    const dead = new SheetlogWorkerHost(
      { url, sheetId: log.sheetId, hostId: "dead", leaseMs: 300 },
      stuck,
    );
    await dead.start();
    await unwrap(
      log.addEntry(
        { type: "SetCellValueAndFormat", row: 0, column: 0, value: 1, pending: "snapshot" } as CellEntry,
        0n,
      ),
    );
    await waitFor("the first host holds the job", () => claimed);
    dead.stop(); // stops renewing: the lease runs out
    const alive = snapshotWorkflow(log, store);
    const reports: WorkerJobReport[] = [];
    const host = new SheetlogWorkerHost(
      { url, sheetId: log.sheetId, hostId: "alive", leaseMs: 300, onJob: (r) => reports.push(r) },
      alive.worker,
    );
    await host.start();
    await waitFor("the job was taken over", () => alive.runs.length === 1);
    await waitFor("and finished", () => reports.some((r) => r.outcome === "done"));
    host.stop();
    const entry = (await readLog(log, "start", "end")).entries[0]!;
    expect(entry.snapshot).toBe("0");
    expect(entry.pending).toBeUndefined();
  });
});
