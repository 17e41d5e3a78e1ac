// Fuzzes the CSV reader (runtime/input/csv_reader.h), options included.
//
// Input: three bytes of options, an optional label column name, then the
// text of a file.
//   byte 0  bits 0-3  delimiter: ',' '\t' ';' ' ' '|' ':' '"' '\n' '\r'
//                     '\0', or (10-15) byte 2 as it is
//           bit 4     has_header
//           bit 5     label_column_name: the bytes up to the first '\n'
//                     after byte 2 (the file text follows that '\n')
//   byte 1  label_column, as a signed byte
//   byte 2  the delimiter when bits 0-3 of byte 0 are 10-15
//
// Every line goes through one CsvLineParser, and the text, written to a
// scratch file, through ParseCsvFile. Checked beyond "no crash": Create
// refuses exactly the options the header says it refuses; what the header
// promises of a parsed example (a label and num_columns() - 1 dense
// features, all finite); and that the file reader agrees with the line
// parser: the same examples, or the same first error.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_util.h"
#include "runtime/input/csv_reader.h"
#include "runtime/input/example.h"
#include "runtime/util/file_system.h"

namespace distrt::fuzz {
namespace {

constexpr char kDelimiters[10] = {',', '\t', ';',  ' ',  '|',
                                  ':', '"',  '\n', '\r', '\0'};

struct Input {
  CsvOptions options;
  absl::string_view text;
};

Input Decode(const uint8_t* data, size_t size) {
  ByteReader reader(data, size);
  const uint8_t flags = reader.Byte();
  const int8_t label_column = static_cast<int8_t>(reader.Byte());
  const char raw_delimiter = static_cast<char>(reader.Byte());
  Input input;
  const int choice = flags & 15;
  input.options.delimiter = choice < 10 ? kDelimiters[choice] : raw_delimiter;
  input.options.has_header = (flags & 16) != 0;
  input.options.label_column = label_column;
  input.text = reader.Rest();
  if (flags & 32) {
    const size_t newline = input.text.find('\n');
    input.options.label_column_name =
        std::string(input.text.substr(0, newline));
    input.text.remove_prefix(
        newline == absl::string_view::npos ? input.text.size() : newline + 1);
  }
  return input;
}

bool SameExamples(const std::vector<Example>& a,
                  const std::vector<Example>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].label != b[i].label || a[i].dense != b[i].dense) return false;
  }
  return true;
}

void CheckParser(const CsvLineParser& parser, const CsvOptions& options,
                 const Example& example) {
  const int n = parser.num_columns();
  if (n < 1 || parser.label_index() < 0 || parser.label_index() >= n) {
    FuzzFail(absl::StrCat("an example from a parser with ", n,
                          " columns and label index ", parser.label_index()));
  }
  if (options.has_header && parser.column_names().size() != size_t(n)) {
    FuzzFail(absl::StrCat(parser.column_names().size(), " column names for ", n,
                          " columns"));
  }
  if (!options.label_column_name.empty() &&
      parser.column_names()[parser.label_index()] !=
          options.label_column_name) {
    FuzzFail("the label column is not the one named");
  }
  if (example.dense.size() != size_t(n - 1)) {
    FuzzFail(absl::StrCat(example.dense.size(), " dense features for ", n,
                          " columns"));
  }
  if (!std::isfinite(example.label)) FuzzFail("label is not finite");
  for (float value : example.dense) {
    if (!std::isfinite(value)) FuzzFail("feature is not finite");
  }
  if (!example.ids.empty() || !example.values.empty()) {
    FuzzFail("sparse features from CSV");
  }
}

// Every line through one parser, named as ParseCsvFile names the lines of
// `path`: the examples, or the first error.
absl::StatusOr<std::vector<Example>> ParseLines(CsvLineParser& parser,
                                                const CsvOptions& options,
                                                absl::string_view text,
                                                const std::string& path) {
  const std::vector<absl::string_view> lines = SplitLinesLikeLineReader(text);
  std::vector<Example> examples;
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StatusOr<std::optional<Example>> example =
        parser.ParseLine(lines[i], absl::StrCat(path, ":", i + 1));
    if (!example.ok()) {
      ExpectCode(example.status(), absl::StatusCode::kInvalidArgument,
                 "CsvLineParser::ParseLine");
      return example.status();
    }
    if (!example->has_value()) continue;
    CheckParser(parser, options, **example);
    examples.push_back(**example);
  }
  return examples;
}

void Run(const uint8_t* data, size_t size) {
  const Input input = Decode(data, size);
  const CsvOptions& options = input.options;
  const std::string path = JoinPath(ScratchDir(), "data.csv");
  WriteScratchFile(path, input.text);

  absl::StatusOr<std::vector<Example>> file = ParseCsvFile(path, options);
  absl::StatusOr<CsvLineParser> parser = CsvLineParser::Create(options);
  const bool usable = options.delimiter != '"' && options.delimiter != '\n' &&
                      options.delimiter != '\r' &&
                      (options.label_column_name.empty() || options.has_header);
  if (parser.ok() != usable) {
    FuzzFail(absl::StrCat("CsvLineParser::Create ",
                          parser.ok() ? "accepted" : "refused", " delimiter ",
                          int{options.delimiter}, ", has_header ",
                          options.has_header, ", label_column_name \"",
                          options.label_column_name, "\""));
  }
  if (!parser.ok()) {
    ExpectCode(parser.status(), absl::StatusCode::kInvalidArgument,
               "CsvLineParser::Create");
    if (file.status() != parser.status()) {
      FuzzFail(absl::StrCat("ParseCsvFile says ", file.status().ToString(),
                            ", Create ", parser.status().ToString()));
    }
    return;
  }
  if (!file.ok()) {
    ExpectCode(file.status(), absl::StatusCode::kInvalidArgument,
               "ParseCsvFile");
  }
  absl::StatusOr<std::vector<Example>> lines =
      ParseLines(*parser, options, input.text, path);
  if (file.ok() != lines.ok() ||
      (!file.ok() && file.status() != lines.status()) ||
      (file.ok() && !SameExamples(*file, *lines))) {
    FuzzFail(absl::StrCat("ParseCsvFile and CsvLineParser disagree: ",
                          file.ok() ? absl::StrCat(file->size(), " examples")
                                    : file.status().ToString(),
                          " vs ",
                          lines.ok() ? absl::StrCat(lines->size(), " examples")
                                     : lines.status().ToString()));
  }
}

}  // namespace
}  // namespace distrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  distrt::fuzz::Run(data, size);
  return 0;
}
