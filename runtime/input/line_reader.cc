#include "runtime/input/line_reader.h"

#include <fcntl.h>
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
  return std::unique_ptr<LineReader>(new LineReader(path, fd));
}

LineReader::LineReader(std::string path, int fd)
    : path_(std::move(path)), fd_(fd), buffer_(new char[kBufferSize]) {}

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
    return n > 0;
  }
}

absl::StatusOr<bool> LineReader::ReadLine(std::string* line) {
  line->clear();
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
  if (line_number_ == 0 && absl::StartsWith(*line, kByteOrderMark)) {
    line->erase(0, kByteOrderMark.size());
  }
  ++line_number_;
  return true;
}

}  // namespace distrt
