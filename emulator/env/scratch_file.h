// A temporary file for libraries that can only write to a path (libxlsxwriter): created
// empty and unique under $TMPDIR (else /tmp), read back in ranges, removed when the
// object goes away.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "emulator/status.h"

namespace sheetlog {

class ScratchFile {
 public:
  // `suffix` ends the file name (".xlsx"). Internal if no file can be created.
  static Result<std::unique_ptr<ScratchFile>> Create(const std::string& suffix);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::string& path() const { return path_; }
  // The file's current size.
  Result<int64_t> Size() const;
  // Up to `length` bytes from `offset` (fewer at the end).
  Result<std::string> ReadAt(int64_t offset, int64_t length) const;

 private:
  explicit ScratchFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace sheetlog
