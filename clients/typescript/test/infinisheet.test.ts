// The adapters to infinisheet's own ResultAsync (src/infinisheet.ts), with a class made
// as infinisheet-types makes its own (a subclass of neverthrow's ResultAsync, which is
// nominal) and interfaces declared with it as infinisheet declares EventLog, BlobStore
// and BlobDir: the assignments below type-check only through the adapters, and the
// results behave as neverthrow's (andThen, match, instanceof).
import * as neverthrow from "neverthrow";
import { describe, expect, inject, it } from "vitest";

import {
  infinisheetBlobStore,
  infinisheetEventLog,
  SheetlogBlobStore,
  SheetlogEventLog,
} from "../src/index.js";
import type {
  AddEntryError,
  AddEntryValue,
  BlobDirEntries,
  DirQueryError,
  GetDirError,
  LogEntry,
  LogMetadata,
  MetadataError,
  QueryError,
  QueryValue,
  ReadBlobError,
  RemoveAllBlobDirError,
  RemoveBlobError,
  SequenceId,
  TruncateError,
  WriteBlobError,
} from "../src/index.js";

class AppResultAsync<T, E> extends neverthrow.ResultAsync<T, E> {}
const kit = { ResultAsync: AppResultAsync, ok: neverthrow.ok, err: neverthrow.err };

interface AppEventLog<T extends LogEntry> {
  addEntry(entry: T, sequenceId: SequenceId, snapshotId?: SequenceId): AppResultAsync<AddEntryValue, AddEntryError>;
  setMetadata(sequenceId: SequenceId, metadata: LogMetadata): AppResultAsync<void, MetadataError>;
  query(
    start: SequenceId | "snapshot" | "start",
    end: SequenceId | "end",
    snapshotId?: SequenceId,
  ): AppResultAsync<QueryValue<T>, QueryError>;
  truncate(start: SequenceId): AppResultAsync<void, TruncateError>;
}
interface AppBlobDir<C> {
  readBlob(name: string): AppResultAsync<Uint8Array, ReadBlobError>;
  writeBlob(name: string, content: Uint8Array): AppResultAsync<void, WriteBlobError>;
  removeBlob(name: string): AppResultAsync<void, RemoveBlobError>;
  getDir(name: string): AppResultAsync<AppBlobDir<C>, GetDirError>;
  query(continuation?: C): AppResultAsync<BlobDirEntries<C>, DirQueryError>;
  removeAll(): AppResultAsync<void, RemoveAllBlobDirError>;
}
interface AppBlobStore<C> {
  getRootDir(): AppResultAsync<AppBlobDir<C>, never>;
}

interface Note extends LogEntry {
  type: "note";
  text: string;
}

const url = inject("sheetlogUrl");

describe("adapters to infinisheet's ResultAsync", () => {
  it("gives an EventLog whose results are the app's ResultAsync", async () => {
    const eventLog: AppEventLog<Note> = infinisheetEventLog(
      new SheetlogEventLog<Note>({ url, pageSize: 10 }),
      kit,
    );
    const added = eventLog.addEntry({ type: "note", text: "a" }, 0n);
    expect(added).toBeInstanceOf(AppResultAsync);
    expect((await added).isOk()).toBe(true);
    // neverthrow's chaining works on them.
    const chained = await eventLog
      .addEntry({ type: "note", text: "b" }, 1n)
      .andThen(() => eventLog.setMetadata(1n, { snapshot: "s1" }))
      .andThen(() => eventLog.query("start", "end", 0n));
    expect(chained).toBeInstanceOf(neverthrow.Ok);
    const page = chained._unsafeUnwrap();
    expect(page.entries).toEqual([
      { type: "note", text: "a" },
      { type: "note", text: "b", snapshot: "s1" },
    ]);
    expect(page.lastSnapshot).toEqual({ sequenceId: 1n, blobId: "s1" });
    const conflict = await eventLog.addEntry({ type: "note", text: "c" }, 0n).match(
      () => "ok",
      (e) => e.type + " " + (e.type === "ConflictError" ? e.nextSequenceId : ""),
    );
    expect(conflict).toBe("ConflictError 2");
    expect((await eventLog.truncate(1n)).isOk()).toBe(true);
    expect((await eventLog.truncate(9n)).isErr()).toBe(true);
  });

  it("gives a BlobStore whose directories are adapted too", async () => {
    const root = `vitest/adapter-${Math.random().toString(36).slice(2, 10)}`;
    const store: AppBlobStore<string> = infinisheetBlobStore(
      new SheetlogBlobStore({ url, root }),
      kit,
    );
    const rootDir = (await store.getRootDir())._unsafeUnwrap();
    const sub = await rootDir.getDir("a");
    expect(sub).toBeInstanceOf(neverthrow.Ok);
    const dirA = sub._unsafeUnwrap();
    expect(dirA.writeBlob("x", new Uint8Array([1]))).toBeInstanceOf(AppResultAsync);
    expect((await dirA.writeBlob("x", new Uint8Array([1]))).isOk()).toBe(true);
    expect((await dirA.readBlob("x"))._unsafeUnwrap()).toEqual(new Uint8Array([1]));
    const listed = (await rootDir.query())._unsafeUnwrap();
    expect(listed.dirs).toEqual(["a"]);
    expect((await rootDir.readBlob("a"))._unsafeUnwrapErr().type).toBe("BlobWrongKindError");
    expect((await dirA.readBlob(""))._unsafeUnwrapErr().type).toBe("InvalidBlobNameError");
    expect((await rootDir.removeAll()).isOk()).toBe(true);
    expect((await rootDir.query())._unsafeUnwrap().dirs).toEqual([]);
  });
});
