#ifndef DISTRT_RUNTIME_INPUT_RECORD_READER_H_
#define DISTRT_RUNTIME_INPUT_RECORD_READER_H_

// Records: the unit every input format is read in, before parsing. A
// RecordReader streams one file's records (TFRecord payloads, or the lines
// of a text file that hold an example) with where each one is; a
// RecordParser turns one record into an Example. A RecordFormat opens
// readers for one format and options. Reading is sequential per file;
// parsing is separate so that the input pipeline can parse on a pool of
// threads while one thread per file reads.
//
// Positions make the pipeline resumable: a reader opened at a position a
// reader of the same file reported returns the same records from there.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/example.h"

namespace distrt {

// Where a record is in its file.
struct RecordPosition {
  // Byte offset of the record in the file's (uncompressed) stream.
  int64_t offset = 0;
  // 0-based index of the record among the file's records.
  int64_t index = 0;
  // 1-based line of text formats; 0 for binary ones.
  int64_t line = 0;
};

// Which record, for error messages.
struct RecordLocation {
  std::string path;
  RecordPosition position;

  // "<path>: record <index> at byte <offset>", or "<path>:<line>" for a
  // text format (as the text readers' messages always were).
  std::string ToString() const;
};

// Turns the records of one file into Examples. Thread-safe: Parse is const
// and called from several threads at once.
class RecordParser {
 public:
  virtual ~RecordParser() = default;
  // INVALID_ARGUMENT naming `where` and what is wrong (the feature, for
  // named features).
  virtual absl::StatusOr<Example> Parse(absl::string_view record,
                                        const RecordLocation& where) const = 0;
};

// One file's records, in order. Not thread-safe.
class RecordReader {
 public:
  virtual ~RecordReader() = default;

  // Stores the next record in `*record` and returns true, or false at the
  // end of the file. A damaged record (bad checksum, truncated) is
  // DATA_LOSS naming the path, the record's index and byte offset; a read
  // error has a code that follows errno and names the path.
  virtual absl::StatusOr<bool> Next(std::string* record) = 0;

  // Where the record the next Next() returns starts (after the last one,
  // at the end).
  virtual RecordPosition position() const = 0;

  virtual const std::string& path() const = 0;

  // How this file's records are parsed: shared by every record of the file
  // (a CSV file's parser knows its header) and outliving the reader.
  virtual std::shared_ptr<const RecordParser> parser() const = 0;
};

// A format with its options. Thread-safe.
class RecordFormat {
 public:
  virtual ~RecordFormat() = default;
  // Opens `path` at `start` (a position a reader of the same file
  // reported; {} is the file's start). Errors name the path.
  virtual absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, const RecordPosition& start) const = 0;
  // "tfrecord", "tfrecord (gzip)", "csv", "libsvm", for progress lines.
  virtual std::string name() const = 0;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_RECORD_READER_H_
