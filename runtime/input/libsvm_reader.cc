#include "runtime/input/libsvm_reader.h"

#include <cmath>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/input/line_reader.h"
#include "runtime/input/quoted_token.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// Whitespace between tokens; '\r' so that a CRLF line parses like an LF one.
constexpr absl::string_view kSeparators = " \t\r\v\f";

constexpr absl::string_view kQidPrefix = "qid:";

absl::Status WithLocation(const absl::Status& status,
                          absl::string_view location) {
  return absl::Status(status.code(),
                      absl::StrCat(location, ": ", status.message()));
}

absl::Status CheckOptions(const LibsvmOptions& options) {
  if (options.num_features < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "LibsvmOptions: num_features ", options.num_features, " is negative"));
  }
  return absl::OkStatus();
}

absl::Status ParseLabel(absl::string_view text, LabelKind kind, float* label) {
  if (!absl::SimpleAtof(text, label)) {
    return absl::InvalidArgumentError(
        absl::StrCat("label ", QuotedToken(text), " is not a number"));
  }
  if (!std::isfinite(*label)) {
    return absl::InvalidArgumentError(
        absl::StrCat("label ", QuotedToken(text), " is not finite"));
  }
  if (kind == LabelKind::kBinary) {
    if (*label == -1.0f || *label == 0.0f) {
      *label = 0.0f;
    } else if (*label != 1.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label ", QuotedToken(text), " is not binary: expected -1, 0 or +1"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckQid(absl::string_view token) {
  const absl::string_view text = token.substr(kQidPrefix.size());
  int64_t qid;
  if (!absl::SimpleAtoi(text, &qid)) {
    return absl::InvalidArgumentError(
        absl::StrCat(QuotedToken(token), ": query id ", QuotedToken(text),
                     " is not an integer"));
  }
  return absl::OkStatus();
}

// Parses `line` keeping indices as written. An index 0 is an error unless
// `zero_allowed`. Messages carry no location.
absl::StatusOr<std::optional<Example>> ParseRawLine(absl::string_view line,
                                                    LabelKind label_kind,
                                                    bool zero_allowed) {
  if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
    line = line.substr(0, hash);
  }
  std::vector<absl::string_view> tokens =
      absl::StrSplit(line, absl::ByAnyChar(kSeparators), absl::SkipEmpty());
  if (tokens.empty()) return std::nullopt;

  Example example;
  RETURN_IF_ERROR(ParseLabel(tokens[0], label_kind, &example.label));
  example.ids.reserve(tokens.size() - 1);
  example.values.reserve(tokens.size() - 1);
  for (size_t i = 1; i < tokens.size(); ++i) {
    const absl::string_view token = tokens[i];
    if (absl::StartsWith(token, kQidPrefix)) {
      RETURN_IF_ERROR(CheckQid(token));
      continue;
    }
    const size_t colon = token.find(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature ", QuotedToken(token),
                       " has no ':' (expected index:value)"));
    }
    const absl::string_view index_text = token.substr(0, colon);
    const absl::string_view value_text = token.substr(colon + 1);
    int64_t index;
    if (!absl::SimpleAtoi(index_text, &index)) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature ", QuotedToken(token), ": index ",
                       QuotedToken(index_text), " is not an integer"));
    }
    if (index < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature ", QuotedToken(token), ": index ", index, " is negative"));
    }
    if (index == 0 && !zero_allowed) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature ", QuotedToken(token),
                       ": index 0, but indices are 1-based (index_base "
                       "kOne)"));
    }
    if (!example.ids.empty() && index <= example.ids.back()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature ", QuotedToken(token), ": index ", index,
          " is not greater than the previous index ", example.ids.back(),
          "; indices must be strictly increasing"));
    }
    float value;
    if (!absl::SimpleAtof(value_text, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature ", QuotedToken(token), ": value ",
                       QuotedToken(value_text), " is not a number"));
    }
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature ", QuotedToken(token), ": value ",
                       QuotedToken(value_text), " is not finite"));
    }
    example.ids.push_back(index);
    example.values.push_back(value);
  }
  return example;
}

// Makes the ids of `example`, read from a file with `base` (kZero or kOne),
// 0-based and checks them against num_features. Messages carry no location.
absl::Status ConvertIds(IndexBase base, int64_t num_features,
                        Example* example) {
  const int64_t offset = base == IndexBase::kOne ? 1 : 0;
  if (offset != 0) {
    for (int64_t& id : example->ids) id -= offset;
  }
  // Ids increase, so the last is the largest.
  if (num_features > 0 && !example->ids.empty() &&
      example->ids.back() >= num_features) {
    return absl::InvalidArgumentError(
        absl::StrCat("feature index ", example->ids.back() + offset,
                     " is out of range: num_features is ", num_features,
                     " and indices are ", offset, "-based"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Example>> ParseLibsvmFile(
    const std::string& path, const LibsvmOptions& options) {
  RETURN_IF_ERROR(CheckOptions(options));
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));

  const bool detect = options.index_base == IndexBase::kDetect;
  std::vector<Example> examples;
  bool saw_zero = false;
  std::string line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->ReadLine(&line));
    if (!more) break;
    absl::StatusOr<std::optional<Example>> example =
        ParseRawLine(line, options.label_kind,
                     /*zero_allowed=*/options.index_base != IndexBase::kOne);
    if (!example.ok()) {
      return WithLocation(example.status(), reader->location());
    }
    if (!example->has_value()) continue;
    Example& parsed = **example;
    parsed.line = reader->line_number();
    if (detect) {
      // Ids increase, so an id 0 can only be the first.
      saw_zero |= !parsed.ids.empty() && parsed.ids.front() == 0;
    } else if (absl::Status s = ConvertIds(options.index_base,
                                           options.num_features, &parsed);
               !s.ok()) {
      return WithLocation(s, reader->location());
    }
    examples.push_back(std::move(parsed));
  }

  if (detect) {
    const IndexBase base = saw_zero ? IndexBase::kZero : IndexBase::kOne;
    for (size_t i = 0; i < examples.size(); ++i) {
      if (absl::Status s = ConvertIds(base, options.num_features, &examples[i]);
          !s.ok()) {
        return WithLocation(s, absl::StrCat(path, ":", examples[i].line));
      }
    }
  }
  return examples;
}

absl::StatusOr<IndexBase> DetectIndexBase(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  std::string line;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->ReadLine(&line));
    if (!more) return IndexBase::kOne;
    absl::StatusOr<std::optional<Example>> example =
        ParseRawLine(line, LabelKind::kAsIs, /*zero_allowed=*/true);
    if (!example.ok()) {
      return WithLocation(example.status(), reader->location());
    }
    if (example->has_value() && !(*example)->ids.empty() &&
        (*example)->ids.front() == 0) {
      return IndexBase::kZero;
    }
  }
}

absl::StatusOr<std::optional<Example>> ParseLibsvmLine(
    absl::string_view line, const LibsvmOptions& options,
    absl::string_view location) {
  RETURN_IF_ERROR(CheckOptions(options));
  if (options.index_base == IndexBase::kDetect) {
    return absl::InvalidArgumentError(
        "ParseLibsvmLine needs index_base kZero or kOne: telling the base "
        "needs the whole file (DetectIndexBase)");
  }
  absl::StatusOr<std::optional<Example>> example =
      ParseRawLine(line, options.label_kind,
                   /*zero_allowed=*/options.index_base == IndexBase::kZero);
  if (!example.ok()) return WithLocation(example.status(), location);
  if (!example->has_value()) return example;
  if (absl::Status s = ConvertIds(options.index_base, options.num_features,
                                  &example->value());
      !s.ok()) {
    return WithLocation(s, location);
  }
  return example;
}

}  // namespace distrt
