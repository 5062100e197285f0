// vitest global setup: runs the real sheetlog binary (`serve --in-memory` on a free
// loopback port) for the whole test run and hands its URL to the tests
// (inject("sheetlogUrl")). The binary is $SHEETLOG_BINARY, else the repository's
// ASan build (build/asan/sheetlog). Waiting for it to come up is bounded by real time
// (the server writes its port to --port-file once it listens; /readyz then says
// ready); nothing here waits on the server's clock.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

export default async function setup({ provide }) {
  const binary =
    process.env.SHEETLOG_BINARY ?? resolve(here, "../../../build/asan/sheetlog");
  if (!existsSync(binary)) {
    throw new Error(`sheetlog binary not found at ${binary} (build it or set SHEETLOG_BINARY)`);
  }
  const scratch = mkdtempSync(join(tmpdir(), "sheetlog-client-"));
  const portFile = join(scratch, "port");
  const server = spawn(
    binary,
    // --max-request: room for an entry body over the 4 MiB a page of GET .../entries
    // inlines (event-log.test.ts, entries of any size).
    [
      "serve",
      "--in-memory",
      "--listen",
      "127.0.0.1:0",
      "--port-file",
      portFile,
      "--max-request",
      "6000000",
    ],
    {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? "detect_leaks=0" },
    },
  );
  let stderr = "";
  server.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk.toString()).slice(-8000);
  });
  let exited = null;
  server.on("exit", (code, signal) => {
    exited = { code, signal };
  });

  const deadline = Date.now() + 60_000;
  let url = null;
  while (Date.now() < deadline && exited === null) {
    const port = existsSync(portFile) ? readFileSync(portFile, "utf8").trim() : "";
    if (port !== "") {
      try {
        const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
        if (ready.status === 200) {
          url = `http://127.0.0.1:${port}`;
          break;
        }
      } catch {
        // not listening yet
      }
    }
    await new Promise((r) => setTimeout(r, 50)); // polling for start-up, bounded above
  }
  if (url === null) {
    server.kill("SIGKILL");
    rmSync(scratch, { recursive: true, force: true });
    throw new Error(
      `sheetlog did not come up (${JSON.stringify(exited)}):\n${stderr}`,
    );
  }
  provide("sheetlogUrl", url);

  return async () => {
    if (exited === null) {
      const stopped = new Promise((r) => server.on("exit", r));
      server.kill("SIGTERM");
      await stopped;
    }
    rmSync(scratch, { recursive: true, force: true });
  };
}
