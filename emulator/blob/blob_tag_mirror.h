// BlobTagMirror: the S3 blob store's record of tags in the table store, the blob_mirror
// table (emulator/schema/*/009_blob_mirror.sql; schema/README.md "009 — blob mirror"):
// one row per object that carries or carried tags, with its tag set and its creation
// time on the server's clock. This class is the table's only owner and knows nothing
// of the bucket; S3BlobStore (s3_blob_store.h) decides when a row is written or removed
// relative to the object's commit point at the store, and reads the rows as the source
// of truth for tags and for the lifecycle sweep. Unused (and empty) with the directory
// store, which keeps tags beside each object.
//
// Thread-safe (Transactions is; the mirror holds no state of its own).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "emulator/blob/blob_store.h"
#include "emulator/status.h"
#include "emulator/table/transactions.h"

namespace sheetlog {

class BlobTagMirror {
 public:
  // What the mirror keeps of one object.
  struct Row {
    BlobTags tags;
    int64_t created_micros = 0;  // when the object was put (the server's clock)
  };

  // `tables` holds blob_mirror and must outlive the mirror.
  explicit BlobTagMirror(Transactions* tables) : tables_(tables) {}

  // The row of `key`, nullopt if it has none. Strongly consistent.
  Result<std::optional<Row>> Read(const std::string& key);
  // The rows of `keys` in one read transaction, in the order of `keys` (nullopt where
  // a key has none). Strongly consistent.
  Result<std::vector<std::optional<Row>>> ReadMany(const std::vector<std::string>& keys);
  // Writes (replacing) the row of `key`.
  Status Write(const std::string& key, const Row& row);
  // Removes the rows of `keys` in one transaction; keys without a row are OK.
  Status Delete(const std::vector<std::string>& keys);

  // Calls `visit` with every row in key order until it returns false. Rows are read a
  // page at a time, each page one eventually consistent read that has ended before its
  // rows are visited, so `visit` may read and write the mirror; a row written or
  // removed meanwhile may or may not be visited.
  Status ForEach(
      const std::function<bool(const std::string& key, const Row& row)>& visit);

  // Removes every row in one transaction; returns how many. For App::Reset, once every
  // object is deleted: what is left are rows of objects that never reached the store
  // (upload URLs never used, a crash before a commit point).
  Result<int64_t> DeleteAll();

 private:
  Transactions* const tables_;
};

}  // namespace sheetlog
