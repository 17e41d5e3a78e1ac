#ifndef DISTRT_TESTS_UTIL_SUBPROCESS_H_
#define DISTRT_TESTS_UTIL_SUBPROCESS_H_

// Runs a program as a child process for tests that exercise real binaries:
// its own environment, captured stdout and stderr, and a deadline after which
// it is killed, so that no test can hang on a child or leave one behind.

#include <map>
#include <memory>
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
  // RunSubprocess kills the child (SIGKILL) when it runs longer than this.
  absl::Duration timeout = absl::Seconds(30);
};

struct SubprocessResult {
  int exit_code = -1;   // -1 when killed by a signal
  int term_signal = 0;  // the signal, when killed by one
  std::string stdout_text;
  std::string stderr_text;
};

// A running child process. Its stdout and stderr are captured through pipes
// that are drained whenever the test reads or waits. The destructor kills
// (SIGKILL) and reaps a child that is still running: a test never leaves one
// behind. Not thread-safe.
class Subprocess {
 public:
  // INTERNAL when the program cannot be started.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(
      const SubprocessOptions& options);
  ~Subprocess();

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  int pid() const { return pid_; }

  // The next line the child writes on stdout, without its newline.
  // DEADLINE_EXCEEDED when none comes within `timeout`; FAILED_PRECONDITION
  // (with what it wrote on stderr) when stdout closes first.
  absl::StatusOr<std::string> ReadStdoutLine(absl::Duration timeout);

  // Sends `signal` (e.g. SIGTERM) to the child.
  void Signal(int signal);

  // Sends SIGSTOP and returns once the child has stopped (waitpid with
  // WUNTRACED): a thread of it that was running on another core cannot
  // still answer a request made after this returns. SIGCONT resumes it.
  // FAILED_PRECONDITION when it exited instead (it is then reaped, and Wait
  // cannot report its status).
  absl::Status Stop();

  // Waits for the child to exit and returns its status with everything it
  // wrote that was not read by ReadStdoutLine. DEADLINE_EXCEEDED (after
  // killing it) when it does not exit within `timeout`.
  absl::StatusOr<SubprocessResult> Wait(absl::Duration timeout);

 private:
  Subprocess(int pid, int stdout_fd, int stderr_fd, std::string program);
  // Reads what is available from the pipes, waiting until `deadline` for
  // something; false when nothing came and the deadline passed.
  bool Drain(absl::Time deadline);

  int pid_;
  int fds_[2];  // stdout, stderr; -1 once closed
  std::string program_;
  std::string stdout_;
  std::string stderr_;
  bool reaped_ = false;
};

// Runs the program to completion. DEADLINE_EXCEEDED (after killing it) when
// it outlives options.timeout; INTERNAL when it cannot be started.
absl::StatusOr<SubprocessResult> RunSubprocess(
    const SubprocessOptions& options);

}  // namespace distrt::testing

#endif  // DISTRT_TESTS_UTIL_SUBPROCESS_H_
