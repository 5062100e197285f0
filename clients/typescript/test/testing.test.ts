// The test helper itself (src/testing.ts): a server of its own per case (not the run's
// shared one), its URL, the token it is given, stop(), and the refusals a CI user meets
// first (no binary, a flag the binary does not know). Starting from a seed
// (`serve --seed DIR`) runs when the binary has that flag and is skipped, saying so,
// when it does not.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { afterEach, describe, expect, it } from "vitest";

import { SheetlogStartError, startSheetlog } from "../src/testing.js";
import type { SheetlogServer, StartSheetlogOptions } from "../src/testing.js";

const binary = process.env.SHEETLOG_BINARY ?? resolve(dirname(fileURLToPath(import.meta.url)), "../../../build/asan/sheetlog");
const env = { ...process.env, ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? "detect_leaks=0" };

let servers: SheetlogServer[] = [];
async function start(options: StartSheetlogOptions = {}): Promise<SheetlogServer> {
  const server = await startSheetlog({ binary, env, ...options });
  servers.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  servers = [];
});

async function createSheet(url: string, name: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/v1/sheets`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ name }),
  });
  return response;
}

describe("startSheetlog", () => {
  it("serves on a free loopback port until stop()", async () => {
    const server = await start();
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    expect((await createSheet(server.url, "helper")).status).toBe(201);
    await server.stop();
    await expect(fetch(`${server.url}/readyz`)).rejects.toThrow();
    await server.stop(); // a second stop() is harmless
  });

  it("gives each call a server of its own", async () => {
    const [a, b] = await Promise.all([start(), start()]);
    expect(a!.port).not.toBe(b!.port);
    expect((await createSheet(a!.url, "only in a")).status).toBe(201);
    const listed = (await (await fetch(`${b!.url}/v1/sheets`)).json()) as { sheets: unknown[] };
    expect(listed.sheets).toEqual([]);
  });

  it("passes the token (the server then requires it on /v1/*)", async () => {
    const server = await start({ token: "test-token" });
    expect((await createSheet(server.url, "no token")).status).toBe(401);
    const authorized = await createSheet(server.url, "token", { authorization: "Bearer test-token" });
    expect(authorized.status).toBe(201);
  });

  it("names the missing binary", async () => {
    await expect(startSheetlog({ binary: "/nonexistent/sheetlog" })).rejects.toThrow(
      "sheetlog binary not found at /nonexistent/sheetlog",
    );
  });

  it("fails, not hangs, when the binary cannot be run", async () => {
    const scratch = mkdtempSync(join(tmpdir(), "sheetlog-noexec-"));
    try {
      const file = join(scratch, "sheetlog");
      writeFileSync(file, "not a program", { mode: 0o644 });
      await expect(startSheetlog({ binary: file })).rejects.toThrow("could not be started");
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it("fails with the server's own words when it refuses to start", async () => {
    const failure = await startSheetlog({ binary, env, args: ["--no-such-flag"] }).catch((e) => e);
    expect(failure).toBeInstanceOf(SheetlogStartError);
    expect(String(failure.message)).toContain("exited during start-up");
    expect(String(failure.message)).toContain("unknown flag --no-such-flag");
  });

  it("starts from a seed directory (a sheetlog backup)", async (context) => {
    const scratch = mkdtempSync(join(tmpdir(), "sheetlog-seed-"));
    try {
      const source = await start();
      expect((await createSheet(source.url, "seeded")).status).toBe(201);
      const backup = join(scratch, "backup");
      const taken = await fetch(`${source.url}/v1/admin/backup`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ to: backup }),
      });
      expect(taken.status, await taken.text()).toBe(200);

      const seeded = await startSheetlog({ binary, env, seed: backup }).catch((e) => e);
      if (seeded instanceof SheetlogStartError && seeded.output.includes("unknown flag --seed")) {
        context.skip(`this binary has no \`serve --seed\` yet (${binary})`);
      }
      if (seeded instanceof Error) throw seeded;
      servers.push(seeded);
      const listed = (await (await fetch(`${seeded.url}/v1/sheets`)).json()) as {
        sheets: { name: string }[];
      };
      expect(listed.sheets.map((s) => s.name)).toEqual(["seeded"]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
