#ifndef DISTRT_RUNTIME_INPUT_LINE_READER_H_
#define DISTRT_RUNTIME_INPUT_LINE_READER_H_

// LineReader: a text file read one line at a time, for the record readers,
// with the line numbers their error messages need.
//
// A line ends with "\n" or "\r\n" (files written on Windows); the terminator
// is not part of the line, and a last line without one is still a line, so
// a trailing newline adds no empty line. A UTF-8 byte order mark at the start
// of the file (spreadsheets write one) is dropped. Lines may be of any length
// and may hold any bytes.
//
// Not thread-safe: one thread reads a LineReader at a time. The file is
// closed by the destructor.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace distrt {

class LineReader {
 public:
  // An error whose code follows errno (NOT_FOUND, PERMISSION_DENIED, ...)
  // and whose message names the path, e.g.
  // "cannot open data/train.svm: No such file or directory".
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(
      const std::string& path);
  // Opens `path` to read from byte `start_offset`, a line's start or the
  // file's end (0, or a value next_line_offset() reported for the same
  // file), numbering the line there `start_line` (>= 1): how a reader
  // resumes where another stopped.
  // Besides Open(path)'s errors: OUT_OF_RANGE when the file is shorter than
  // `start_offset`, INVALID_ARGUMENT when the byte before `start_offset` is
  // not a '\n' (the file changed since the offset was taken) or the numbers
  // are impossible. A byte order mark is only dropped at byte 0.
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(
      const std::string& path, int64_t start_offset, int64_t start_line);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Stores the next line in `*line` and returns true, or returns false at
  // the end of the file. A read error (e.g. `path` is a directory) has a
  // code that follows errno and names the path and the line.
  absl::StatusOr<bool> ReadLine(std::string* line);

  const std::string& path() const { return path_; }
  // 1-based number of the line last read; before the first, one less than
  // the line opened at (0 from the file's start).
  int64_t line_number() const { return line_number_; }
  // Byte offset in the file where the next line starts: just after the
  // terminator of the line last read (the file's size once at its end), or
  // the offset it was opened at before the first.
  int64_t next_line_offset() const {
    return read_offset_ - static_cast<int64_t>(end_ - begin_);
  }
  // "<path>:<line_number>", the prefix of messages about the line last read.
  std::string location() const;

 private:
  LineReader(std::string path, int fd, int64_t start_offset,
             int64_t start_line);

  // Refills buffer_ after its contents were consumed; false at end of file.
  absl::StatusOr<bool> Fill();

  const std::string path_;
  const int fd_;
  std::unique_ptr<char[]> buffer_;
  // Unconsumed bytes are buffer_[begin_, end_).
  size_t begin_ = 0;
  size_t end_ = 0;
  // Offset in the file of the byte after buffer_[end_ - 1].
  int64_t read_offset_;
  int64_t line_number_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_LINE_READER_H_
