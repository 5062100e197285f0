#include "emulator/blob/blob_files_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sheetlog::blob_files {

Status ErrnoStatus(std::string_view op, const std::string& path, int err) {
  std::string message = std::string(op) + " " + path + ": " + std::strerror(err);
  // ENOTDIR: a path component is a file, so the path cannot exist either.
  if (err == ENOENT || err == ENOTDIR) return NotFound(std::move(message));
  if (err == ENOSPC || err == EDQUOT) return InsufficientStorage(std::move(message));
  return Internal(std::move(message));
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    Reset();
    fd_ = other.Release();
  }
  return *this;
}

int UniqueFd::Release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<std::vector<DirEntry>> ListDir(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return ErrnoStatus("opendir", path, errno);
  std::vector<DirEntry> entries;
  errno = 0;
  while (struct dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    DirEntry entry{std::string(name), e->d_type == DT_DIR};
    if (e->d_type == DT_UNKNOWN) {  // some filesystems do not fill d_type
      struct stat st;
      if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        entry.is_dir = S_ISDIR(st.st_mode);
      }
    }
    entries.push_back(std::move(entry));
  }
  int err = errno;
  ::closedir(dir);
  if (err != 0) return ErrnoStatus("readdir", path, err);
  return entries;
}

Status WriteAll(int fd, std::string_view data, const std::string& path_for_errors) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", path_for_errors, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

Result<std::string> ReadAt(int fd, int64_t offset, size_t length,
                           const std::string& path_for_errors) {
  std::string out(length, '\0');
  size_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd, out.data() + done, length - done,
                        static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path_for_errors, errno);
    }
    if (n == 0) break;  // end of file
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

Status SyncPath(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open", path, errno);
  if (::fsync(fd.get()) != 0) return ErrnoStatus("fsync", path, errno);
  return Status::OK();
}

namespace {

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Status WriteFileAtomically(const std::string& tmp_path, const std::string& final_path,
                           std::string_view data, bool sync, mode_t mode) {
  UniqueFd fd(::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd.valid()) return ErrnoStatus("create", tmp_path, errno);
  Status status = WriteAll(fd.get(), data, tmp_path);
  if (status.ok() && sync && ::fsync(fd.get()) != 0) {
    status = ErrnoStatus("fsync", tmp_path, errno);
  }
  fd.Reset();
  if (status.ok() && ::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    status = ErrnoStatus("rename to " + final_path, tmp_path, errno);
  }
  if (!status.ok()) {
    ::unlink(tmp_path.c_str());
    return status;
  }
  if (sync) return SyncPath(DirName(final_path));
  return Status::OK();
}

Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open", path, errno);
  ASSIGN_OR_RETURN(std::string data, ReadAt(fd.get(), 0, max_bytes + 1, path));
  if (data.size() > max_bytes) {
    return Internal(path + " is larger than " + std::to_string(max_bytes) + " bytes");
  }
  return data;
}

Status MakeDirs(const std::string& base, std::string_view relative, bool sync) {
  // A concurrent RemoveEmptyDirs may delete a directory we just created (it was empty
  // for a moment); start over then. Bounded so a pathological race cannot spin forever.
  constexpr int kMaxAttempts = 100;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    std::string path = base;
    bool raced = false;
    size_t start = 0;
    while (start < relative.size()) {
      size_t slash = relative.find('/', start);
      size_t end = slash == std::string_view::npos ? relative.size() : slash;
      std::string parent = path;
      path.append("/").append(relative.substr(start, end - start));
      start = end + 1;
      if (::mkdir(path.c_str(), 0755) == 0) {
        if (sync) RETURN_IF_ERROR(SyncPath(parent));
      } else if (errno == ENOENT) {
        raced = true;  // the parent vanished under us
        break;
      } else if (errno != EEXIST) {
        return ErrnoStatus("mkdir", path, errno);
      }
    }
    if (!raced) return Status::OK();
  }
  return Unavailable("mkdir " + base + "/" + std::string(relative) +
                     ": directories kept disappearing (concurrent deletes)");
}

void RemoveEmptyDirs(const std::string& base, std::string_view relative) {
  while (!relative.empty()) {
    std::string path = base + "/" + std::string(relative);
    // Not empty: stop. Already gone (a concurrent remover): its parent may be empty now.
    if (::rmdir(path.c_str()) != 0 && errno != ENOENT) return;
    size_t slash = relative.rfind('/');
    relative =
        slash == std::string_view::npos ? std::string_view() : relative.substr(0, slash);
  }
}

}  // namespace sheetlog::blob_files
