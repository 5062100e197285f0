// vitest global setup: one real sheetlog server (`serve --in-memory` on a free loopback
// port) for the whole run, through the package's own test helper (src/testing.ts), so
// the helper runs in every suite run. The tests read its URL with inject("sheetlogUrl").
// The binary is $SHEETLOG_BINARY, else the repository's ASan build (build/asan/sheetlog).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { sheetlogGlobalSetup } from "../src/testing.js";

const here = dirname(fileURLToPath(import.meta.url));

export default sheetlogGlobalSetup({
  binary: process.env.SHEETLOG_BINARY ?? resolve(here, "../../../build/asan/sheetlog"),
  // Room for an entry body over the 4 MiB a page of GET .../entries inlines
  // (event-log.test.ts, entries of any size).
  args: ["--max-request", "6000000"],
  // An ASan binary's leak report at exit is not this suite's subject.
  env: { ...process.env, ASAN_OPTIONS: process.env.ASAN_OPTIONS ?? "detect_leaks=0" },
});
