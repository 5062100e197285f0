// emulator/backup: what AWS Backup does for a DynamoDB table and an S3 bucket, for the
// one SQLite database and the one blob store of this emulator: a consistent copy taken
// while both are in use, and its restore into an empty place.
//
// Consistency: nothing the backup's database references is missing from it, while the
// server keeps writing and deleting, because the database's instant and the blob
// store's are one (BlobStore::Capture runs Database::BeginSnapshot with every object
// change held off; nothing is held off while bytes are copied). How, step by step:
// docs/architecture.md "Backups".
//
// Layout of a backup directory (one backup; the next backup into it replaces it and
// copies only the blob bodies it does not already hold):
//
//   DIR/manifest.json            what the backup holds, with a checksum of itself:
//                                format, id, created, the application's version and
//                                schema version, the database file with its size and
//                                SHA-256, and every object (key, size, SHA-256, ETag,
//                                content type, tags, created, version)
//   DIR/database-<id>.sqlite     the database as one SQLite file
//   DIR/blobs/<aa>/<sha256>      object bodies by content (aa: the first two digits)
//
// manifest.json is written last and renamed into place: a backup that stops midway
// (crash, full disk) leaves the previous backup whole.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "emulator/status.h"

namespace sheetlog {

class BlobStore;
class Clock;
class Database;

struct BackupOptions {
  // The backup directory: absolute; created if missing; must be empty or hold an
  // earlier backup; never inside the database's or the blob store's directory.
  std::string to;
  // Recorded in the manifest (the application's release and schema version).
  std::string app_version;
  int schema_version = 0;
  // Only for the manifest's "created".
  Clock* clock = nullptr;
};

struct BackupReport {
  std::string to;
  std::string id;
  std::string database_file;
  int64_t database_bytes = 0;
  int64_t blobs = 0;         // objects in the backup
  int64_t blob_bytes = 0;    // their bodies' bytes
  int64_t blobs_copied = 0;  // bodies read and written this time
  int64_t bytes_copied = 0;
  int64_t blobs_reused = 0;      // already in DIR from the previous backup
  bool incremental = false;      // DIR held a previous backup
  int64_t unreadable_blobs = 0;  // objects whose metadata is damaged: not backed up
  nlohmann::json ToJson() const;
};

// Writes a backup of `db` and `blobs` to options.to while both stay in use.
// InvalidArgument for a bad target; FailedPrecondition if another backup of the store
// is running; I/O errors as Internal (InsufficientStorage when the disk is full).
Result<BackupReport> WriteBackup(Database& db, BlobStore& blobs,
                                 const BackupOptions& options);

struct RestoreReport {
  std::string from;
  std::string id;
  std::string app_version;  // of the server the backup was taken from
  int schema_version = 0;
  int64_t database_bytes = 0;
  int64_t blobs = 0;
  int64_t blob_bytes = 0;
  nlohmann::json ToJson() const;
};

// Restores the backup in `from`: the database to `db_path` (must not exist) and the
// objects into a new blob store at `blob_root` (must not exist or be empty). Every file
// is checked against the manifest's checksums first: a missing file, or one whose
// size or SHA-256 differs, is FailedPrecondition naming it, and nothing is written.
Result<RestoreReport> RestoreBackup(const std::string& from, const std::string& db_path,
                                    const std::string& blob_root, Clock* clock);

}  // namespace sheetlog
