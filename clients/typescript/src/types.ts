// infinisheet's storage contracts (packages/infinisheet-types: EventLog.ts, BlobStore.ts,
// Error.ts), restated structurally so this package needs nothing at run time. Names and
// shapes follow infinisheet's, so an app's entries and error handling carry over.
import type { ResultAsync } from "./result.js";

/** Any error of infinisheet's: a discriminated union on `type`. */
export interface InfinisheetError {
  type: string;
  message: string;
}

/** A problem talking to storage; `statusCode` is the HTTP status when there is one. */
export interface StorageError extends InfinisheetError {
  type: "StorageError";
  statusCode?: number | undefined;
}

/** A sequence id outside the log (negative, truncated away, or beyond its end). */
export interface InfinisheetRangeError extends InfinisheetError {
  type: "InfinisheetRangeError";
}

/** addEntry's sequence id is not the next one; `nextSequenceId` is. */
export interface ConflictError extends InfinisheetError {
  type: "ConflictError";
  nextSequenceId: SequenceId;
}

export type BlobId = string;
export type WorkflowId = string;
export type SequenceId = bigint;

export interface LogMetadata {
  snapshot?: BlobId | undefined;
  history?: BlobId | undefined;
  pending?: WorkflowId | undefined;
}

export interface LogEntry extends LogMetadata {
  type: string;
}

export type AddEntryError = ConflictError | StorageError;
export type QueryError = InfinisheetRangeError | StorageError;
export type TruncateError = InfinisheetRangeError | StorageError;
export type MetadataError = InfinisheetRangeError | StorageError;

/** A snapshot: the entry that holds it and its content's id in the BlobStore. */
export interface SnapshotValue {
  sequenceId: SequenceId;
  blobId: BlobId;
}

export interface QueryValue<T extends LogEntry> {
  startSequenceId: SequenceId;
  endSequenceId: SequenceId;
  isComplete: boolean;
  /** The newest snapshot, when the call named a snapshotId and the newest differs. */
  lastSnapshot?: SnapshotValue | undefined;
  entries: T[];
}

export interface AddEntryValue {
  /** As QueryValue.lastSnapshot. */
  lastSnapshot?: SnapshotValue | undefined;
}

export interface EventLog<T extends LogEntry> {
  addEntry(
    entry: T,
    sequenceId: SequenceId,
    snapshotId?: SequenceId,
  ): ResultAsync<AddEntryValue, AddEntryError>;
  setMetadata(sequenceId: SequenceId, metadata: LogMetadata): ResultAsync<void, MetadataError>;
  query(
    start: SequenceId | "snapshot" | "start",
    end: SequenceId | "end",
    snapshotId?: SequenceId,
  ): ResultAsync<QueryValue<T>, QueryError>;
  truncate(start: SequenceId): ResultAsync<void, TruncateError>;
}

export type BlobName = string;

export interface InvalidBlobNameError extends InfinisheetError {
  type: "InvalidBlobNameError";
}
export interface BlobWrongKindError extends InfinisheetError {
  type: "BlobWrongKindError";
}
export interface NoContinuationError extends InfinisheetError {
  type: "NoContinuationError";
}

export type ReadBlobError = BlobWrongKindError | InvalidBlobNameError | StorageError;
export type WriteBlobError = BlobWrongKindError | InvalidBlobNameError | StorageError;
export type RemoveBlobError = BlobWrongKindError | InvalidBlobNameError | StorageError;
export type GetDirError = BlobWrongKindError | InvalidBlobNameError | StorageError;
export type DirQueryError = StorageError | NoContinuationError;
export type RemoveAllBlobDirError = StorageError;
export type GetRootDirError = StorageError;

export interface BlobDirEntries<ContinuationT> {
  blobs: BlobName[];
  dirs: BlobName[];
  continuation?: ContinuationT | undefined;
}

export interface BlobDir<ContinuationT> {
  readBlob(name: BlobName): ResultAsync<Uint8Array, ReadBlobError>;
  writeBlob(name: BlobName, content: Uint8Array): ResultAsync<void, WriteBlobError>;
  removeBlob(name: BlobName): ResultAsync<void, RemoveBlobError>;
  getDir(name: BlobName): ResultAsync<BlobDir<ContinuationT>, GetDirError>;
  query(continuation?: ContinuationT): ResultAsync<BlobDirEntries<ContinuationT>, DirQueryError>;
  removeAll(): ResultAsync<void, RemoveAllBlobDirError>;
}

export interface BlobStore<ContinuationT> {
  getRootDir(): ResultAsync<BlobDir<ContinuationT>, GetRootDirError>;
}
