// Constructors of infinisheet's error values.
import type {
  BlobWrongKindError,
  ConflictError,
  InfinisheetRangeError,
  InvalidBlobNameError,
  NoContinuationError,
  SequenceId,
  StorageError,
} from "./types.js";

export function storageError(message: string, statusCode?: number): StorageError {
  return { type: "StorageError", message, statusCode };
}

export function rangeError(message: string): InfinisheetRangeError {
  return { type: "InfinisheetRangeError", message };
}

export function conflictError(message: string, nextSequenceId: SequenceId): ConflictError {
  return { type: "ConflictError", message, nextSequenceId };
}

export function invalidBlobNameError(message = "Invalid Blob Name"): InvalidBlobNameError {
  return { type: "InvalidBlobNameError", message };
}

export function notBlobError(): BlobWrongKindError {
  return { type: "BlobWrongKindError", message: "Not a blob" };
}

export function notBlobDirError(): BlobWrongKindError {
  return { type: "BlobWrongKindError", message: "Not a blob dir" };
}

export function noContinuationError(
  message = "Can't continue query, start again",
): NoContinuationError {
  return { type: "NoContinuationError", message };
}
