// infinisheet's BlobStore contract (BlobStore.ts and its interface test suite), checked
// against the real sheetlog binary through SheetlogBlobStore: every behaviour of that
// suite. Each test gets its own root prefix, so tests share one server without
// seeing each other's blobs.
import { describe, expect, inject, it } from "vitest";

import { SheetlogBlobStore } from "../src/index.js";
import type { BlobDir, BlobDirEntries, InfinisheetError, Result } from "../src/index.js";

const url = inject("sheetlogUrl");
const PAGE = 5;
// Unique per run: the server may be shared with other runs.
const run = Math.random().toString(36).slice(2, 10);
let stores = 0;

function newStore(fetcher?: typeof fetch): SheetlogBlobStore {
  stores += 1;
  return new SheetlogBlobStore({
    url,
    root: `vitest/${run}-${stores}`,
    pageSize: PAGE,
    fetch: fetcher,
  });
}

async function rootOf(store: SheetlogBlobStore): Promise<BlobDir<string>> {
  return (await store.getRootDir())._unsafeUnwrap();
}

function expectEntries(
  result: Result<BlobDirEntries<string>, InfinisheetError>,
  blobs: string[],
  dirs: string[],
) {
  expect(result.isOk()).toBe(true);
  const entries = result._unsafeUnwrap();
  expect([...entries.blobs].sort()).toEqual(blobs);
  expect([...entries.dirs].sort()).toEqual(dirs);
  expect(entries.continuation).toBeUndefined();
}

function expectError(result: Result<unknown, InfinisheetError>, type: string) {
  expect(result.isErr()).toBe(true);
  expect(result._unsafeUnwrapErr().type).toBe(type);
}

async function writeNumbered(dir: BlobDir<string>, count: number) {
  for (let i = 0; i < count; i++) {
    expect((await dir.writeBlob(String(i), new Uint8Array([i]))).isOk()).toBe(true);
  }
}

describe("SheetlogBlobStore (infinisheet's BlobStore contract)", () => {
  it("starts out empty", async () => {
    const root = await rootOf(newStore());
    expectEntries(await root.query(), [], []);
    const missing = await root.readBlob("not there");
    expectError(missing, "StorageError");
    expect((missing._unsafeUnwrapErr() as { statusCode?: number }).statusCode).toBe(404);
    expect((await root.removeBlob("not there")).isOk()).toBe(true);
    expect((await root.removeAll()).isOk()).toBe(true);
  });

  it("keeps blobs and directories apart", async () => {
    const store = newStore();
    const root = await rootOf(store);
    const content = new Uint8Array([1]);
    expect((await root.writeBlob("1", content)).isOk()).toBe(true);
    content[0] = 2;
    expect((await root.writeBlob("2", content)).isOk()).toBe(true);
    // Each write stored a copy of what it was given.
    expect((await root.readBlob("1"))._unsafeUnwrap()).toEqual(new Uint8Array([1]));
    expect((await root.readBlob("2"))._unsafeUnwrap()).toEqual(new Uint8Array([2]));
    expectEntries(await root.query(), ["1", "2"], []);

    const dirA = (await root.getDir("a"))._unsafeUnwrap();
    expectEntries(await root.query(), ["1", "2"], []); // empty directories do not show
    content[0] = 3;
    expect((await dirA.writeBlob("3", content)).isOk()).toBe(true);
    expectEntries(await root.query(), ["1", "2"], ["a"]);
    expectEntries(await dirA.query(), ["3"], []);

    expectError(await root.readBlob("a"), "BlobWrongKindError");
    expectError(await root.writeBlob("a", content), "BlobWrongKindError");
    expectError(await root.removeBlob("a"), "BlobWrongKindError");
    expectError(await root.getDir("1"), "BlobWrongKindError");

    expectError(await root.readBlob(""), "InvalidBlobNameError");
    expectError(await root.writeBlob("", content), "InvalidBlobNameError");
    expectError(await root.removeBlob(""), "InvalidBlobNameError");
    expectError(await root.getDir(""), "InvalidBlobNameError");
    expectError(await root.getDir("x".repeat(101)), "InvalidBlobNameError");

    const dirA2 = (await root.getDir("a"))._unsafeUnwrap();
    expectEntries(await dirA2.query(), ["3"], []);
    const root2 = await rootOf(store);
    expectEntries(await root2.query(), ["1", "2"], ["a"]);

    expect((await root.removeBlob("1")).isOk()).toBe(true);
    expectEntries(await root2.query(), ["2"], ["a"]);
    expect((await dirA.removeBlob("3")).isOk()).toBe(true);
    expectEntries(await root.query(), ["2"], []); // its last blob gone, "a" is too
    expect((await dirA.writeBlob("3", content)).isOk()).toBe(true); // still usable
    expectEntries(await root.query(), ["2"], ["a"]);

    expect((await root.removeAll()).isOk()).toBe(true);
    expectEntries(await root.query(), [], []);
  });

  it("pages listings", async () => {
    const root = await rootOf(newStore());
    const count = PAGE * 2 + 1;
    await writeNumbered(root, count);
    const seen: number[] = [];
    let page = (await root.query())._unsafeUnwrap();
    expect(page.continuation).toBeDefined();
    for (;;) {
      expect(page.blobs.length).toBeGreaterThan(0);
      expect(page.blobs.length).toBeLessThanOrEqual(PAGE);
      expect(page.dirs.length).toBe(0);
      page.blobs.forEach((name) => seen.push(Number(name)));
      if (!page.continuation) break;
      page = (await root.query(page.continuation))._unsafeUnwrap();
    }
    expect(seen.sort((a, b) => a - b)).toEqual([...Array(count).keys()]);
  });

  it("repeats a continuation", async () => {
    const root = await rootOf(newStore());
    await writeNumbered(root, PAGE * 2 + 1);
    const continuation = (await root.query())._unsafeUnwrap().continuation;
    expect(continuation).toBeDefined();
    const once = (await root.query(continuation))._unsafeUnwrap();
    const again = (await root.query(continuation))._unsafeUnwrap();
    expect(again.blobs).toEqual(once.blobs);
    expect(again.dirs).toEqual(once.dirs);
  });

  it("refuses a continuation of another directory", async () => {
    const root = await rootOf(newStore());
    const dirA = (await root.getDir("a"))._unsafeUnwrap();
    const dirB = (await root.getDir("b"))._unsafeUnwrap();
    await writeNumbered(dirA, PAGE * 2 + 1);
    await writeNumbered(dirB, PAGE * 2 + 1);
    const fromA = (await dirA.query())._unsafeUnwrap().continuation;
    const fromB = (await dirB.query())._unsafeUnwrap().continuation;
    expect(fromA).toBeDefined();
    expect(fromB).toBeDefined();
    expectError(await dirA.query(fromB), "NoContinuationError");
    expectError(await dirB.query(fromA), "NoContinuationError");
  });

  it("refuses names the store cannot hold as InvalidBlobNameError, asking nothing", async () => {
    let requests = 0;
    const counting: typeof fetch = (input, init) => {
      requests += 1;
      return fetch(input, init);
    };
    const root = await rootOf(newStore(counting));
    const content = new Uint8Array([7]);
    const bad = [
      "a\u0001b", // C0 control
      "tab\there",
      "del\u007f",
      "c1\u0085", // C1 control
      "lone\ud800", // not well-formed UTF-16: no UTF-8 for it
      "back\\slash",
      "\u20ac".repeat(86), // 86 characters, 258 UTF-8 bytes: over the store's 255
    ];
    for (const name of bad) {
      expectError(await root.readBlob(name), "InvalidBlobNameError");
      expectError(await root.writeBlob(name, content), "InvalidBlobNameError");
      expectError(await root.removeBlob(name), "InvalidBlobNameError");
      expectError(await root.getDir(name), "InvalidBlobNameError");
    }
    expect(requests).toBe(0);

    // At the limits: 255 UTF-8 bytes, 100 characters; and non-ASCII names work.
    const names = ["\u20ac".repeat(85), "x".repeat(100), "caf\u00e9 \u{1F600}"];
    for (const name of names) {
      expect((await root.writeBlob(name, content)).isOk(), name).toBe(true);
      expect((await root.readBlob(name))._unsafeUnwrap()).toEqual(content);
    }
    expectEntries(await root.query(), [...names].sort(), []);

    // A whole key (directories and name) holds at most 1024 bytes.
    let dir = root;
    for (let i = 0; i < 4; i++) dir = (await dir.getDir("\u0101".repeat(100)))._unsafeUnwrap();
    expectError(await dir.writeBlob("\u20ac".repeat(85), content), "InvalidBlobNameError");
    expect((await dir.writeBlob("n", content)).isOk()).toBe(true);
    expect((await root.removeAll()).isOk()).toBe(true);
  });
});
