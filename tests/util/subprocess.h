#ifndef DISTRT_TESTS_UTIL_SUBPROCESS_H_
#define DISTRT_TESTS_UTIL_SUBPROCESS_H_

// Runs a program as a child process for tests that exercise real binaries:
// its own environment, captured stdout and stderr, and a deadline after which
// it is killed, so that no test can hang on a child or leave one behind.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace distrt::testing {

struct SubprocessOptions {
  // argv[0] is the program's path (relative to the working directory, which
  // for a Bazel test is its runfiles tree: "client/distctl").
  std::vector<std::string> argv;
  // Changes to the inherited environment: a value sets the variable,
  // std::nullopt removes it.
  std::map<std::string, std::optional<std::string>> env;
  // The child is killed (SIGKILL) when it runs longer than this.
  absl::Duration timeout = absl::Seconds(30);
};

struct SubprocessResult {
  int exit_code = -1;     // -1 when killed by a signal
  int term_signal = 0;    // the signal, when killed by one
  std::string stdout_text;
  std::string stderr_text;
};

// Runs the program to completion. DEADLINE_EXCEEDED (after killing it) when
// it outlives options.timeout; INTERNAL when it cannot be started.
absl::StatusOr<SubprocessResult> RunSubprocess(
    const SubprocessOptions& options);

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_SUBPROCESS_H_
