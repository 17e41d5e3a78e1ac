#include "runtime/input/line_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Large enough that reading costs few system calls, small enough not to
// matter when many files are open at once.
constexpr size_t kBufferSize = size_t{64} << 10;

constexpr absl::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(
    const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  }
  return std::unique_ptr<LineReader>(
      new LineReader(path, fd, /*start_offset=*/0, /*start_line=*/1));
}

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(
    const std::string& path, int64_t start_offset, int64_t start_line) {
  if (start_offset < 0 || start_line < 1 ||
      (start_offset == 0) != (start_line == 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open ", path, " at byte ", start_offset,
                     " as line ", start_line, ": not a line's start"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, Open(path));
  if (start_offset == 0) return reader;
  // The owner of fd_ from here on is `reader`.
  const int fd = reader->fd_;
  struct stat info;
  if (fstat(fd, &info) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot stat ", path));
  }
  if (S_ISREG(info.st_mode) && info.st_size < start_offset) {
    return absl::OutOfRangeError(
        absl::StrCat("cannot open ", path, " at byte ", start_offset,
                     ": the file has only ", info.st_size, " bytes"));
  }
  // The end of a file whose last line has no newline is where a reader of
  // it stopped, and no line's start.
  const bool at_end = S_ISREG(info.st_mode) && info.st_size == start_offset;
  // A cheap check that the offset still is a line's start: one byte.
  char before;
  ssize_t n;
  do {
    n = pread(fd, &before, 1, start_offset - 1);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    return absl::ErrnoToStatus(
        errno,
        absl::StrCat("cannot read ", path, " at byte ", start_offset - 1));
  }
  if (n == 0) {
    return absl::OutOfRangeError(absl::StrCat("cannot open ", path, " at byte ",
                                              start_offset,
                                              ": the file ends before it"));
  }
  if (before != '\n' && !at_end) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open ", path, " at byte ", start_offset,
                     ": not a line's start (has the file changed?)"));
  }
  if (lseek(fd, start_offset, SEEK_SET) < 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("cannot seek ", path, " to byte ", start_offset));
  }
  reader->read_offset_ = start_offset;
  reader->line_number_ = start_line - 1;
  return reader;
}

LineReader::LineReader(std::string path, int fd, int64_t start_offset,
                       int64_t start_line)
    : path_(std::move(path)),
      fd_(fd),
      buffer_(new char[kBufferSize]),
      read_offset_(start_offset),
      line_number_(start_line - 1) {}

LineReader::~LineReader() {
  // Nothing was written, so an error of close() loses nothing.
  close(fd_);
}

std::string LineReader::location() const {
  return absl::StrCat(path_, ":", line_number_);
}

absl::StatusOr<bool> LineReader::Fill() {
  while (true) {
    const ssize_t n = read(fd_, buffer_.get(), kBufferSize);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::ErrnoToStatus(
          errno,
          absl::StrCat("cannot read ", path_, " at line ", line_number_ + 1));
    }
    begin_ = 0;
    end_ = static_cast<size_t>(n);
    read_offset_ += n;
    return n > 0;
  }
}

absl::StatusOr<bool> LineReader::ReadLine(std::string* line) {
  line->clear();
  const bool at_file_start = next_line_offset() == 0;
  bool read_any = false;
  while (true) {
    if (begin_ == end_) {
      ASSIGN_OR_RETURN(bool filled, Fill());
      if (!filled) break;
    }
    read_any = true;
    const char* start = buffer_.get() + begin_;
    const size_t available = end_ - begin_;
    const void* newline = memchr(start, '\n', available);
    if (newline == nullptr) {
      line->append(start, available);
      begin_ = end_;
      continue;
    }
    const size_t length = static_cast<const char*>(newline) - start;
    line->append(start, length);
    begin_ += length + 1;
    break;
  }
  if (!read_any) return false;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  if (at_file_start && absl::StartsWith(*line, kByteOrderMark)) {
    line->erase(0, kByteOrderMark.size());
  }
  ++line_number_;
  return true;
}

}  // namespace distrt
