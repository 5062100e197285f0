#include "emulator/env/scratch_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace sheetlog {

Result<std::unique_ptr<ScratchFile>> ScratchFile::Create(const std::string& suffix) {
  const char* dir = std::getenv("TMPDIR");
  std::string pattern = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") +
                        "/sheetlog-XXXXXX" + suffix;
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = mkstemps(name.data(), static_cast<int>(suffix.size()));
  if (fd < 0) {
    return Internal("cannot create a scratch file like " + pattern + ": " +
                    std::strerror(errno));
  }
  close(fd);
  return std::unique_ptr<ScratchFile>(new ScratchFile(name.data()));
}

ScratchFile::~ScratchFile() { unlink(path_.c_str()); }

Result<int64_t> ScratchFile::Size() const {
  struct stat info;
  if (stat(path_.c_str(), &info) != 0) {
    return Internal("cannot stat " + path_ + ": " + std::strerror(errno));
  }
  return static_cast<int64_t>(info.st_size);
}

Result<std::string> ScratchFile::ReadAt(int64_t offset, int64_t length) const {
  const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Internal("cannot open " + path_ + ": " + std::strerror(errno));
  std::string out(static_cast<size_t>(std::max<int64_t>(length, 0)), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = pread(fd, out.data() + done, out.size() - done,
                            static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      close(fd);
      return Internal("cannot read " + path_ + ": " + std::strerror(error));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(done);
  return out;
}

}  // namespace sheetlog
