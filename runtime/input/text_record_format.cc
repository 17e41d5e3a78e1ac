#include "runtime/input/text_record_format.h"

#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "runtime/input/line_reader.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Whether a line holds a record; the others are skipped without an index.
using HoldsRecord = bool (*)(absl::string_view line);

// Not blank once the comment is dropped; the separators are
// ParseLibsvmLine's.
bool LibsvmLineHoldsRecord(absl::string_view line) {
  for (const char c : line) {
    switch (c) {
      case '#':
        return false;
      case ' ':
      case '\t':
      case '\r':
      case '\v':
      case '\f':
        continue;
      default:
        return true;
    }
  }
  return false;
}

// As CsvLineParser::ParseLine tells a blank line.
bool CsvLineHoldsRecord(absl::string_view line) {
  return !absl::StripAsciiWhitespace(line).empty();
}

absl::Status WithLocation(const absl::Status& status,
                          absl::string_view location) {
  return absl::Status(status.code(),
                      absl::StrCat(location, ": ", status.message()));
}

// Positions a text reader can have reported: the file's start ({} or line
// 1), or a later line with fewer records than lines before it.
absl::Status CheckStart(const std::string& path, const RecordPosition& start) {
  const bool at_file_start = start.offset == 0 && start.index == 0 &&
                             start.line <= 1 && start.line >= 0;
  const bool later = start.offset > 0 && start.line >= 2 && start.index >= 0 &&
                     start.index < start.line;
  if (at_file_start || later) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "cannot open ", path, " at record ", start.index, ", byte ", start.offset,
      ", line ", start.line, ": not the position of a line of a text file"));
}

absl::StatusOr<std::unique_ptr<LineReader>> OpenLines(
    const std::string& path, const RecordPosition& start) {
  if (start.offset == 0) return LineReader::Open(path);
  return LineReader::Open(path, start.offset, start.line);
}

// Reads one file's lines one ahead, so that position() is the next
// record's even when blank lines come before it.
class TextRecordReader : public RecordReader {
 public:
  TextRecordReader(std::unique_ptr<LineReader> lines, HoldsRecord holds_record,
                   int64_t first_index,
                   std::shared_ptr<const RecordParser> parser)
      : lines_(std::move(lines)),
        holds_record_(holds_record),
        parser_(std::move(parser)),
        next_index_(first_index) {}

  // Finds the first record from where `lines` is; a read error fails it.
  absl::Status Start() {
    Advance();
    return status_;
  }

  // Makes `line`, read at `position` (whose index must be the first
  // index), the first record; the lines after it come from `lines`.
  void StartWith(std::string line, const RecordPosition& position) {
    next_ = std::move(line);
    next_position_ = position;
    has_next_ = true;
  }

  absl::StatusOr<bool> Next(std::string* record) override {
    RETURN_IF_ERROR(status_);
    if (!has_next_) return false;
    // The caller's string becomes the next line's buffer: no copy, and its
    // capacity is reused.
    record->swap(next_);
    ++next_index_;
    Advance();
    return true;
  }

  RecordPosition position() const override { return next_position_; }
  const std::string& path() const override { return lines_->path(); }
  std::shared_ptr<const RecordParser> parser() const override {
    return parser_;
  }

 private:
  // Reads up to the next line that holds a record into next_, or to the
  // end of the file; a read error is kept for the next Next().
  void Advance() {
    while (true) {
      const int64_t offset = lines_->next_line_offset();
      absl::StatusOr<bool> more = lines_->ReadLine(&next_);
      if (!more.ok() || !*more) {
        status_ = more.status();
        has_next_ = false;
        next_position_ = {offset, next_index_, lines_->line_number() + 1};
        return;
      }
      if (holds_record_(next_)) {
        has_next_ = true;
        next_position_ = {offset, next_index_, lines_->line_number()};
        return;
      }
    }
  }

  const std::unique_ptr<LineReader> lines_;
  const HoldsRecord holds_record_;
  const std::shared_ptr<const RecordParser> parser_;
  // The record Next() returns next, when has_next_, and where it is (else
  // the end of the file).
  std::string next_;
  bool has_next_ = false;
  RecordPosition next_position_;
  int64_t next_index_;
  // A read error, returned by every later Next().
  absl::Status status_;
};

class LibsvmRecordParser : public RecordParser {
 public:
  // options.index_base is kZero or kOne.
  explicit LibsvmRecordParser(const LibsvmOptions& options)
      : options_(options) {}

  absl::StatusOr<Example> Parse(absl::string_view record,
                                const RecordLocation& where) const override {
    const std::string location = where.ToString();
    ASSIGN_OR_RETURN(std::optional<Example> example,
                     ParseLibsvmLine(record, options_, location));
    if (!example.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(location, ": blank or comment-only line, no example"));
    }
    example->line = where.position.line;
    return *std::move(example);
  }

 private:
  const LibsvmOptions options_;
};

class CsvRecordParser : public RecordParser {
 public:
  // `parser` has read the file's first non-blank line, or the file has
  // none.
  explicit CsvRecordParser(CsvLineParser parser) : parser_(std::move(parser)) {}

  absl::StatusOr<Example> Parse(absl::string_view record,
                                const RecordLocation& where) const override {
    ASSIGN_OR_RETURN(Example example,
                     parser_.ParseRow(record, where.ToString()));
    example.line = where.position.line;
    return example;
  }

 private:
  const CsvLineParser parser_;
};

// Reads up to the first non-blank line of a CSV file into `first`, the
// line that fixes the columns (the header, or the first row), and returns
// where it is (its index 0); none when the file has no such line.
absl::StatusOr<std::optional<RecordPosition>> ReadFirstCsvLine(
    LineReader& lines, std::string* first) {
  while (true) {
    const int64_t offset = lines.next_line_offset();
    ASSIGN_OR_RETURN(bool more, lines.ReadLine(first));
    if (!more) return std::nullopt;
    if (CsvLineHoldsRecord(*first)) {
      return RecordPosition{offset, 0, lines.line_number()};
    }
  }
}

// CsvLineParser's parser for a file whose first non-blank line is `first`
// (at `first_position`, when there is one): it reads the header, or the
// columns of the first row, there. An error in that row's fields is its
// record's, reported when it is parsed; only one that leaves the columns
// unknown fails here.
absl::StatusOr<std::shared_ptr<const RecordParser>> MakeCsvLineParser(
    const CsvOptions& options, const std::string& path,
    const std::string& first,
    const std::optional<RecordPosition>& first_position) {
  ASSIGN_OR_RETURN(CsvLineParser line_parser, CsvLineParser::Create(options));
  if (first_position.has_value()) {
    const absl::StatusOr<std::optional<Example>> parsed = line_parser.ParseLine(
        first, RecordLocation{path, *first_position}.ToString());
    if (!parsed.ok() && line_parser.num_columns() == 0) {
      return parsed.status();
    }
  }
  return std::make_shared<CsvRecordParser>(std::move(line_parser));
}

// A later start (offset > 0) of a CSV file must be past its header, or at
// or past its first record when it has none.
absl::Status CheckCsvLaterStart(
    const std::string& path, const RecordPosition& start,
    const std::optional<RecordPosition>& first_position, bool first_is_record) {
  if (!first_position.has_value()) return absl::OkStatus();
  if (first_is_record && start.offset < first_position->offset) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open ", path, " at byte ", start.offset,
                     ": the first record is at byte ", first_position->offset));
  }
  if (!first_is_record && start.offset <= first_position->offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot open ", path, " at byte ", start.offset,
        ": the records follow the header at byte ", first_position->offset));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<LibsvmFormat>> LibsvmFormat::Create(
    const LibsvmOptions& options) {
  if (options.num_features < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LibsvmOptions: num_features ", options.num_features, " is negative"));
  }
  return std::unique_ptr<LibsvmFormat>(new LibsvmFormat(options));
}

absl::StatusOr<std::unique_ptr<RecordReader>> LibsvmFormat::Open(
    const std::string& path, const RecordPosition& start) const {
  RETURN_IF_ERROR(CheckStart(path, start));
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, OpenLines(path, start));
  LibsvmOptions options = options_;
  if (options.index_base == IndexBase::kDetect) {
    ASSIGN_OR_RETURN(options.index_base, DetectIndexBase(path));
  }
  auto reader = std::make_unique<TextRecordReader>(
      std::move(lines), LibsvmLineHoldsRecord, start.index,
      std::make_shared<LibsvmRecordParser>(options));
  RETURN_IF_ERROR(reader->Start());
  return reader;
}

absl::StatusOr<std::unique_ptr<CsvFormat>> CsvFormat::Create(
    const CsvOptions& options, NamedCsvParserFactory named_parser) {
  RETURN_IF_ERROR(CsvLineParser::Create(options).status());
  return std::unique_ptr<CsvFormat>(
      new CsvFormat(options, std::move(named_parser)));
}

absl::StatusOr<std::unique_ptr<RecordReader>> CsvFormat::Open(
    const std::string& path, const RecordPosition& start) const {
  RETURN_IF_ERROR(CheckStart(path, start));
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> lines, LineReader::Open(path));
  std::string first;
  ASSIGN_OR_RETURN(const std::optional<RecordPosition> first_position,
                   ReadFirstCsvLine(*lines, &first));
  ASSIGN_OR_RETURN(std::shared_ptr<const RecordParser> parser,
                   MakeParser(path, first, first_position));

  const bool first_is_record =
      first_position.has_value() && !options_.has_header;
  if (start.offset == 0) {
    // Go on from the first line, already read.
    auto reader = std::make_unique<TextRecordReader>(
        std::move(lines), CsvLineHoldsRecord, /*first_index=*/0,
        std::move(parser));
    if (first_is_record) {
      reader->StartWith(std::move(first), *first_position);
    } else {
      RETURN_IF_ERROR(reader->Start());
    }
    return reader;
  }
  RETURN_IF_ERROR(
      CheckCsvLaterStart(path, start, first_position, first_is_record));
  lines.reset();
  ASSIGN_OR_RETURN(lines, OpenLines(path, start));
  auto reader = std::make_unique<TextRecordReader>(
      std::move(lines), CsvLineHoldsRecord, start.index, std::move(parser));
  RETURN_IF_ERROR(reader->Start());
  return reader;
}

absl::StatusOr<std::shared_ptr<const RecordParser>> CsvFormat::MakeParser(
    const std::string& path, const std::string& first,
    const std::optional<RecordPosition>& first_position) const {
  if (!first_position.has_value() || !options_.has_header || !named_parser_) {
    return MakeCsvLineParser(options_, path, first, first_position);
  }
  // The factory makes it from the header's names.
  const std::string location = RecordLocation{path, *first_position}.ToString();
  absl::StatusOr<std::vector<absl::string_view>> fields =
      SplitCsvFields(first, options_.delimiter);
  if (!fields.ok()) return WithLocation(fields.status(), location);
  ASSIGN_OR_RETURN(
      std::shared_ptr<const RecordParser> parser,
      named_parser_(std::vector<std::string>(fields->begin(), fields->end()),
                    path));
  if (parser == nullptr) {
    return absl::InternalError(
        absl::StrCat("the named CSV parser factory made no parser for ", path));
  }
  return parser;
}

}  // namespace distrt
