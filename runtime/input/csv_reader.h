#ifndef DISTRT_RUNTIME_INPUT_CSV_READER_H_
#define DISTRT_RUNTIME_INPUT_CSV_READER_H_

// Reads dense numeric CSV: one example per line, one column of it the label
// and the others, in order, Example::dense.
//
// Every field is a finite float, optionally surrounded by spaces. Every row
// has as many columns as the header, or as the first row when there is none.
// Lines end with "\n" or "\r\n"; blank lines (empty or only whitespace) hold
// no example and are skipped. Quoted fields are not supported: a field that
// starts with '"' is an error saying so, rather than a field split at a
// quoted delimiter.
//
// Malformed input is never skipped: the first error is returned, with code
// INVALID_ARGUMENT and a message "<file>:<line>: <what is wrong>" that names
// the column (1-based, as in spreadsheets and `cut`; with its header name
// when there is a header), e.g.
//   train.csv:9: column 3 ("age"): "abc" is not a number
//   train.csv:12: 5 columns, expected 6
// Errors reading the file name the path, with a code that follows errno
// (NOT_FOUND, PERMISSION_DENIED, ...).

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/example.h"

namespace distrt {

struct CsvOptions {
  // Not '"', '\n' or '\r'.
  char delimiter = ',';
  // Whether the first line names the columns rather than holding an example.
  bool has_header = false;
  // The label's column, 0-based; negative counts from the end (-1: the last).
  int label_column = 0;
  // When not empty, the label is the header's column of this name and
  // label_column is ignored. Needs has_header.
  std::string label_column_name;
};

// Parses the lines of one CSV file in order; it remembers the header and the
// number of columns. Not thread-safe.
class CsvLineParser {
 public:
  // INVALID_ARGUMENT for an unusable delimiter, or label_column_name without
  // has_header.
  static absl::StatusOr<CsvLineParser> Create(CsvOptions options);

  // Parses the next line (without its newline; a trailing '\r' is ignored):
  // nullopt for the header and for blank lines. `location`, typically
  // "<file>:<line>", prefixes error messages. Besides malformed fields, the
  // first non-blank line can be an error: a label column that is not in it
  // (out of range, or no column of that name).
  absl::StatusOr<std::optional<Example>> ParseLine(absl::string_view line,
                                                   absl::string_view location);

  // Parses one row once the columns are known (num_columns() > 0), without
  // changing the parser: thread-safe, for a parser shared by the threads
  // that parse one file (text_record_format.h). Errors as ParseLine's; a
  // blank line is INVALID_ARGUMENT (it holds no example), and
  // FAILED_PRECONDITION before the columns are known.
  absl::StatusOr<Example> ParseRow(absl::string_view line,
                                   absl::string_view location) const;

  // Known once the first non-blank line was parsed: 0 before.
  int num_columns() const { return num_columns_; }
  // The resolved 0-based label column; -1 before the first non-blank line.
  int label_index() const { return label_index_; }
  // The header's names (whitespace around them removed); empty without one.
  const std::vector<std::string>& column_names() const { return names_; }

 private:
  explicit CsvLineParser(CsvOptions options) : options_(std::move(options)) {}

  // Sets names_, num_columns_ and label_index_ from the first non-blank line.
  absl::Status ReadSchema(const std::vector<absl::string_view>& fields);
  // The fields of a non-blank `line` (see SplitCsvFields), an error naming
  // the column of a quoted field.
  absl::StatusOr<std::vector<absl::string_view>> Split(
      absl::string_view line, absl::string_view location) const;
  absl::StatusOr<Example> ParseFields(
      const std::vector<absl::string_view>& fields) const;
  // "column 3" or "column 3 (\"age\")" for the 0-based column `index`.
  std::string ColumnName(int index) const;

  CsvOptions options_;
  std::vector<std::string> names_;
  int num_columns_ = 0;
  int label_index_ = -1;
};

// The fields of one CSV line (without its newline; a trailing '\r' is
// ignored) as CsvLineParser splits it: at every `delimiter`, each with the
// whitespace around it removed, so "1, 2,,x " gives "1", "2", "", "x". A
// blank line has no fields. A field that starts with '"' is
// INVALID_ARGUMENT "column <n>: quoted fields are not supported" (1-based;
// callers prefix where the line is). The views point into `line`.
absl::StatusOr<std::vector<absl::string_view>> SplitCsvFields(
    absl::string_view line, char delimiter);

// Every example in the CSV file at `path`, in file order, each with its
// Example::line. An empty file (or one with only a header) gives no
// examples.
absl::StatusOr<std::vector<Example>> ParseCsvFile(
    const std::string& path, const CsvOptions& options = {});

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_CSV_READER_H_
