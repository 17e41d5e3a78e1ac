#ifndef DISTRT_RUNTIME_INPUT_LIBSVM_READER_H_
#define DISTRT_RUNTIME_INPUT_LIBSVM_READER_H_

// Reads LIBSVM / SVMlight text, the sparse format of liblinear, XGBoost and
// the Criteo samples, one example per line:
//
//   <label> [qid:<n>] <index>:<value> <index>:<value> ... [# comment]
//
// Tokens are separated by spaces or tabs. The label and the values are
// finite floats; indices are non-negative integers, strictly increasing
// within a line (liblinear relies on it). A "qid:<n>" token (SVMrank's query
// id, an integer) is checked and skipped. Everything from '#' to the end of
// the line is a comment; blank and comment-only lines hold no example.
//
// Files number features from 1 (liblinear, SVMlight) or from 0 (some
// XGBoost and Criteo exports); Example::ids are always 0-based. Whether a
// file is 0-based can only be told from the whole file (an index 0 anywhere),
// hence IndexBase::kDetect for whole files and DetectIndexBase for callers
// that stream lines through ParseLibsvmLine.
//
// Malformed input is never skipped: the first error is returned, with code
// INVALID_ARGUMENT and a message "<file>:<line>: <what is wrong>", e.g.
//   train.svm:17: feature "3:x": value "x" is not a number
// Errors reading the file name the path, with a code that follows errno
// (NOT_FOUND, PERMISSION_DENIED, ...).
//
// The functions are thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/input/example.h"

namespace distrt {

enum class IndexBase {
  // 0-based if an index 0 appears anywhere in the file, otherwise 1-based.
  // A file whose 0-based features all happen to skip id 0 is read as 1-based:
  // say kZero when that can happen.
  kDetect,
  kZero,
  kOne,  // an index 0 is then an error
};

enum class LabelKind {
  // Any finite number: class ids of a multiclass problem, regression targets.
  kAsIs,
  // Binary classification: -1 and 0 become 0, +1 becomes 1; any other value
  // is an error.
  kBinary,
};

struct LibsvmOptions {
  IndexBase index_base = IndexBase::kDetect;
  LabelKind label_kind = LabelKind::kAsIs;
  // When > 0, every 0-based id must be below it (an error names the index as
  // written); 0: no bound. Negative is INVALID_ARGUMENT.
  int64_t num_features = 0;
};

// Every example in the file at `path`, in file order, each with its
// Example::line. With kDetect the file is still read only once.
absl::StatusOr<std::vector<Example>> ParseLibsvmFile(
    const std::string& path, const LibsvmOptions& options = {});

// The index base of the file at `path`: kZero if an index 0 appears in it,
// else kOne. Reads up to the first index 0, so the whole file when it is
// 1-based; errors of the lines read are reported as ParseLibsvmFile would.
absl::StatusOr<IndexBase> DetectIndexBase(const std::string& path);

// Parses one line (without its newline; a trailing '\r' is ignored):
// nullopt for a blank or comment-only line. `location`, typically
// "<file>:<line>", prefixes error messages. options.index_base must be kZero
// or kOne (INVALID_ARGUMENT for kDetect: use DetectIndexBase first).
absl::StatusOr<std::optional<Example>> ParseLibsvmLine(
    absl::string_view line, const LibsvmOptions& options,
    absl::string_view location);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_INPUT_LIBSVM_READER_H_
