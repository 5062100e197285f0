// Adapters to infinisheet's own result classes. infinisheet-types declares EventLog,
// BlobStore and BlobDir with its ResultAsync class, which extends neverthrow's: a class
// with private fields, so TypeScript compares it nominally, and the ResultAsync this
// package returns (structurally alike, no dependency) does not satisfy those
// declarations. These wrappers return the app's own ResultAsync, built from the app's
// own `ok`/`err`: the app passes them in (`{ ResultAsync, ok, err }` imported from
// @candidstartup/infinisheet-types), so this package still loads nothing at run time.
//
// The result type is the one the call site expects (inferred from the variable or
// parameter the adapter's value goes to): it cannot be checked against infinisheet's
// declarations here, which this package does not import; the wrapper has exactly their
// methods, each returning `new ResultAsync(promise of ok(value) | err(error))`.
import type { Result, ResultAsync } from "./result.js";
import type { BlobDir, BlobStore, EventLog, LogEntry } from "./types.js";

/** infinisheet's ResultAsync class and its ok/err (or neverthrow's). */
export interface InfinisheetResultKit {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  ResultAsync: new (promise: Promise<any>) => unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  ok: (value: any) => unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  err: (error: any) => unknown;
}

// One of this package's results as the app's ResultAsync (ours never rejects).
function rewrap(kit: InfinisheetResultKit, result: ResultAsync<unknown, unknown>): unknown {
  return new kit.ResultAsync(
    Promise.resolve(result).then((r: Result<unknown, unknown>) =>
      r.isOk() ? kit.ok(r.value) : kit.err(r.error),
    ),
  );
}

/**
 * `log` (a SheetlogEventLog) as infinisheet's `EventLog<T>`:
 * `const eventLog: EventLog<SpreadsheetLogEntry> = infinisheetEventLog(log, { ResultAsync, ok, err })`.
 */
export function infinisheetEventLog<L = unknown>(
  log: EventLog<LogEntry>,
  kit: InfinisheetResultKit,
): L {
  const adapted = {
    addEntry: (...args: Parameters<EventLog<LogEntry>["addEntry"]>) =>
      rewrap(kit, log.addEntry(...args)),
    setMetadata: (...args: Parameters<EventLog<LogEntry>["setMetadata"]>) =>
      rewrap(kit, log.setMetadata(...args)),
    query: (...args: Parameters<EventLog<LogEntry>["query"]>) =>
      rewrap(kit, log.query(...args)),
    truncate: (...args: Parameters<EventLog<LogEntry>["truncate"]>) =>
      rewrap(kit, log.truncate(...args)),
  };
  return adapted as L;
}

/**
 * `store` (a SheetlogBlobStore) as infinisheet's `BlobStore<unknown>`, its directories
 * wrapped likewise:
 * `const blobStore: BlobStore<unknown> = infinisheetBlobStore(store, { ResultAsync, ok, err })`.
 */
export function infinisheetBlobStore<S = unknown>(
  store: BlobStore<string>,
  kit: InfinisheetResultKit,
): S {
  const adapted = {
    getRootDir: () => rewrap(kit, store.getRootDir().map((dir) => adaptDir(dir, kit))),
  };
  return adapted as S;
}

function adaptDir(dir: BlobDir<string>, kit: InfinisheetResultKit): unknown {
  return {
    readBlob: (name: string) => rewrap(kit, dir.readBlob(name)),
    writeBlob: (name: string, content: Uint8Array) => rewrap(kit, dir.writeBlob(name, content)),
    removeBlob: (name: string) => rewrap(kit, dir.removeBlob(name)),
    getDir: (name: string) => rewrap(kit, dir.getDir(name).map((sub) => adaptDir(sub, kit))),
    query: (continuation?: string) => rewrap(kit, dir.query(continuation)),
    removeAll: () => rewrap(kit, dir.removeAll()),
  };
}
