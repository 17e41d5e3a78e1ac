#ifndef DISTRT_RUNTIME_INPUT_INPUT_ERROR_POLICY_H_
#define DISTRT_RUNTIME_INPUT_INPUT_ERROR_POLICY_H_

// InputErrorPolicy: what a file-based input pipeline does with bad input.
//   kFail: the first bad record (one that does not parse, or a damaged
//          file) ends the pipeline with its error, after the steps before
//          it.
//   kSkip: a record that does not parse (INVALID_ARGUMENT) is dropped and
//          counted; a damaged file (DATA_LOSS from its reader: bad CRC,
//          truncated) has the rest of it skipped, counted as one bad
//          record. The pipeline still fails when the bad share grows past a
//          bound (InputPipeline::Options::max_bad_fraction): a format or
//          spec that does not fit the data is not "a few bad records".
// Other errors (a file that cannot be opened or read) always fail.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace distrt {

enum class InputErrorPolicy { kFail, kSkip };

// "fail" or "skip", case-insensitive; INVALID_ARGUMENT otherwise.
inline absl::StatusOr<InputErrorPolicy> ParseInputErrorPolicy(
    absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "fail") return InputErrorPolicy::kFail;
  if (lower == "skip") return InputErrorPolicy::kSkip;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown input error policy \"", name, "\"; use fail or skip"));
}

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_INPUT_ERROR_POLICY_H_
