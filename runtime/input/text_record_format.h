#ifndef DISTRT_RUNTIME_INPUT_TEXT_RECORD_FORMAT_H_
#define DISTRT_RUNTIME_INPUT_TEXT_RECORD_FORMAT_H_

// The text formats, LIBSVM and CSV, as RecordFormats (record_reader.h): the
// streaming path that reads files larger than memory, one line at a time.
// They give exactly the examples ParseLibsvmFile / ParseCsvFile give for the
// same options, with the same error messages ("<file>:<line>: ..."), but
// never hold more than a line (and LineReader's 64 KiB buffer).
//
// A record is a line that holds an example, as read (without its newline
// and a trailing '\r'; a UTF-8 byte order mark at the file's start
// dropped). Lines that hold none are skipped by the reader and take no
// index: blank lines, LIBSVM's comment-only lines ('#'), and the CSV header
// (read at Open). A record's RecordPosition is the byte offset of its line's
// start, its 0-based index among the file's records and its 1-based line.
// Opened at a position a reader of the same file reported, a reader seeks
// there and goes on with the same indices and line numbers; the end
// position (after the last record) is {file size, record count, last line +
// 1}. A position that is not a line's start of the file (it changed, or the
// position is of another file) is an error at Open, when it can be told.
//
// Each file's parser is made at Open and outlives the reader:
//  - LIBSVM: ParseLibsvmLine with the file's index base. IndexBase::kDetect
//    is decided per file at every Open by DetectIndexBase, which reads up to
//    the first index 0: a 1-based file is read twice (once at Open), and a
//    malformed line met on the way fails Open. Give kOne or kZero when the
//    base is known to read each file once. Out-of-range ids (num_features)
//    are reported at their line, where ParseLibsvmFile with kDetect reports
//    them only after reading the whole file (a malformed line later in the
//    file is then reported first).
//  - CSV: the first non-blank line fixes the columns (the header, or the
//    first row of a file without one): Open reads it, also when it opens
//    at a later position, so an error in it that ParseCsvFile would report
//    (a label column that is not there, a quoted field) fails Open. With a
//    header and a NamedCsvParserFactory, the factory makes the parser from
//    the header's names instead (how a feature spec maps named columns).
//
// Formats are thread-safe; readers are not (one thread reads one); parsers
// are (Parse is const). Errors reading a file name the path with a code that
// follows errno.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/input/csv_reader.h"
#include "runtime/input/libsvm_reader.h"
#include "runtime/input/record_reader.h"

namespace distrt {

class LibsvmFormat : public RecordFormat {
 public:
  // INVALID_ARGUMENT for options ParseLibsvmFile would refuse (a negative
  // num_features).
  static absl::StatusOr<std::unique_ptr<LibsvmFormat>> Create(
      const LibsvmOptions& options);

  absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, const RecordPosition& start) const override;
  std::string name() const override { return "libsvm"; }

 private:
  explicit LibsvmFormat(const LibsvmOptions& options) : options_(options) {}

  const LibsvmOptions options_;
};

// Makes the parser of one CSV file from its header: the names, each with the
// whitespace around it removed, in column order, and the file's path (for
// messages). The parser gets each record as the raw line (a trailing '\r'
// already removed) and splits it itself, with SplitCsvFields (csv_reader.h)
// to follow CsvLineParser's rules. An error fails Open as it is returned:
// it should name the path. Called at every Open of a file that has a header
// (not of an empty one), from the threads that open files: thread-safe.
using NamedCsvParserFactory =
    std::function<absl::StatusOr<std::shared_ptr<const RecordParser>>(
        const std::vector<std::string>& header, const std::string& path)>;

class CsvFormat : public RecordFormat {
 public:
  // INVALID_ARGUMENT for options ParseCsvFile would refuse. `named_parser`
  // is used only when options.has_header; without it (or without a header)
  // each file's parser is CsvLineParser's, with options.label_column(_name).
  static absl::StatusOr<std::unique_ptr<CsvFormat>> Create(
      const CsvOptions& options, NamedCsvParserFactory named_parser = nullptr);

  absl::StatusOr<std::unique_ptr<RecordReader>> Open(
      const std::string& path, const RecordPosition& start) const override;
  std::string name() const override { return "csv"; }

 private:
  CsvFormat(const CsvOptions& options, NamedCsvParserFactory named_parser)
      : options_(options), named_parser_(std::move(named_parser)) {}

  // The parser of the file at `path`, whose first non-blank line is
  // `first`, read at `first_position` (none: the file has no such line).
  absl::StatusOr<std::shared_ptr<const RecordParser>> MakeParser(
      const std::string& path, const std::string& first,
      const std::optional<RecordPosition>& first_position) const;

  const CsvOptions options_;
  const NamedCsvParserFactory named_parser_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_TEXT_RECORD_FORMAT_H_
