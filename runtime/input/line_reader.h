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
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Stores the next line in `*line` and returns true, or returns false at
  // the end of the file. A read error (e.g. `path` is a directory) has a
  // code that follows errno and names the path and the line.
  absl::StatusOr<bool> ReadLine(std::string* line);

  const std::string& path() const { return path_; }
  // 1-based number of the line last read; 0 before the first.
  int64_t line_number() const { return line_number_; }
  // "<path>:<line_number>", the prefix of messages about the line last read.
  std::string location() const;

 private:
  LineReader(std::string path, int fd);

  // Refills buffer_ after its contents were consumed; false at end of file.
  absl::StatusOr<bool> Fill();

  const std::string path_;
  const int fd_;
  std::unique_ptr<char[]> buffer_;
  // Unconsumed bytes are buffer_[begin_, end_).
  size_t begin_ = 0;
  size_t end_ = 0;
  int64_t line_number_ = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_LINE_READER_H_
