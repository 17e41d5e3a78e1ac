// Fuzzes the LIBSVM reader (runtime/input/libsvm_reader.h).
//
// Input: one byte of options, then the text of a file.
//   bits 0-1  index_base: kDetect, kZero, kOne, kZero
//   bit 2     label_kind kBinary (else kAsIs)
//   bits 3-5  num_features: 0, 1, 2, 3, 10, 1000, INT64_MAX, -1
//
// Every line goes through ParseLibsvmLine, and the text, written to a
// scratch file, through ParseLibsvmFile and DetectIndexBase. Checked beyond
// "no crash": what the header promises of a parsed example (0-based ids,
// strictly increasing, below num_features; finite label and values; binary
// labels 0 or 1), and that the file reader agrees with the line parser:
// the same examples, or the same first error.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_util.h"
#include "runtime/input/example.h"
#include "runtime/input/libsvm_reader.h"
#include "runtime/util/file_system.h"

namespace distrt::fuzz {
namespace {

constexpr int64_t kNumFeatures[8] = {
    0, 1, 2, 3, 10, 1000, std::numeric_limits<int64_t>::max(), -1};

LibsvmOptions OptionsFrom(uint8_t byte) {
  constexpr IndexBase kBases[4] = {IndexBase::kDetect, IndexBase::kZero,
                                   IndexBase::kOne, IndexBase::kZero};
  LibsvmOptions options;
  options.index_base = kBases[byte & 3];
  options.label_kind = (byte & 4) ? LabelKind::kBinary : LabelKind::kAsIs;
  options.num_features = kNumFeatures[(byte >> 3) & 7];
  return options;
}

void CheckExample(const Example& example, const LibsvmOptions& options,
                  absl::string_view what) {
  const auto fail = [&](absl::string_view why) {
    FuzzFail(absl::StrCat(what, ": ", why));
  };
  if (!std::isfinite(example.label)) fail("label is not finite");
  if (options.label_kind == LabelKind::kBinary && example.label != 0.0f &&
      example.label != 1.0f) {
    fail(absl::StrCat("binary label ", example.label));
  }
  if (example.ids.size() != example.values.size()) fail("ids vs values");
  if (!example.dense.empty()) fail("dense features");
  for (size_t i = 0; i < example.ids.size(); ++i) {
    if (example.ids[i] < 0) fail(absl::StrCat("id ", example.ids[i]));
    if (i > 0 && example.ids[i] <= example.ids[i - 1]) fail("ids not sorted");
    if (options.num_features > 0 && example.ids[i] >= options.num_features) {
      fail(absl::StrCat("id ", example.ids[i], " not below num_features ",
                        options.num_features));
    }
    if (!std::isfinite(example.values[i])) fail("value is not finite");
  }
}

bool SameExamples(const std::vector<Example>& a,
                  const std::vector<Example>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].label != b[i].label || a[i].ids != b[i].ids ||
        a[i].values != b[i].values) {
      return false;
    }
  }
  return true;
}

// Every line through ParseLibsvmLine with `options` (index_base kZero or
// kOne), named as ParseLibsvmFile names the lines of `path`: the examples,
// or the first error.
absl::StatusOr<std::vector<Example>> ParseLines(
    const std::vector<absl::string_view>& lines, const LibsvmOptions& options,
    const std::string& path) {
  // Options are checked before any line: an empty line shows their error.
  if (absl::StatusOr<std::optional<Example>> none =
          ParseLibsvmLine("", options, path);
      !none.ok()) {
    ExpectCode(none.status(), absl::StatusCode::kInvalidArgument,
               "ParseLibsvmLine");
    return none.status();
  }
  std::vector<Example> examples;
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StatusOr<std::optional<Example>> example =
        ParseLibsvmLine(lines[i], options, absl::StrCat(path, ":", i + 1));
    if (!example.ok()) {
      ExpectCode(example.status(), absl::StatusCode::kInvalidArgument,
                 "ParseLibsvmLine");
      return example.status();
    }
    if (!example->has_value()) continue;
    CheckExample(**example, options, "ParseLibsvmLine");
    examples.push_back(**example);
  }
  return examples;
}

void CheckAgree(const absl::StatusOr<std::vector<Example>>& file,
                const absl::StatusOr<std::vector<Example>>& lines,
                absl::string_view what) {
  if (file.ok() != lines.ok()) {
    FuzzFail(absl::StrCat(what, ": the file reader says ",
                          file.ok() ? "OK" : file.status().ToString(),
                          ", the line parser ",
                          lines.ok() ? "OK" : lines.status().ToString()));
  }
  if (!file.ok()) {
    if (file.status() != lines.status()) {
      FuzzFail(absl::StrCat(what,
                            ": different errors: ", file.status().ToString(),
                            " vs ", lines.status().ToString()));
    }
    return;
  }
  if (!SameExamples(*file, *lines)) {
    FuzzFail(absl::StrCat(what, ": different examples"));
  }
}

void Run(const uint8_t* data, size_t size) {
  ByteReader input(data, size);
  const LibsvmOptions options = OptionsFrom(input.Byte());
  const absl::string_view text = input.Rest();
  const std::string path = JoinPath(ScratchDir(), "data.svm");
  WriteScratchFile(path, text);
  const std::vector<absl::string_view> lines = SplitLinesLikeLineReader(text);

  absl::StatusOr<std::vector<Example>> file = ParseLibsvmFile(path, options);
  if (file.ok()) {
    for (const Example& example : *file) {
      CheckExample(example, options, "ParseLibsvmFile");
    }
  } else {
    ExpectCode(file.status(), absl::StatusCode::kInvalidArgument,
               "ParseLibsvmFile");
  }

  if (options.index_base == IndexBase::kDetect) {
    ExpectCode(ParseLibsvmLine("1 1:1", options, "x").status(),
               absl::StatusCode::kInvalidArgument,
               "ParseLibsvmLine with kDetect");
    absl::StatusOr<IndexBase> base = DetectIndexBase(path);
    if (!base.ok()) {
      ExpectCode(base.status(), absl::StatusCode::kInvalidArgument,
                 "DetectIndexBase");
    }
    if (!file.ok()) return;
    // A file that reads with kDetect reads the same with the base detected.
    if (!base.ok() || *base == IndexBase::kDetect) {
      FuzzFail(absl::StrCat("ParseLibsvmFile with kDetect read the file, ",
                            "DetectIndexBase says ",
                            base.ok() ? "kDetect" : base.status().ToString()));
    }
    LibsvmOptions detected = options;
    detected.index_base = *base;
    CheckAgree(file, ParseLibsvmFile(path, detected),
               "kDetect vs the detected base");
    CheckAgree(file, ParseLines(lines, detected, path),
               "kDetect vs lines with the detected base");
    return;
  }
  CheckAgree(file, ParseLines(lines, options, path), "file vs lines");
}

}  // namespace
}  // namespace distrt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  distrt::fuzz::Run(data, size);
  return 0;
}
