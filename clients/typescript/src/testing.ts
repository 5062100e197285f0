/// <reference types="node" preserve="true" />
// Test helpers (Node only; the `sheetlog-infinisheet/testing` entry point, kept out of
// the main one so the package stays free of Node's modules in browsers): a throwaway
// sheetlog server for a test run.
//
// startSheetlog() runs `sheetlog serve --in-memory` on a free loopback port (the server
// binds port 0 and writes the port it got to --port-file: no race with other processes
// for a port picked in advance), waits until GET /readyz answers 200, and returns its
// URL and a stop() that sends SIGTERM and waits for the exit. With `seed`, the server
// starts from that directory (`--seed DIR`: a `sheetlog backup` or a folder of fixture
// files, loaded before /readyz answers); without it, the flag is not passed, so binaries
// older than the flag work too. Nothing is kept: the data directory is a temporary one
// the server removes at exit.
//
// Global setup for a whole run: `sheetlogGlobalSetup` (vitest's globalSetup signature;
// jest's globalSetup/globalTeardown through `startForRun`/`stopForRun`), or
// startSheetlog() in node:test's before()/after().
import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

export interface StartSheetlogOptions {
  /** The binary: default $SHEETLOG_BINARY, else `sheetlog` on PATH. */
  binary?: string;
  /** A directory to start from (`serve --seed DIR`); omitted: an empty server. */
  seed?: string;
  /** Bearer token the server requires on /v1/* (given as SHEETLOG_TOKEN, not argv). */
  token?: string;
  /** More `serve` flags, e.g. ["--max-request", "6000000"] or ["--clock", "manual"]. */
  args?: string[];
  /** The server's environment (default: this process's; SHEETLOG_TOKEN set by `token`). */
  env?: NodeJS.ProcessEnv;
  /** How long start-up may take before it is an error (default 60 s, real time). */
  startTimeoutMs?: number;
  /** Where the server's stdout and stderr go: "pipe" keeps the last 8 kB for errors
   * (default), "inherit" shows them. */
  output?: "pipe" | "inherit";
}

export interface SheetlogServer {
  /** e.g. http://127.0.0.1:40123 (no trailing slash). */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** The server's last output (with output "pipe"), for a failing test's message. */
  output(): string;
  /** SIGTERM, then waits for the exit (the server finishes in-flight requests first).
   * Resolves once stopped; calling it again is harmless. */
  stop(): Promise<void>;
}

/** Thrown when the server exits or does not answer /readyz in time. */
export class SheetlogStartError extends Error {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(output === "" ? message : `${message}:\n${output}`);
    this.name = "SheetlogStartError";
  }
}

function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir !== "" && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The binary startSheetlog runs: $SHEETLOG_BINARY, else `sheetlog` on PATH. */
export function sheetlogBinary(explicit?: string): string {
  const binary = explicit ?? process.env.SHEETLOG_BINARY ?? findOnPath("sheetlog");
  if (binary === undefined || !existsSync(binary)) {
    throw new SheetlogStartError(
      binary === undefined
        ? "no sheetlog binary: set SHEETLOG_BINARY or put sheetlog on PATH"
        : `sheetlog binary not found at ${binary}`,
      "",
    );
  }
  return binary;
}

// Servers still running when this process exits (a test runner that dies, or forgets
// stop()): killed then, so no server outlives its run.
const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function killOnExit(child: ChildProcess) {
  running.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => {
      for (const c of running) c.kill("SIGKILL");
    });
  }
}

export async function startSheetlog(options: StartSheetlogOptions = {}): Promise<SheetlogServer> {
  const binary = sheetlogBinary(options.binary);
  const scratch = mkdtempSync(join(tmpdir(), "sheetlog-test-"));
  const portFile = join(scratch, "port");
  const args = ["serve", "--in-memory", "--listen", "127.0.0.1:0", "--port-file", portFile];
  if (options.seed !== undefined) args.push("--seed", options.seed);
  args.push(...(options.args ?? []));
  const env = { ...(options.env ?? process.env) };
  if (options.token !== undefined) env.SHEETLOG_TOKEN = options.token;
  const piped = (options.output ?? "pipe") === "pipe";
  const child = spawn(binary, args, {
    stdio: ["ignore", piped ? "pipe" : "inherit", piped ? "pipe" : "inherit"],
    env,
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-8000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  let exited: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exit = new Promise<void>((resolve) => {
    child.on("exit", (code, signal) => {
      exited = { code, signal };
      running.delete(child);
      rmSync(scratch, { recursive: true, force: true });
      resolve();
    });
  });
  let spawnError: Error | null = null;
  child.on("error", (error) => {
    spawnError = error;
  });
  killOnExit(child);

  const stop = async () => {
    if (exited === null && spawnError === null) {
      child.kill("SIGTERM");
      await exit;
    }
    rmSync(scratch, { recursive: true, force: true });
  };

  // Bounded by real time: the port file appears once the server listens, /readyz says
  // 200 once it serves (after a seed is loaded).
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  while (Date.now() < deadline && exited === null && spawnError === null) {
    const port = existsSync(portFile) ? readFileSync(portFile, "utf8").trim() : "";
    if (port !== "") {
      try {
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
        await ready.body?.cancel();
        if (ready.status === 200) {
          return {
            url: `http://127.0.0.1:${port}`,
            port: Number(port),
            pid: child.pid ?? -1,
            output: () => output,
            stop,
          };
        }
      } catch {
        // not accepting yet
      }
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const why =
    spawnError !== null
      ? `sheetlog could not be started (${binary}): ${(spawnError as Error).message}`
      : exited !== null
        ? `sheetlog exited during start-up (${JSON.stringify(exited)}; ${binary} ${args.join(" ")})`
        : `sheetlog did not answer /readyz within ${options.startTimeoutMs ?? 60_000} ms`;
  if (exited === null && spawnError === null) {
    child.kill("SIGKILL");
    await exit;
  }
  running.delete(child);
  rmSync(scratch, { recursive: true, force: true });
  throw new SheetlogStartError(why, output);
}

/**
 * vitest's globalSetup: `export default sheetlogGlobalSetup({ ... })` in the file that
 * vitest.config's `test.globalSetup` names. Starts one server for the run, hands its URL
 * to the tests as `inject("sheetlogUrl")` and as $SHEETLOG_URL (which the sheetlog CLI
 * reads too), and stops it after the run.
 */
export function sheetlogGlobalSetup(options: StartSheetlogOptions = {}) {
  return async (context?: { provide?: (key: "sheetlogUrl", value: string) => void }) => {
    const server = await startSheetlog(options);
    process.env.SHEETLOG_URL = server.url;
    context?.provide?.("sheetlogUrl", server.url);
    return () => server.stop();
  };
}

// jest runs globalSetup and globalTeardown as separate modules in one process; the
// server is handed from one to the other through globalThis.
const runKey = Symbol.for("sheetlog-infinisheet/testing/server");

/** jest's globalSetup: starts the run's server and sets $SHEETLOG_URL for the tests. */
export async function startForRun(options: StartSheetlogOptions = {}): Promise<SheetlogServer> {
  const server = await startSheetlog(options);
  (globalThis as Record<symbol, unknown>)[runKey] = server;
  process.env.SHEETLOG_URL = server.url;
  return server;
}

/** jest's globalTeardown: stops the server startForRun started (if any). */
export async function stopForRun(): Promise<void> {
  const server = (globalThis as Record<symbol, unknown>)[runKey] as SheetlogServer | undefined;
  delete (globalThis as Record<symbol, unknown>)[runKey];
  await server?.stop();
}
