// infinisheet's EventLog<T> over a sheetlog sheet: one HTTP request per call (plus the
// sheet's creation on a new log's first call, and a fetch for each entry body over the
// 4 MiB a page of GET .../entries?body=inline carries).
//
// Sequence ids: a sheetlog sheet starts with the server's entry 0 (a Snapshot entry,
// the empty sheet), so infinisheet's id n is sheetlog's seq n + 1 and entry 0 is never
// shown. The sheet must be one whose snapshots the client manages (snapshot_every 0,
// as this class makes it): the server then inserts no entry after entry 0, and every
// seq is the client's. Without a sheetId the log creates its sheet on its first call
// (infinisheet's suites and apps make a log synchronously).
//
// An entry travels as {"type", "body", "snapshot"?, "history"?, "pending"?}: `type` and
// the metadata fields stay at the top level; every other property of the entry is the
// body (so infinisheet's SetCellValueAndFormat {row, column, value, format} lands on
// sheetlog's built-in type of that name, which the server's cells reads understand).
import { conflictError, rangeError, storageError } from "./errors.js";
import { describe, Http, type JsonReply, type SheetlogConnection } from "./http.js";
import { err, ok, ResultAsync, type Result } from "./result.js";
import type {
  AddEntryError,
  AddEntryValue,
  EventLog,
  LogEntry,
  LogMetadata,
  MetadataError,
  QueryError,
  QueryValue,
  SequenceId,
  SnapshotValue,
  TruncateError,
} from "./types.js";

const METADATA_FIELDS = ["snapshot", "history", "pending"] as const;

export interface SheetlogEventLogOptions extends SheetlogConnection {
  /**
   * The sheet (its UUID) holding the log. Omitted: the log creates a new sheet
   * (snapshot_every 0) on its first call, and `sheetId` is set from then on.
   */
  sheetId?: string | undefined;
  /** Display name of a sheet the log creates. */
  name?: string | undefined;
  /** Most entries one query returns (1..999). Default 1000 - 1. */
  pageSize?: number | undefined;
}

/** Options of SheetlogEventLog.create (a new sheet: no sheetId). */
export type CreateSheetOptions = Omit<SheetlogEventLogOptions, "sheetId">;

// The server's entry JSON (api.md "Entries").
interface ServerEntry {
  seq: number;
  type: string;
  body: unknown;
  // A body kept in the blob store: `url` is a presigned GET of it.
  external?: { key: string; size: number | null; url: string | null } | null;
  snapshot?: string | null;
  history?: string | null;
  pending?: string | null;
}

// last_snapshot of entry reads and appends: `snapshot` is the blob id of a client-set
// snapshot (absent for the server's own Snapshot entries).
interface ServerSnapshotRef {
  seq: number;
  root: string | null;
  snapshot?: string;
}

// A failed HTTP exchange outside a call's own reply (creating the sheet, fetching an
// external body), carried to the call's StorageError with its status.
class HttpFailure extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export class SheetlogEventLog<T extends LogEntry> implements EventLog<T> {
  readonly #http: Http;
  readonly #pageSize: number;
  readonly #name: string;
  #sheetId: string | undefined;
  // The creation in flight, shared by the calls that wait for it.
  #creating: Promise<string> | undefined;

  constructor(options: SheetlogEventLogOptions) {
    this.#sheetId = options.sheetId;
    this.#name = options.name ?? "";
    this.#http = new Http(options);
    this.#pageSize = options.pageSize ?? 999;
    if (!Number.isInteger(this.#pageSize) || this.#pageSize < 1 || this.#pageSize > 999) {
      throw new RangeError("pageSize must be an integer in 1..999");
    }
  }

  /** The sheet's id; undefined until a log made without one has created its sheet. */
  get sheetId(): string | undefined {
    return this.#sheetId;
  }

  /**
   * The sheet's id, creating the sheet first when this log has none yet (one POST
   * /v1/sheets, shared by concurrent callers; after a failure the next call tries
   * again). Rejects with the creation's error.
   */
  open(): Promise<string> {
    if (this.#sheetId !== undefined) return Promise.resolve(this.#sheetId);
    this.#creating ??= this.#http
      .json("POST", "/v1/sheets", { name: this.#name, snapshot_every: 0 })
      .then((reply) => {
        if (reply.status !== 201) {
          throw new HttpFailure(
            describe("creating a sheet", reply.status, reply.error),
            reply.status,
          );
        }
        this.#sheetId = reply.body.id as string;
        return this.#sheetId;
      })
      .finally(() => {
        this.#creating = undefined;
      });
    return this.#creating;
  }

  /** Creates a new sheet for a client-managed log (snapshot_every 0) and opens it. */
  static async create<T extends LogEntry>(
    options: CreateSheetOptions,
  ): Promise<SheetlogEventLog<T> & { readonly sheetId: string }> {
    const log = new SheetlogEventLog<T>({ ...options, sheetId: undefined });
    await log.open();
    return log as SheetlogEventLog<T> & { readonly sheetId: string };
  }

  async #path(): Promise<string> {
    return "/v1/sheets/" + encodeURIComponent(await this.open());
  }

  addEntry(
    entry: T,
    sequenceId: SequenceId,
    snapshotId?: SequenceId,
  ): ResultAsync<AddEntryValue, AddEntryError> {
    const request: Record<string, unknown> = { type: entry.type };
    const body: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(entry)) {
      if (key === "type" || value === undefined) continue;
      if ((METADATA_FIELDS as readonly string[]).includes(key)) {
        request[key] = value;
      } else {
        body[key] = value;
      }
    }
    request.body = body;
    request.expect_seq = seqOf(sequenceId < 0n ? -1n : sequenceId);
    return ResultAsync.from(async (): Promise<Result<AddEntryValue, AddEntryError>> => {
      if (sequenceId < 0n) {
        return err(conflictError("sequence id " + sequenceId + " is negative", -1n));
      }
      const reply = await this.#http.json("POST", (await this.#path()) + "/entries", request);
      if (reply.status === 201) {
        return ok({ lastSnapshot: changedSnapshot(reply.body.last_snapshot, snapshotId) });
      }
      if (reply.status === 409 && reply.error?.next_seq !== undefined) {
        return err(
          conflictError(reply.error.message, idOf(reply.error.next_seq)),
        );
      }
      return err(storageFailure("addEntry", reply));
    }, thrown);
  }

  setMetadata(sequenceId: SequenceId, metadata: LogMetadata): ResultAsync<void, MetadataError> {
    // Only the metadata fields the caller names, even as undefined (which clears).
    const patch: Record<string, string | null> = {};
    for (const field of METADATA_FIELDS) {
      if (field in metadata) patch[field] = metadata[field] ?? null;
    }
    return ResultAsync.from(async (): Promise<Result<void, MetadataError>> => {
      if (sequenceId < 0n) return err(rangeError("sequence id " + sequenceId + " is negative"));
      const reply = await this.#http.json(
        "PATCH",
        (await this.#path()) + "/entries/" + seqOf(sequenceId),
        patch,
      );
      if (reply.status === 200) return ok(undefined);
      if (isRange(reply)) return err(rangeError(reply.error?.message ?? "out of range"));
      return err(storageFailure("setMetadata", reply));
    }, thrown);
  }

  query(
    start: SequenceId | "snapshot" | "start",
    end: SequenceId | "end",
    snapshotId?: SequenceId,
  ): ResultAsync<QueryValue<T>, QueryError> {
    return ResultAsync.from(async (): Promise<Result<QueryValue<T>, QueryError>> => {
      if ((typeof start === "bigint" && start < 0n) || (typeof end === "bigint" && end < 0n)) {
        return err(rangeError("sequence ids are never negative"));
      }
      // From the start or a snapshot, the server's entry 0 may come first: one more
      // entry is asked for, so that a full page is still pageSize of the client's.
      const fromName = typeof start === "bigint" ? String(seqOf(start)) : start;
      const limit = typeof start === "bigint" ? this.#pageSize : this.#pageSize + 1;
      const to = typeof end === "bigint" ? String(seqOf(end)) : "end";
      // body=inline: bodies the server keeps in its blob store (over its inline limit)
      // come in the reply, a page holding at most 4 MiB of them (it ends early, not
      // complete, rather than pass that).
      const reply = await this.#http.json(
        "GET",
        `${await this.#path()}/entries?from=${fromName}&to=${to}&limit=${limit}&body=inline`,
      );
      if (reply.status !== 200) {
        if (isRange(reply)) return err(rangeError(reply.error?.message ?? "out of range"));
        return err(storageFailure("query", reply));
      }
      const served = reply.body.entries as ServerEntry[];
      const mine = served.filter((e) => e.seq >= 1);
      const page = mine.slice(0, this.#pageSize);
      // A body over 4 MiB by itself stays a reference: fetched here, one request each.
      for (const e of page) {
        if (e.body === null && e.external) e.body = await this.#externalBody(e.external.url);
      }
      const entries = page.map((e) => entryOf<T>(e));
      const startSequenceId = idOf(Math.max(reply.body.from as number, 1));
      return ok({
        startSequenceId,
        endSequenceId: startSequenceId + BigInt(entries.length),
        isComplete: (reply.body.complete as boolean) && entries.length === mine.length,
        lastSnapshot: changedSnapshot(reply.body.last_snapshot, snapshotId),
        entries,
      });
    }, thrown);
  }

  truncate(start: SequenceId): ResultAsync<void, TruncateError> {
    return ResultAsync.from(async (): Promise<Result<void, TruncateError>> => {
      if (start < 0n) return err(rangeError("sequence id " + start + " is negative"));
      const reply = await this.#http.json("POST", (await this.#path()) + "/truncate", {
        before_seq: seqOf(start),
      });
      if (reply.status === 200) return ok(undefined);
      if (isRange(reply)) return err(rangeError(reply.error?.message ?? "out of range"));
      return err(storageFailure("truncate", reply));
    }, thrown);
  }

  // An entry body from the blob store through its presigned URL, parsed as the server
  // parses it for ?body=inline (JSON, else the text).
  async #externalBody(url: string | null): Promise<unknown> {
    if (url === null) throw new Error("an entry's external body has no URL");
    const reply = await this.#http.bytes("GET", url);
    if (reply.status !== 200) {
      throw new HttpFailure(
        describe("reading an entry body", reply.status, reply.error),
        reply.status,
      );
    }
    const text = new TextDecoder().decode(reply.bytes);
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
}

// infinisheet id n <-> sheetlog seq n + 1 (seq 0 is the server's own first entry).
function seqOf(id: SequenceId): number {
  return Number(id + 1n);
}
function idOf(seq: number): SequenceId {
  return BigInt(seq) - 1n;
}

// The entry as infinisheet sees it: type, the body's properties, and each metadata
// field the server returned (null, a cleared field, becomes a property set to
// undefined, as infinisheet's own log leaves it).
function entryOf<T extends LogEntry>(e: ServerEntry): T {
  const entry: Record<string, unknown> = { type: e.type };
  if (typeof e.body === "object" && e.body !== null && !Array.isArray(e.body)) {
    Object.assign(entry, e.body);
  } else if (e.body !== null && e.body !== undefined) {
    entry.body = e.body;
  }
  for (const field of METADATA_FIELDS) {
    if (field in e) entry[field] = e[field] ?? undefined;
  }
  return entry as T;
}

// The newest client-set snapshot the server reports (its entry's id and blob id),
// when the caller named the one it knows and that is a different one (infinisheet:
// "returned if ... snapshotId argument and most recent snapshot is different"). The
// server's own Snapshot entries (entry 0) carry no blob id of the client's: not shown.
function changedSnapshot(
  last: ServerSnapshotRef | null | undefined,
  known: SequenceId | undefined,
): SnapshotValue | undefined {
  if (known === undefined || !last || typeof last.snapshot !== "string" || last.seq < 1) {
    return undefined;
  }
  const sequenceId = idOf(last.seq);
  return sequenceId === known ? undefined : { sequenceId, blobId: last.snapshot };
}

function isRange(reply: JsonReply): boolean {
  return (
    (reply.status === 400 && reply.error?.code === "RangeError") || reply.status === 410
  );
}

function storageFailure(what: string, reply: JsonReply) {
  return storageError(describe(what, reply.status, reply.error), reply.status);
}

function thrown(error: unknown) {
  if (error instanceof HttpFailure) return storageError(error.message, error.status);
  return storageError(error instanceof Error ? error.message : String(error));
}
