#include "runtime/input/csv_reader.h"

#include <cmath>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/input/line_reader.h"
#include "runtime/input/quoted_token.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

absl::Status WithLocation(const absl::Status& status,
                          absl::string_view location) {
  return absl::Status(status.code(),
                      absl::StrCat(location, ": ", status.message()));
}

absl::Status CheckOptions(const CsvOptions& options) {
  if (options.delimiter == '"' || options.delimiter == '\n' ||
      options.delimiter == '\r') {
    return absl::InvalidArgumentError(
        absl::StrCat("CsvOptions: delimiter '",
                     absl::CEscape(absl::string_view(&options.delimiter, 1)),
                     "' cannot separate fields"));
  }
  if (!options.label_column_name.empty() && !options.has_header) {
    return absl::InvalidArgumentError(
        absl::StrCat("CsvOptions: label_column_name \"",
                     options.label_column_name, "\" needs has_header"));
  }
  return absl::OkStatus();
}

constexpr absl::string_view kQuotedFieldError =
    "quoted fields are not supported";

bool IsBlank(absl::string_view line) {
  return absl::StripAsciiWhitespace(line).empty();
}

// Splits the non-blank `line` into `*fields`, each stripped of whitespace;
// returns the index of the first quoted field, or -1.
int SplitFields(absl::string_view line, char delimiter,
                std::vector<absl::string_view>* fields) {
  *fields = absl::StrSplit(line, delimiter);
  int quoted = -1;
  for (size_t i = 0; i < fields->size(); ++i) {
    absl::string_view& field = (*fields)[i];
    field = absl::StripAsciiWhitespace(field);
    if (quoted < 0 && absl::StartsWith(field, "\"")) {
      quoted = static_cast<int>(i);
    }
  }
  return quoted;
}

absl::string_view WithoutCarriageReturn(absl::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

absl::StatusOr<std::vector<absl::string_view>> SplitCsvFields(
    absl::string_view line, char delimiter) {
  line = WithoutCarriageReturn(line);
  std::vector<absl::string_view> fields;
  if (IsBlank(line)) return fields;
  if (const int quoted = SplitFields(line, delimiter, &fields); quoted >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("column ", quoted + 1, ": ", kQuotedFieldError));
  }
  return fields;
}

absl::StatusOr<CsvLineParser> CsvLineParser::Create(CsvOptions options) {
  RETURN_IF_ERROR(CheckOptions(options));
  return CsvLineParser(std::move(options));
}

std::string CsvLineParser::ColumnName(int index) const {
  if (names_.empty()) return absl::StrCat("column ", index + 1);
  return absl::StrCat("column ", index + 1, " (", QuotedToken(names_[index]),
                      ")");
}

absl::Status CsvLineParser::ReadSchema(
    const std::vector<absl::string_view>& fields) {
  const int n = static_cast<int>(fields.size());
  std::vector<std::string> names;
  if (options_.has_header) {
    names.reserve(n);
    for (absl::string_view field : fields) {
      names.emplace_back(absl::StripAsciiWhitespace(field));
    }
  }
  int label = -1;
  if (!options_.label_column_name.empty()) {
    for (int i = 0; i < n; ++i) {
      if (names[i] != options_.label_column_name) continue;
      if (label >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "label column name \"", options_.label_column_name,
            "\" is ambiguous: columns ", label + 1, " and ", i + 1));
      }
      label = i;
    }
    if (label < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("no column named \"", options_.label_column_name,
                       "\" in the header (", absl::StrJoin(names, ", "), ")"));
    }
  } else {
    label = options_.label_column < 0 ? n + options_.label_column
                                      : options_.label_column;
    if (label < 0 || label >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("label_column ", options_.label_column,
                       " is out of range for ", n, " columns"));
    }
  }
  names_ = std::move(names);
  num_columns_ = n;
  label_index_ = label;
  return absl::OkStatus();
}

absl::StatusOr<Example> CsvLineParser::ParseFields(
    const std::vector<absl::string_view>& fields) const {
  if (static_cast<int>(fields.size()) != num_columns_) {
    return absl::InvalidArgumentError(
        absl::StrCat(fields.size(), " columns, expected ", num_columns_));
  }
  Example example;
  example.dense.reserve(num_columns_ - 1);
  for (int i = 0; i < num_columns_; ++i) {
    const absl::string_view text = absl::StripAsciiWhitespace(fields[i]);
    if (text.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(ColumnName(i), ": empty field"));
    }
    float value;
    if (!absl::SimpleAtof(text, &value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          ColumnName(i), ": ", QuotedToken(text), " is not a number"));
    }
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          ColumnName(i), ": ", QuotedToken(text), " is not finite"));
    }
    if (i == label_index_) {
      example.label = value;
    } else {
      example.dense.push_back(value);
    }
  }
  return example;
}

absl::StatusOr<std::vector<absl::string_view>> CsvLineParser::Split(
    absl::string_view line, absl::string_view location) const {
  std::vector<absl::string_view> fields;
  // Checked before counting columns: a quoted field holding the delimiter
  // would otherwise be reported as a wrong number of columns.
  if (const int quoted = SplitFields(line, options_.delimiter, &fields);
      quoted >= 0) {
    const std::string column = quoted < num_columns_
                                   ? ColumnName(quoted)
                                   : absl::StrCat("column ", quoted + 1);
    return absl::InvalidArgumentError(
        absl::StrCat(location, ": ", column, ": ", kQuotedFieldError));
  }
  return fields;
}

absl::StatusOr<std::optional<Example>> CsvLineParser::ParseLine(
    absl::string_view line, absl::string_view location) {
  line = WithoutCarriageReturn(line);
  if (IsBlank(line)) return std::nullopt;
  ASSIGN_OR_RETURN(const std::vector<absl::string_view> fields,
                   Split(line, location));
  const bool first = num_columns_ == 0;
  if (first) {
    if (absl::Status s = ReadSchema(fields); !s.ok()) {
      return WithLocation(s, location);
    }
    if (options_.has_header) return std::nullopt;
  }
  absl::StatusOr<Example> example = ParseFields(fields);
  if (!example.ok()) return WithLocation(example.status(), location);
  return *std::move(example);
}

absl::StatusOr<Example> CsvLineParser::ParseRow(
    absl::string_view line, absl::string_view location) const {
  if (num_columns_ == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        location, ": the columns are not known yet (no header or first row)"));
  }
  line = WithoutCarriageReturn(line);
  if (IsBlank(line)) {
    return absl::InvalidArgumentError(
        absl::StrCat(location, ": blank line, no example"));
  }
  ASSIGN_OR_RETURN(const std::vector<absl::string_view> fields,
                   Split(line, location));
  absl::StatusOr<Example> example = ParseFields(fields);
  if (!example.ok()) return WithLocation(example.status(), location);
  return *std::move(example);
}

absl::StatusOr<std::vector<Example>> ParseCsvFile(const std::string& path,
                                                  const CsvOptions& options) {
  ASSIGN_OR_RETURN(CsvLineParser parser, CsvLineParser::Create(options));
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  std::vector<Example> examples;
  std::string line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->ReadLine(&line));
    if (!more) break;
    ASSIGN_OR_RETURN(std::optional<Example> example,
                     parser.ParseLine(line, reader->location()));
    if (example.has_value()) {
      example->line = reader->line_number();
      examples.push_back(*std::move(example));
    }
  }
  return examples;
}

}  // namespace distrt
