#include "runtime/util/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {
// Largest read or write asked of the kernel at once: Linux transfers at most
// about 2 GiB per call anyway.
constexpr size_t kMaxTransfer = size_t{1} << 30;

absl::Status ErrnoError(absl::string_view what, absl::string_view path,
                        int error) {
  return absl::ErrnoToStatus(error, absl::StrCat(what, " ", path));
}

absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path) {
  while (!data.empty()) {
    const ssize_t n =
        write(fd, data.data(), std::min(data.size(), kMaxTransfer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", path);
    }
    data.remove_prefix(n);
  }
  return absl::OkStatus();
}

namespace {

// Closes `fd`; an error of close (e.g. a deferred write error on NFS) is
// reported like any other.
absl::Status Close(int fd, absl::string_view path) {
  if (close(fd) != 0) return ErrnoError("cannot close", path);
  return absl::OkStatus();
}

}  // namespace

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open directory", dir);
  if (fsync(fd) != 0) {
    absl::Status status = ErrnoError("cannot fsync directory", dir);
    close(fd);
    return status;
  }
  return Close(fd, dir);
}

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  if (dir.empty() || dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadOnlyFile> file,
                   ReadOnlyFile::Open(path));
  std::string contents(file->size(), '\0');
  RETURN_IF_ERROR(file->ReadAt(0, absl::MakeSpan(contents)));
  return contents;
}

absl::Status CreateDirectories(const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("cannot create a directory: empty path");
  }
  // Each prefix ending before a '/', then the whole path.
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    const std::string dir = path.substr(0, end);
    if (mkdir(dir.c_str(), 0755) == 0) {
      RETURN_IF_ERROR(SyncDirectory(DirName(dir)));
    } else if (errno == EEXIST) {
      RETURN_IF_ERROR(CheckIsDirectory(dir));
    } else {
      return ErrnoError("cannot create directory", dir);
    }
    if (end == std::string::npos) break;
  }
  return absl::OkStatus();
}

absl::Status RemoveDirectoryTree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoError("cannot stat", path);
  }
  if (S_ISDIR(st.st_mode)) {
    ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(path));
    for (const std::string& name : names) {
      RETURN_IF_ERROR(RemoveDirectoryTree(JoinPath(path, name)));
    }
    if (rmdir(path.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError("cannot remove directory", path);
    }
  } else if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("cannot remove", path);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListDirectory(
    const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return ErrnoError("cannot open directory", path);
  std::vector<std::string> names;
  while (true) {
    errno = 0;
    const struct dirent* entry = readdir(dir);
    if (entry == nullptr) break;
    const absl::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  const int error = errno;
  closedir(dir);
  if (error != 0) return ErrnoError("cannot read directory", path, error);
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<bool> PathExists(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT || errno == ENOTDIR) return false;
  return ErrnoError("cannot stat", path);
}

absl::Status CheckIsDirectory(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("directory ", path, " does not exist"));
    }
    return ErrnoError("cannot stat", path);
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a directory"));
  }
  return absl::OkStatus();
}

absl::Status CheckCanCreateFile(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  const auto refused = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": ", why));
  };
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    return refused(absl::StrCat(dir, ": ", std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return refused(absl::StrCat(dir, " is not a directory"));
  }
  // Writing makes a temporary file beside `path` and renames it.
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return refused(absl::StrCat("directory ", dir, ": ", std::strerror(errno)));
  }
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return refused("it is a directory");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ReadOnlyFile>> ReadOnlyFile::Open(
    const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // before the regular-file check below could refuse it. Reads from regular
  // files ignore the flag.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoError("cannot open", path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    absl::Status status = ErrnoError("cannot stat", path);
    close(fd);
    return status;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file"));
  }
  return std::unique_ptr<ReadOnlyFile>(new ReadOnlyFile(path, fd, st.st_size));
}

ReadOnlyFile::~ReadOnlyFile() { close(fd_); }

absl::Status ReadOnlyFile::ReadAt(int64_t offset, absl::Span<char> out) const {
  while (!out.empty()) {
    const ssize_t n =
        pread(fd_, out.data(), std::min(out.size(), kMaxTransfer), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot read", path_);
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(
          "cannot read ", path_, ": the file ends at byte ", offset, ", ",
          out.size(), " bytes short (it shrank while being read)"));
    }
    out.remove_prefix(n);
    offset += n;
  }
  return absl::OkStatus();
}

}  // namespace distrt
