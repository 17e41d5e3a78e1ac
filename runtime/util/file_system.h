#ifndef DISTRT_RUNTIME_UTIL_FILE_SYSTEM_H_
#define DISTRT_RUNTIME_UTIL_FILE_SYSTEM_H_

// The few file-system operations checkpoints need, on POSIX calls, with
// every return value checked: an error is an absl::Status whose code follows
// errno (NOT_FOUND for ENOENT, PERMISSION_DENIED for EACCES, ...) and whose
// message names the path and says what failed (strerror).
//
// Crash safety rests on WriteFileAtomically: a file is written under a
// temporary name, fsync'd, renamed into place and its directory fsync'd, so
// after a crash the name holds the old contents or all of the new ones.
//
// Functions are thread-safe; concurrent writers of the same path each write
// a whole file and the last rename wins.

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace distrt {

// "a/b" from "a" and "b"; a path that is empty or ends with '/' gets no
// second '/'.
std::string JoinPath(absl::string_view dir, absl::string_view name);

// The Status for the failed call that set errno (or `error`): "<what>
// <path>: <strerror>", with the code errno maps to (NOT_FOUND, ...).
absl::Status ErrnoError(absl::string_view what, absl::string_view path,
                        int error = errno);

// Writes all of `data` to the open file `fd`, retrying short and
// interrupted writes; errors name `path`.
absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path);

// The directory part of `path`: "." when it has none, "/" for "/x".
std::string DirName(const std::string& path);

// fsync of the directory `dir`, so that names created or renamed in it
// survive a crash.
absl::Status SyncDirectory(const std::string& dir);

// The whole file (for small files such as an index).
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Creates the directory `path` and any missing parents (as mkdir -p),
// fsyncing the parent of each one created so that it survives a crash.
// FAILED_PRECONDITION when `path` or a parent exists and is not a directory.
absl::Status CreateDirectories(const std::string& path);

// Removes `path` and everything under it; symbolic links are removed, not
// followed. OK when `path` does not exist.
absl::Status RemoveDirectoryTree(const std::string& path);

// The names in directory `path`, without "." and "..", sorted.
absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& path);

// Whether `path` exists; an error only when that cannot be told (e.g. a
// parent is not readable).
absl::StatusOr<bool> PathExists(const std::string& path);

// OK when `path` is a directory; NOT_FOUND when it does not exist,
// FAILED_PRECONDITION when it is something else.
absl::Status CheckIsDirectory(const std::string& path);

// OK when a file can be created (or replaced) at `path`: its directory
// exists, can be written and searched, and `path` is not a directory.
// INVALID_ARGUMENT "cannot write <path>: <why>" otherwise. For outputs
// written at the end of a long job, checked at its start.
absl::Status CheckCanCreateFile(const std::string& path);

// A file opened for reading at offsets (pread): one open file serves many
// reads in any order. Thread-safe: ReadAt keeps no position. The file is
// closed by the destructor.
class ReadOnlyFile {
 public:
  static absl::StatusOr<std::unique_ptr<ReadOnlyFile>> Open(
      const std::string& path);
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  const std::string& path() const { return path_; }
  // The size when opened.
  int64_t size() const { return size_; }

  // Reads exactly out.size() bytes starting at `offset`. DATA_LOSS naming
  // the path when the file ends first (it shrank since it was opened).
  absl::Status ReadAt(int64_t offset, absl::Span<char> out) const;

 private:
  ReadOnlyFile(std::string path, int fd, int64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}

  const std::string path_;
  const int fd_;
  const int64_t size_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_UTIL_FILE_SYSTEM_H_
