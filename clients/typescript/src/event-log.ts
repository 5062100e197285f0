// infinisheet's EventLog<T> over a sheetlog sheet: one HTTP request per call.
//
// Sequence ids: a sheetlog sheet starts with the server's entry 0 (a Snapshot entry,
// the empty sheet), so infinisheet's id n is sheetlog's seq n + 1 and entry 0 is never
// shown. The sheet must be one whose snapshots the client manages (snapshot_every 0,
// as SheetlogEventLog.create makes it): the server then inserts no entry after entry 0,
// and every seq is the client's.
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
  TruncateError,
} from "./types.js";

const METADATA_FIELDS = ["snapshot", "history", "pending"] as const;

export interface SheetlogEventLogOptions extends SheetlogConnection {
  /** The sheet (its UUID) holding the log. */
  sheetId: string;
  /** Most entries one query returns (1..999). Default 1000 - 1. */
  pageSize?: number | undefined;
}

export interface CreateSheetOptions extends SheetlogConnection {
  /** Display name of the new sheet. */
  name?: string | undefined;
  pageSize?: number | undefined;
}

// The server's entry JSON (api.md "Entries").
interface ServerEntry {
  seq: number;
  type: string;
  body: unknown;
  snapshot?: string | null;
  history?: string | null;
  pending?: string | null;
}

interface ServerSnapshotRef {
  seq: number;
  root: string | null;
  snapshot?: string;
}

export class SheetlogEventLog<T extends LogEntry> implements EventLog<T> {
  readonly sheetId: string;
  readonly #http: Http;
  readonly #pageSize: number;
  readonly #path: string;

  constructor(options: SheetlogEventLogOptions) {
    this.sheetId = options.sheetId;
    this.#http = new Http(options);
    this.#pageSize = options.pageSize ?? 999;
    if (!Number.isInteger(this.#pageSize) || this.#pageSize < 1 || this.#pageSize > 999) {
      throw new RangeError("pageSize must be an integer in 1..999");
    }
    this.#path = "/v1/sheets/" + encodeURIComponent(options.sheetId);
  }

  /** Creates a new sheet for a client-managed log (snapshot_every 0) and opens it. */
  static async create<T extends LogEntry>(
    options: CreateSheetOptions,
  ): Promise<SheetlogEventLog<T>> {
    const reply = await new Http(options).json("POST", "/v1/sheets", {
      name: options.name ?? "",
      snapshot_every: 0,
    });
    if (reply.status !== 201) {
      throw new Error(describe("creating a sheet", reply.status, reply.error));
    }
    return new SheetlogEventLog<T>({ ...options, sheetId: reply.body.id as string });
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
      const reply = await this.#http.json("POST", this.#path + "/entries", request);
      if (reply.status === 201) {
        return ok({ snapshotId: changedSnapshot(reply.body.last_snapshot, snapshotId) });
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
        this.#path + "/entries/" + seqOf(sequenceId),
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
      const reply = await this.#http.json(
        "GET",
        `${this.#path}/entries?from=${fromName}&to=${to}&limit=${limit}`,
      );
      if (reply.status !== 200) {
        if (isRange(reply)) return err(rangeError(reply.error?.message ?? "out of range"));
        return err(storageFailure("query", reply));
      }
      const served = reply.body.entries as ServerEntry[];
      const mine = served.filter((e) => e.seq >= 1);
      const entries = mine.slice(0, this.#pageSize).map((e) => entryOf<T>(e));
      const startSequenceId = idOf(Math.max(reply.body.from as number, 1));
      return ok({
        startSequenceId,
        endSequenceId: startSequenceId + BigInt(entries.length),
        isComplete: (reply.body.complete as boolean) && entries.length === mine.length,
        snapshotId: changedSnapshot(reply.body.last_snapshot, snapshotId),
        entries,
      });
    }, thrown);
  }

  truncate(start: SequenceId): ResultAsync<void, TruncateError> {
    return ResultAsync.from(async (): Promise<Result<void, TruncateError>> => {
      if (start < 0n) return err(rangeError("sequence id " + start + " is negative"));
      const reply = await this.#http.json("POST", this.#path + "/truncate", {
        before_seq: seqOf(start),
      });
      if (reply.status === 200) return ok(undefined);
      if (isRange(reply)) return err(rangeError(reply.error?.message ?? "out of range"));
      return err(storageFailure("truncate", reply));
    }, thrown);
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

// The client-managed snapshot the server reports, as an id, when the caller knew of a
// different one (infinisheet: "returned if ... the most recent snapshot is different").
function changedSnapshot(
  last: ServerSnapshotRef | null | undefined,
  known: SequenceId | undefined,
): SequenceId | undefined {
  if (known === undefined || !last || last.snapshot === undefined || last.seq < 1) {
    return undefined;
  }
  const id = idOf(last.seq);
  return id === known ? undefined : id;
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
  return storageError(error instanceof Error ? error.message : String(error));
}
