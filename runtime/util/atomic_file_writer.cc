#include "runtime/util/atomic_file_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Create(
    const std::string& path, const Options& options) {
  absl::BitGen gen;
  std::string tmp = absl::StrCat(
      path, ".tmp-", absl::Hex(absl::Uniform<uint64_t>(gen), absl::kZeroPad16));
  const int fd =
      open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
           options.mode & 0777);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("cannot write ", path,
                                              ": directory ", DirName(path),
                                              " does not exist"));
    }
    return ErrnoError(absl::StrCat("cannot write ", path, ": cannot create"),
                      tmp);
  }
  // The mode exactly, whatever the umask took from it.
  if (fchmod(fd, options.mode & 07777) != 0) {
    const absl::Status status = ErrnoError("cannot chmod", tmp);
    close(fd);
    unlink(tmp.c_str());
    return status;
  }
  return std::unique_ptr<AtomicFileWriter>(
      new AtomicFileWriter(path, std::move(tmp), fd, options.buffer_bytes));
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string tmp, int fd,
                                   size_t buffer_bytes)
    : path_(std::move(path)),
      tmp_(std::move(tmp)),
      buffer_bytes_(buffer_bytes),
      fd_(fd) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) close(fd_);
  if (!committed_) unlink(tmp_.c_str());  // best effort
}

absl::Status AtomicFileWriter::Fail(absl::Status status) {
  if (error_.ok()) error_ = status;
  return status;
}

absl::Status AtomicFileWriter::Append(absl::string_view data) {
  RETURN_IF_ERROR(error_);
  if (fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot append to ", path_, ": already finished"));
  }
  if (buffer_.size() + data.size() < buffer_bytes_) {
    buffer_.append(data.data(), data.size());
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(Flush());
  if (data.size() >= buffer_bytes_) return Fail(WriteAll(fd_, data, tmp_));
  buffer_.append(data.data(), data.size());
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Flush() {
  absl::Status status = WriteAll(fd_, buffer_, tmp_);
  buffer_.clear();
  return Fail(status);
}

absl::Status AtomicFileWriter::Finish() {
  RETURN_IF_ERROR(error_);
  if (fd_ < 0) return absl::OkStatus();
  RETURN_IF_ERROR(Flush());
  if (fsync(fd_) != 0) return Fail(ErrnoError("cannot fsync", tmp_));
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) return Fail(ErrnoError("cannot close", tmp_));
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  RETURN_IF_ERROR(Finish());
  if (committed_) return absl::OkStatus();
  if (rename(tmp_.c_str(), path_.c_str()) != 0) {
    return Fail(ErrnoError(absl::StrCat("cannot rename ", tmp_, " to"), path_));
  }
  committed_ = true;
  return SyncDirectory(DirName(path_));
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::Span<const absl::string_view> pieces) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> file,
                   AtomicFileWriter::Create(path));
  for (absl::string_view piece : pieces) RETURN_IF_ERROR(file->Append(piece));
  return file->Commit();
}

}  // namespace distrt
