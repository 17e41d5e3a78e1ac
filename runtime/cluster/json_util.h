#ifndef DISTRT_RUNTIME_CLUSTER_JSON_UTIL_H_
#define DISTRT_RUNTIME_CLUSTER_JSON_UTIL_H_

// Small helpers for reading configuration JSON with nlohmann::json and
// reporting what was found when it is not what was expected.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace distrt {

// Object keys keep the order in which they were written, so that what is
// printed back reads like what was given.
using Json = nlohmann::ordered_json;

// How deep lists and objects may nest. Configuration nests a few levels;
// nlohmann::json copies and compares values recursively, so a value nested
// tens of thousands deep would overflow the stack.
inline constexpr int kMaxJsonNesting = 100;

// Parses `text`; INVALID_ARGUMENT with the line, column and reason otherwise
// (nesting deeper than kMaxJsonNesting included).
absl::StatusOr<Json> ParseJson(absl::string_view text);

// "an object", "a string", "the number 2222", ... for error messages.
std::string DescribeJson(const Json& value);

// Reads a non-negative task index written as a JSON integer or as a string
// of digits ("1"), as TensorFlow accepts both. The error names `what`.
absl::StatusOr<int> ParseTaskIndex(const Json& value, absl::string_view what);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_JSON_UTIL_H_
