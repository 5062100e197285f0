// infinisheet's BlobStore / BlobDir over sheetlog's blob store (api.md "Blob store").
//
// sheetlog's store is flat like S3: a directory is a key prefix ending in "/", and a
// key and a "directory" of the same name may coexist. infinisheet's contract keeps
// them apart, so the calls that could cross them look first (one listing or HEAD
// request) and answer BlobWrongKindError. Every other call is one request.
// Continuation tokens are the server's: bound to their directory (a token of another
// directory answers NoContinuationError) and repeatable.
import {
  invalidBlobNameError,
  noContinuationError,
  notBlobDirError,
  notBlobError,
  storageError,
} from "./errors.js";
import { describe, Http, type SheetlogConnection } from "./http.js";
import { err, ok, ResultAsync, type Result } from "./result.js";
import type {
  BlobDir,
  BlobDirEntries,
  BlobName,
  BlobStore,
  DirQueryError,
  GetDirError,
  GetRootDirError,
  ReadBlobError,
  RemoveAllBlobDirError,
  RemoveBlobError,
  WriteBlobError,
} from "./types.js";

export interface SheetlogBlobStoreOptions extends SheetlogConnection {
  /**
   * Key prefix of the store's root directory, e.g. "apps/budget" (no leading or
   * trailing "/"). Default "": the whole store (the server's own areas, such as
   * snapshots/, are then visible and read-only).
   */
  root?: string | undefined;
  /** Most names one query returns (1..1000). Default 1000. */
  pageSize?: number | undefined;
}

export class SheetlogBlobStore implements BlobStore<string> {
  readonly #http: Http;
  readonly #root: string;
  readonly #pageSize: number;

  constructor(options: SheetlogBlobStoreOptions) {
    this.#http = new Http(options);
    const root = options.root ?? "";
    if (root.startsWith("/") || root.endsWith("/")) {
      throw new RangeError("root must not start or end with '/'");
    }
    this.#root = root === "" ? "" : root + "/";
    this.#pageSize = options.pageSize ?? 1000;
  }

  getRootDir(): ResultAsync<BlobDir<string>, GetRootDirError> {
    return new ResultAsync(
      Promise.resolve(ok(new SheetlogBlobDir(this.#http, this.#root, this.#pageSize))),
    );
  }
}

class SheetlogBlobDir implements BlobDir<string> {
  readonly #http: Http;
  readonly #prefix: string; // "" or ending in "/"
  readonly #pageSize: number;

  constructor(http: Http, prefix: string, pageSize: number) {
    this.#http = http;
    this.#prefix = prefix;
    this.#pageSize = pageSize;
  }

  readBlob(name: BlobName): ResultAsync<Uint8Array, ReadBlobError> {
    return ResultAsync.from(async (): Promise<Result<Uint8Array, ReadBlobError>> => {
      const bad = nameError(this.#prefix, name);
      if (bad) return err(bad);
      const reply = await this.#http.bytes("GET", blobPath(this.#prefix + name));
      if (reply.status === 200) return ok(reply.bytes);
      if (reply.status === 404 && (await this.#isDir(name))) return err(notBlobError());
      return err(
        storageError(describe("reading " + name, reply.status, reply.error), reply.status),
      );
    }, thrown);
  }

  writeBlob(name: BlobName, content: Uint8Array): ResultAsync<void, WriteBlobError> {
    const copy = content.slice(); // the caller may change its array once we return
    return ResultAsync.from(async (): Promise<Result<void, WriteBlobError>> => {
      const bad = nameError(this.#prefix, name);
      if (bad) return err(bad);
      if (await this.#isDir(name)) return err(notBlobError());
      const reply = await this.#http.bytes("PUT", blobPath(this.#prefix + name), copy);
      if (reply.status === 200 || reply.status === 201) return ok(undefined);
      return err(
        storageError(describe("writing " + name, reply.status, reply.error), reply.status),
      );
    }, thrown);
  }

  removeBlob(name: BlobName): ResultAsync<void, RemoveBlobError> {
    return ResultAsync.from(async (): Promise<Result<void, RemoveBlobError>> => {
      const bad = nameError(this.#prefix, name);
      if (bad) return err(bad);
      if (await this.#isDir(name)) return err(notBlobError());
      const reply = await this.#http.bytes("DELETE", blobPath(this.#prefix + name));
      if (reply.status === 204 || reply.status === 200) return ok(undefined);
      return err(
        storageError(describe("removing " + name, reply.status, reply.error), reply.status),
      );
    }, thrown);
  }

  getDir(name: BlobName): ResultAsync<BlobDir<string>, GetDirError> {
    return ResultAsync.from(async (): Promise<Result<BlobDir<string>, GetDirError>> => {
      const bad = nameError(this.#prefix, name);
      if (bad) return err(bad);
      // Directories exist on demand; only a blob of that name is in the way.
      const reply = await this.#http.bytes("HEAD", blobPath(this.#prefix + name));
      if (reply.status === 200) return err(notBlobDirError());
      if (reply.status !== 404) {
        return err(
          storageError(describe("opening " + name, reply.status, reply.error), reply.status),
        );
      }
      return ok(new SheetlogBlobDir(this.#http, this.#prefix + name + "/", this.#pageSize));
    }, thrown);
  }

  query(continuation?: string): ResultAsync<BlobDirEntries<string>, DirQueryError> {
    return ResultAsync.from(async (): Promise<Result<BlobDirEntries<string>, DirQueryError>> => {
      let path =
        "/v1/blobs?prefix=" +
        encodeURIComponent(this.#prefix) +
        "&delimiter=/&limit=" +
        this.#pageSize;
      if (continuation !== undefined) path += "&continuation=" + encodeURIComponent(continuation);
      const reply = await this.#http.json("GET", path);
      if (reply.status === 400 && continuation !== undefined) {
        return err(noContinuationError(reply.error?.message));
      }
      if (reply.status !== 200) {
        return err(storageError(describe("listing", reply.status, reply.error), reply.status));
      }
      const keys = reply.body.keys as { key: string }[];
      const prefixes = reply.body.prefixes as string[];
      return ok({
        blobs: keys.map((k) => k.key.slice(this.#prefix.length)),
        dirs: prefixes.map((p) => p.slice(this.#prefix.length, -1)),
        continuation: (reply.body.continuation as string | null) ?? undefined,
      });
    }, thrown);
  }

  removeAll(): ResultAsync<void, RemoveAllBlobDirError> {
    return ResultAsync.from(async (): Promise<Result<void, RemoveAllBlobDirError>> => {
      // Every key under the directory, page by page; each page is deleted before the
      // next is listed, so the listing starts again from the front each time.
      for (;;) {
        const reply = await this.#http.json(
          "GET",
          "/v1/blobs?prefix=" + encodeURIComponent(this.#prefix) + "&limit=1000",
        );
        if (reply.status !== 200) {
          return err(storageError(describe("listing", reply.status, reply.error), reply.status));
        }
        const keys = reply.body.keys as { key: string }[];
        if (keys.length === 0) return ok(undefined);
        for (const { key } of keys) {
          const removed = await this.#http.bytes("DELETE", blobPath(key));
          if (removed.status !== 204 && removed.status !== 200) {
            return err(
              storageError(describe("removing " + key, removed.status, removed.error), removed.status),
            );
          }
        }
      }
    }, thrown);
  }

  // Whether some key lies under `name` + "/".
  async #isDir(name: string): Promise<boolean> {
    const reply = await this.#http.json(
      "GET",
      "/v1/blobs?prefix=" + encodeURIComponent(this.#prefix + name + "/") + "&limit=1",
    );
    if (reply.status !== 200) {
      throw new Error(describe("listing " + name, reply.status, reply.error));
    }
    return (reply.body.keys as unknown[]).length > 0;
  }
}

// Longest key part and key sheetlog's blob store takes (emulator/blob/blob_key.h): a
// part becomes one directory or file name on the server's disk, and 255 bytes is the
// usual NAME_MAX of its file systems; 1024 bytes is S3's key limit.
const MAX_PART_BYTES = 255;
const MAX_KEY_BYTES = 1024;

// A name the server would refuse, answered here as infinisheet's InvalidBlobNameError
// (rather than the server's 400 as a StorageError): infinisheet's own rule (at most 100
// characters, one path part) plus the store's key rules: at most 255 UTF-8 bytes, well-
// formed (no lone surrogate), no control character (C0, DEL, C1), no backslash; with the
// directory's prefix, at most 1024 bytes.
function nameError(prefix: string, name: string) {
  if (name.length === 0) return invalidBlobNameError("a blob name must not be empty");
  if (name.length > 100) return invalidBlobNameError("a blob name has at most 100 characters");
  if (name.includes("/") || name.includes("\\") || name === "." || name === "..") {
    return invalidBlobNameError("a blob name is one path part, not '" + name + "'");
  }
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(name)) {
    return invalidBlobNameError("a blob name must be well-formed Unicode (a lone surrogate)");
  }
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) {
    return invalidBlobNameError("a blob name must not contain a control character");
  }
  const bytes = utf8.encode(name).length;
  if (bytes > MAX_PART_BYTES) {
    return invalidBlobNameError(
      `a blob name has at most ${MAX_PART_BYTES} UTF-8 bytes (this one ${bytes})`,
    );
  }
  if (utf8.encode(prefix).length + bytes > MAX_KEY_BYTES) {
    return invalidBlobNameError(
      `a blob key has at most ${MAX_KEY_BYTES} UTF-8 bytes (directory and name)`,
    );
  }
  return undefined;
}

const utf8 = new TextEncoder();

function blobPath(key: string): string {
  return "/v1/blobs/" + key.split("/").map(encodeURIComponent).join("/");
}

function thrown(error: unknown) {
  return storageError(error instanceof Error ? error.message : String(error));
}
