// POSIX file helpers for the blob store. Internal to emulator/blob: other code goes
// through BlobStore. Every function reports failure as a Status carrying the operation,
// the path and strerror; none throws.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "emulator/status.h"

namespace sheetlog::blob_files {

// ENOENT/ENOTDIR -> NotFound, ENOSPC/EDQUOT -> InsufficientStorage (retry once space is
// freed),
// anything else -> Internal. Message: "<op> <path>: <strerror>".
Status ErrnoStatus(std::string_view op, const std::string& path, int err);

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release();
  void Reset();

 private:
  int fd_ = -1;
};

struct DirEntry {
  std::string name;
  bool is_dir = false;
};

// The entries of directory `path` other than "." and "..", unsorted.
// NotFound if the directory does not exist.
Result<std::vector<DirEntry>> ListDir(const std::string& path);

// Writes all of `data` at the current offset, retrying short writes and EINTR.
Status WriteAll(int fd, std::string_view data, const std::string& path_for_errors);
// Reads up to `length` bytes at `offset` (fewer only at end of file), retrying EINTR.
Result<std::string> ReadAt(int fd, int64_t offset, size_t length,
                           const std::string& path_for_errors);

// fsync of a file or directory by path.
Status SyncPath(const std::string& path);

// Writes `data` to `tmp_path` (created with `mode`, replacing any stale one), syncs it
// if `sync`, renames it over `final_path`, and syncs the directory of `final_path` if
// `sync`. Readers of `final_path` see the old or the new content, never a mix.
Status WriteFileAtomically(const std::string& tmp_path, const std::string& final_path,
                           std::string_view data, bool sync, mode_t mode = 0644);

// The whole file; Internal if it is longer than `max_bytes`. NotFound if missing.
Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes);

// Creates `base`/`relative` and any missing directories between (base must exist).
// Survives a concurrent remover that deletes an empty directory on the way (retries).
// If `sync`, syncs the parent of every directory it created, so they survive a crash.
Status MakeDirs(const std::string& base, std::string_view relative, bool sync);

// Removes `base`/`relative` and then each parent up to (not including) `base`, for as
// long as they are empty. Never fails: a directory still in use simply stays.
void RemoveEmptyDirs(const std::string& base, std::string_view relative);

}  // namespace sheetlog::blob_files
