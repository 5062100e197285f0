// infinisheet's EventLog contract (EventLog.ts and its interface test suite), checked
// against the real sheetlog binary through SheetlogEventLog: every behaviour of that
// suite, with the page size of infinisheet's reference log (10), plus what the
// contract implies for entry shapes and metadata.
import { describe, expect, inject, it } from "vitest";

import { SheetlogEventLog } from "../src/index.js";
import type {
  InfinisheetError,
  LogEntry,
  QueryValue,
  Result,
  SequenceId,
  SnapshotValue,
} from "../src/index.js";

interface Numbered extends LogEntry {
  type: "test";
  index: number;
}

function numbered(index: number): Numbered {
  return { type: "test", index };
}

const url = inject("sheetlogUrl");

// As infinisheet's suites make a log: synchronously (the sheet is created on the
// log's first call).
function newLog(): SheetlogEventLog<Numbered> {
  return new SheetlogEventLog<Numbered>({ url, name: "vitest", pageSize: 10 });
}

async function fill(log: SheetlogEventLog<Numbered>, count: number) {
  for (let i = 0; i < count; i++) expect((await log.addEntry(numbered(i), BigInt(i))).isOk()).toBe(true);
}

// A page: its first id, completeness, length, the snapshot it reports, and that
// entry k holds index start + k (every entry was written with index = its id).
function expectPage(
  result: Result<QueryValue<Numbered>, InfinisheetError>,
  start: SequenceId,
  complete: boolean,
  length: number,
  lastSnapshot?: SnapshotValue,
) {
  expect(result.isOk(), JSON.stringify(result.isErr() ? result.error : "")).toBe(true);
  const page = result._unsafeUnwrap();
  expect(page.startSequenceId).toBe(start);
  expect(page.isComplete).toBe(complete);
  expect(page.lastSnapshot).toEqual(lastSnapshot);
  expect(page.entries.length).toBe(length);
  expect(page.endSequenceId).toBe(start + BigInt(length));
  page.entries.forEach((entry, k) => expect(entry.index).toBe(Number(start) + k));
}

function expectError(result: Result<unknown, InfinisheetError>, type: string) {
  expect(result.isErr()).toBe(true);
  expect(result._unsafeUnwrapErr().type).toBe(type);
}

describe("SheetlogEventLog (infinisheet's EventLog contract)", () => {
  it("starts out empty", async () => {
    const log = newLog();
    expectPage(await log.query("start", "end"), 0n, true, 0);
    expectPage(await log.query("snapshot", "end"), 0n, true, 0);
    expectPage(await log.query(0n, 0n), 0n, true, 0);
    expectPage(await log.query(0n, 5n), 0n, true, 0);
    expectError(await log.query(5n, 30n), "InfinisheetRangeError");
    expectError(await log.query(-5n, 0n), "InfinisheetRangeError");
  });

  it("adds entries only at the next sequence id", async () => {
    const log = newLog();
    expect((await log.addEntry(numbered(0), 0n)).isOk()).toBe(true);
    expectPage(await log.query("start", "end"), 0n, true, 1);

    const stale = await log.addEntry(numbered(1), 0n);
    expectError(stale, "ConflictError");
    expect((stale._unsafeUnwrapErr() as { nextSequenceId: bigint }).nextSequenceId).toBe(1n);
    expectError(await log.addEntry(numbered(1), 2n), "ConflictError");
    expect((await log.addEntry(numbered(1), 1n)).isOk()).toBe(true);
    expectPage(await log.query("start", "end"), 0n, true, 2);

    const unchanged = await log.addEntry(numbered(2), 2n, 0n);
    expect(unchanged.isOk()).toBe(true);
    expect(unchanged._unsafeUnwrap().lastSnapshot).toBeUndefined();
    expect((await log.setMetadata(1n, { snapshot: "snap" })).isOk()).toBe(true);
    const newer = await log.addEntry(numbered(3), 3n, 0n);
    expect(newer.isOk()).toBe(true);
    expect(newer._unsafeUnwrap().lastSnapshot).toEqual({ sequenceId: 1n, blobId: "snap" });
    const known = await log.addEntry(numbered(4), 4n, 1n);
    expect(known._unsafeUnwrap().lastSnapshot).toBeUndefined();
    // Without a snapshotId nothing is reported.
    expect((await log.addEntry(numbered(5), 5n))._unsafeUnwrap().lastSnapshot).toBeUndefined();
  });

  it("sets metadata field by field", async () => {
    const log = newLog();
    await log.addEntry(numbered(0), 0n);
    expectError(await log.setMetadata(-1n, {}), "InfinisheetRangeError");
    expectError(await log.setMetadata(1n, {}), "InfinisheetRangeError");

    const first = async () => {
      const result = await log.query("start", "end");
      expectPage(result, 0n, true, 1);
      return result._unsafeUnwrap().entries[0]!;
    };
    expect((await log.setMetadata(0n, {})).isOk()).toBe(true);
    let entry = await first();
    expect(entry).not.toHaveProperty("snapshot");
    expect(entry).not.toHaveProperty("history");
    expect(entry).not.toHaveProperty("pending");

    await log.setMetadata(0n, { snapshot: "snap" });
    expect(await first()).toHaveProperty("snapshot", "snap");

    await log.setMetadata(0n, { history: "hist" }); // leaves the others alone
    entry = await first();
    expect(entry).toHaveProperty("snapshot", "snap");
    expect(entry).toHaveProperty("history", "hist");

    await log.setMetadata(0n, { history: "hist2", pending: "pend" });
    entry = await first();
    expect(entry).toHaveProperty("snapshot", "snap");
    expect(entry).toHaveProperty("history", "hist2");
    expect(entry).toHaveProperty("pending", "pend");

    await log.setMetadata(0n, { pending: undefined }); // a named undefined clears
    entry = await first();
    expect(entry).toHaveProperty("snapshot", "snap");
    expect(entry).toHaveProperty("history", "hist2");
    expect(entry).toHaveProperty("pending", undefined);

    // Properties other than the metadata fields are ignored; a class field declared
    // but unset is a named undefined.
    class WithExtras {
      index = 42;
      snapshot: string | undefined = undefined;
    }
    await log.setMetadata(0n, new WithExtras());
    entry = await first();
    expect(entry).toHaveProperty("snapshot", undefined);
    expect(entry).toHaveProperty("history", "hist2");
    expect(entry.index).toBe(0);
  });

  it("truncates exactly", async () => {
    const log = newLog();
    await fill(log, 10);
    expectPage(await log.query("start", "end"), 0n, true, 10);

    expectError(await log.truncate(-1n), "InfinisheetRangeError");
    expectError(await log.truncate(11n), "InfinisheetRangeError");
    expect((await log.truncate(0n)).isOk()).toBe(true);
    expectPage(await log.query("start", "end"), 0n, true, 10);

    expect((await log.truncate(4n)).isOk()).toBe(true);
    expectPage(await log.query("start", "end"), 4n, true, 6);
    expectError(await log.truncate(3n), "InfinisheetRangeError");
    expectError(await log.query(3n, "end"), "InfinisheetRangeError");

    expect((await log.truncate(6n)).isOk()).toBe(true);
    expectPage(await log.query("start", "end"), 6n, true, 4);
    expect((await log.truncate(10n)).isOk()).toBe(true);
    expectPage(await log.query("start", "end"), 10n, true, 0);
    expect((await log.truncate(10n)).isOk()).toBe(true);
    expectPage(await log.query("start", "end"), 10n, true, 0);
    // The log goes on where it was.
    expect((await log.addEntry(numbered(10), 10n)).isOk()).toBe(true);
    expectPage(await log.query("start", "end"), 10n, true, 1);
  });

  it("pages queries", async () => {
    const log = newLog();
    await fill(log, 15);
    expectPage(await log.query("start", "end"), 0n, false, 10);
    expectPage(await log.query(10n, "end"), 10n, true, 5);
    expectPage(await log.query("start", 10n), 0n, true, 10);
    expectPage(await log.query(10n, 20n), 10n, true, 5);
  });

  it("queries from the newest snapshot", async () => {
    const log = newLog();
    await fill(log, 10);
    await log.setMetadata(4n, { snapshot: "snap" });
    expectPage(await log.query("start", "end", 0n), 0n, true, 10, {
      sequenceId: 4n,
      blobId: "snap",
    });
    expectPage(await log.query("snapshot", "end"), 4n, true, 6);
    expectPage(await log.query("start", "end", 4n), 0n, true, 10);
    // A newer one, set by another client, is the one reported; the server's own
    // entry 0 (a Snapshot entry) never is.
    await log.setMetadata(7n, { snapshot: "snap7" });
    expectPage(await log.query("start", "end", 4n), 0n, true, 10, {
      sequenceId: 7n,
      blobId: "snap7",
    });
    expectPage(await log.query("snapshot", "end", 7n), 7n, true, 3);
    const fresh = newLog();
    await fill(fresh, 2);
    expectPage(await fresh.query("start", "end", 0n), 0n, true, 2);
  });

  it("keeps entry data and metadata written with an entry", async () => {
    const log = await SheetlogEventLog.create<LogEntry & Record<string, unknown>>({ url });
    const entry = {
      type: "SetCellValueAndFormat",
      row: 2,
      column: 1,
      value: { type: "CellError", value: "#DIV/0!" },
      format: "0.00",
      history: "h1",
    };
    expect((await log.addEntry(entry, 0n)).isOk()).toBe(true);
    const page = (await log.query("start", "end"))._unsafeUnwrap();
    expect(page.entries).toEqual([entry]);
    // The server applies it: infinisheet's entry is sheetlog's built-in type.
    const cells = await fetch(`${url}/v1/sheets/${log.sheetId}/cells?range=B3`);
    expect(((await cells.json()) as { rows: unknown }).rows).toEqual([
      [{ type: "CellError", value: "#DIV/0!" }],
    ]);
  });

  it("creates its sheet on the first call when made without one", async () => {
    let posts = 0;
    const counting: typeof fetch = (input, init) => {
      if (init?.method === "POST" && String(input).endsWith("/v1/sheets")) posts += 1;
      return fetch(input, init);
    };
    const log = new SheetlogEventLog<Numbered>({ url, name: "lazy", fetch: counting });
    expect(log.sheetId).toBeUndefined();
    expect(posts).toBe(0);
    // Concurrent first calls share one creation.
    const [first, second] = await Promise.all([
      log.addEntry(numbered(0), 0n),
      log.query("start", "end"),
    ]);
    expect(first.isOk()).toBe(true);
    expect(second.isOk()).toBe(true);
    expect(posts).toBe(1);
    const id = log.sheetId;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expectPage(await log.query("start", "end"), 0n, true, 1);
    expect(posts).toBe(1);
    expect(await log.open()).toBe(id);
    // The sheet is a client-managed one (snapshot_every 0), named as asked.
    const sheet = (await (await fetch(`${url}/v1/sheets/${id}`)).json()) as {
      name: string;
      snapshot_every: number;
    };
    expect(sheet).toMatchObject({ name: "lazy", snapshot_every: 0 });
    // Another client opens it by id.
    const again = new SheetlogEventLog<Numbered>({ url, sheetId: id });
    expect((await again.query("start", "end"))._unsafeUnwrap().entries).toEqual([numbered(0)]);
  });

  it("reports a failed creation as a StorageError and tries again", async () => {
    let fail = true;
    const flaky: typeof fetch = (input, init) =>
      fail ? Promise.resolve(new Response("{}", { status: 503 })) : fetch(input, init);
    const log = new SheetlogEventLog<Numbered>({ url, fetch: flaky });
    const failed = await log.addEntry(numbered(0), 0n);
    expectError(failed, "StorageError");
    expect((failed._unsafeUnwrapErr() as { statusCode?: number }).statusCode).toBe(503);
    expect(log.sheetId).toBeUndefined();
    fail = false;
    expect((await log.addEntry(numbered(0), 0n)).isOk()).toBe(true);
    expect(log.sheetId).toBeDefined();
  });

  it("returns entries of any size (bodies the server keeps in its blob store)", async () => {
    interface Big extends LogEntry {
      type: "big";
      index: number;
      data: string;
    }
    const log = new SheetlogEventLog<Big>({ url, pageSize: 10 });
    // 20 KB (over the server's 16 KiB inline limit), five of 1 MB (a page inlines at
    // most 4 MiB of such bodies, so the page ends early), 5 MB (never inlined: the
    // client fetches it; the test server takes requests of up to 6 MB).
    const sizes = [20_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_000_000, 5_000_000];
    const written = sizes.map((n, i): Big => ({
      type: "big",
      index: i,
      data: String.fromCharCode(97 + i).repeat(n),
    }));
    for (const [i, entry] of written.entries()) {
      expect((await log.addEntry(entry, BigInt(i))).isOk()).toBe(true);
    }
    const first = (await log.query("start", "end"))._unsafeUnwrap();
    expect(first.isComplete).toBe(false);
    expect(first.entries.length).toBe(5); // 20 KB + 4 MB: the fifth 1 MB starts page 2
    expect(first.endSequenceId).toBe(5n);
    const second = (await log.query(first.endSequenceId, "end"))._unsafeUnwrap();
    expect(second.isComplete).toBe(true);
    expect(second.startSequenceId).toBe(5n);
    expect([...first.entries, ...second.entries]).toEqual(written);
  });

  it("makes one HTTP request per call", async () => {
    const created = await SheetlogEventLog.create<Numbered>({ url, pageSize: 10 });
    let requests = 0;
    const counting: typeof fetch = (input, init) => {
      requests += 1;
      return fetch(input, init);
    };
    const log = new SheetlogEventLog<Numbered>({
      url,
      sheetId: created.sheetId,
      pageSize: 10,
      fetch: counting,
    });
    const calls: [string, () => PromiseLike<unknown>][] = [
      ["addEntry", () => log.addEntry(numbered(0), 0n, 0n)],
      ["addEntry (conflict)", () => log.addEntry(numbered(0), 0n)],
      ["setMetadata", () => log.setMetadata(0n, { snapshot: "s", pending: undefined })],
      ["query", () => log.query("snapshot", "end", 0n)],
      ["truncate", () => log.truncate(0n)],
    ];
    for (const [name, call] of calls) {
      requests = 0;
      await call();
      expect(requests, name).toBe(1);
    }
  });

  it("reports a server it cannot reach as a StorageError", async () => {
    const log = new SheetlogEventLog<Numbered>({ url: "http://127.0.0.1:1", sheetId: "x" });
    expectError(await log.query("start", "end"), "StorageError");
  });
});
