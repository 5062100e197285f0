// An example for CI users: one seeded sheet for the run, and each test works on a fork
// of it (`POST /v1/sheets/{id}/fork {"at", "name"}`), so tests share the seed's state
// but never each other's writes, and none pays for re-creating the seed. Here the seed
// is written through the API in beforeAll; with `serve --seed DIR` (startSheetlog's
// `seed`) it would be in the server from the start.
//
// The fork route is newer than some binaries: when the server answers 404 for it, the
// tests are skipped with that reason (not failed).
import { beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import type { TestContext } from "vitest";

import { SheetlogEventLog } from "../src/index.js";
import type { LogEntry } from "../src/index.js";

interface Row extends LogEntry {
  type: "row";
  n: number;
}

const url = inject("sheetlogUrl");
let seed = ""; // the seeded sheet's id
let seedLast = 0; // the seq forks are taken at: the seed's last entry (`at` is inclusive)
let forkMissing = "";

async function post(path: string, body: unknown) {
  return fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

// A fork of the seed at its head, named after the test: the test's own sheet.
async function forkSeed(name: string): Promise<string> {
  const response = await post(`/v1/sheets/${seed}/fork`, { at: seedLast, name });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

beforeAll(async () => {
  const log = await SheetlogEventLog.create<Row>({ url, name: "seed" });
  for (let n = 0; n < 5; n++) expect((await log.addEntry({ type: "row", n }, BigInt(n))).isOk()).toBe(true);
  seed = log.sheetId!;
  const info = (await (await fetch(`${url}/v1/sheets/${seed}`)).json()) as { next_seq: number };
  seedLast = info.next_seq - 1;
  // The route exists if forking the seed's first entry is not a 404 (the seed exists,
  // so a 404 here is the route's, not the sheet's).
  const probe = await post(`/v1/sheets/${seed}/fork`, { at: 1, name: "probe" });
  if (probe.status === 404) {
    forkMissing = `the server has no POST /v1/sheets/{id}/fork yet (404: ${await probe.text()})`;
  }
});

beforeEach((context: TestContext) => {
  if (forkMissing !== "") context.skip(forkMissing);
});

describe("a fork of the seed per test", () => {
  it("starts with the seed's entries and writes only to itself", async () => {
    const mine = await forkSeed("test A");
    const log = new SheetlogEventLog<Row>({ url, sheetId: mine });
    const page = (await log.query(0n, "end"))._unsafeUnwrap();
    expect(page.entries.map((e) => e.n)).toEqual([0, 1, 2, 3, 4]);
    expect((await log.addEntry({ type: "row", n: 5 }, 5n)).isOk()).toBe(true);

    const source = new SheetlogEventLog<Row>({ url, sheetId: seed });
    expect((await source.query(0n, "end"))._unsafeUnwrap().entries.length).toBe(5);
  });

  it("gets a fresh fork however the other tests changed theirs", async () => {
    const mine = await forkSeed("test B");
    const log = new SheetlogEventLog<Row>({ url, sheetId: mine });
    // Entry 5 is free here even though test A wrote its own entry 5.
    expect((await log.addEntry({ type: "row", n: 50 }, 5n)).isOk()).toBe(true);
    const page = (await log.query(0n, "end"))._unsafeUnwrap();
    expect(page.entries.map((e) => e.n)).toEqual([0, 1, 2, 3, 4, 50]);
  });
});
