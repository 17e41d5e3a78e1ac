#include "tests/util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

extern char** environ;

namespace distrt::testing {
namespace {

// The inherited environment with `changes` applied, as "NAME=value" strings.
std::vector<std::string> BuildEnvironment(
    const std::map<std::string, std::optional<std::string>>& changes) {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq == nullptr) continue;
    vars[std::string(*entry, eq - *entry)] = eq + 1;
  }
  for (const auto& [name, value] : changes) {
    if (value.has_value()) {
      vars[name] = *value;
    } else {
      vars.erase(name);
    }
  }
  std::vector<std::string> out;
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(
    const SubprocessOptions& options) {
  if (options.argv.empty()) {
    return absl::InvalidArgumentError("Subprocess: argv is empty");
  }
  // Everything the child needs is prepared before fork(): after it, only
  // async-signal-safe calls are allowed.
  std::vector<std::string> argv_strings = options.argv;
  std::vector<std::string> env_strings = BuildEnvironment(options.env);
  std::vector<char*> argv = CStrings(argv_strings);
  std::vector<char*> envp = CStrings(env_strings);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) {
      close(fd);
    }
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execve(argv[0], argv.data(), envp.data());
    const char msg[] = "Subprocess: execve failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  return std::unique_ptr<Subprocess>(
      new Subprocess(pid, out_pipe[0], err_pipe[0], options.argv[0]));
}

Subprocess::Subprocess(int pid, int stdout_fd, int stderr_fd,
                       std::string program)
    : pid_(pid), fds_{stdout_fd, stderr_fd}, program_(std::move(program)) {}

Subprocess::~Subprocess() {
  if (!reaped_) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

bool Subprocess::Drain(absl::Time deadline) {
  pollfd fds[2] = {{fds_[0], POLLIN, 0}, {fds_[1], POLLIN, 0}};
  const absl::Duration left = deadline - absl::Now();
  const int timeout_ms =
      left <= absl::ZeroDuration() ? 0 : absl::ToInt64Milliseconds(left) + 1;
  const int ready = poll(fds, 2, timeout_ms);
  if (ready <= 0) return false;
  std::string* sinks[2] = {&stdout_, &stderr_};
  for (int i = 0; i < 2; ++i) {
    if (fds_[i] < 0 || fds[i].revents == 0) continue;
    char buffer[4096];
    const ssize_t n = read(fds_[i], buffer, sizeof(buffer));
    if (n > 0) {
      sinks[i]->append(buffer, n);
    } else if (n == 0 || errno != EINTR) {
      close(fds_[i]);
      fds_[i] = -1;
    }
  }
  return true;
}

absl::StatusOr<std::string> Subprocess::ReadStdoutLine(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const size_t newline = stdout_.find('\n');
    if (newline != std::string::npos) {
      std::string line = stdout_.substr(0, newline);
      stdout_.erase(0, newline + 1);
      return line;
    }
    if (fds_[0] < 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          program_, " closed stdout without a full line; stderr: ", stderr_));
    }
    if (!Drain(deadline) && absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(program_, " wrote no line within ",
                       absl::FormatDuration(timeout), "; stderr: ", stderr_));
    }
  }
}

void Subprocess::Signal(int signal) {
  if (!reaped_) kill(pid_, signal);
}

absl::Status Subprocess::Stop() {
  if (reaped_) {
    return absl::FailedPreconditionError(absl::StrCat(program_, " has exited"));
  }
  kill(pid_, SIGSTOP);
  // SIGSTOP cannot be caught or ignored: the child stops or is already
  // gone, and waitpid returns either way.
  int status = 0;
  pid_t done = 0;
  do {
    done = waitpid(pid_, &status, WUNTRACED);
  } while (done < 0 && errno == EINTR);
  if (done == pid_ && WIFSTOPPED(status)) return absl::OkStatus();
  if (done == pid_) reaped_ = true;
  return absl::FailedPreconditionError(
      absl::StrCat(program_, " exited instead of stopping"));
}

absl::StatusOr<SubprocessResult> Subprocess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (fds_[0] >= 0 || fds_[1] >= 0) {
    if (!Drain(deadline) && absl::Now() >= deadline) break;
  }
  int status = 0;
  pid_t done = 0;
  while (true) {
    done = waitpid(pid_, &status, WNOHANG);
    if (done != 0 && !(done < 0 && errno == EINTR)) break;
    if (absl::Now() >= deadline) break;
    // The pipes are closed, so the child is exiting; poll its state briefly.
    poll(nullptr, 0, 10);
  }
  if (done != pid_) {
    return absl::DeadlineExceededError(
        absl::StrCat(program_, " did not exit within ",
                     absl::FormatDuration(timeout), " and will be killed"));
  }
  reaped_ = true;
  SubprocessResult result;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  result.stdout_text = std::move(stdout_);
  result.stderr_text = std::move(stderr_);
  return result;
}

absl::StatusOr<SubprocessResult> RunSubprocess(
    const SubprocessOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Subprocess> process,
                   Subprocess::Start(options));
  return process->Wait(options.timeout);
}

}  // namespace distrt::testing
