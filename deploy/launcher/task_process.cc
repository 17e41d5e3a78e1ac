#include "deploy/launcher/task_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/file_system.h"

extern char** environ;

namespace distrt::launcher {
namespace {

const char* SignalName(int signal) {
  switch (signal) {
    case SIGHUP:
      return "SIGHUP";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGKILL:
      return "SIGKILL";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGTERM:
      return "SIGTERM";
    default:
      return nullptr;
  }
}

void CloseIfOpen(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Runs in the child between fork and exec: only async-signal-safe calls, no
// allocation. Reports a failure as its errno on `error_fd` and exits.
[[noreturn]] void ExecChild(pid_t launcher_pid, int stdin_fd, int output_fd,
                            int error_fd, const char* binary,
                            char* const argv[], char* const envp[]) {
  auto fail = [error_fd](int error) {
    // Best effort: if the launcher cannot read it, it sees the exit instead.
    ssize_t ignored = write(error_fd, &error, sizeof(error));
    (void)ignored;
    _exit(127);
  };
  if (setpgid(0, 0) != 0) fail(errno);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
  // The launcher may have died before prctl took effect; then no signal
  // will come, so stop here instead of running orphaned.
  if (getppid() != launcher_pid) _exit(127);

  // The launcher's own signal handling must not leak into the task: exec
  // resets handled signals but keeps ignored ones and the blocked mask.
  for (int signal : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    ::signal(signal, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  if (dup2(stdin_fd, STDIN_FILENO) < 0) fail(errno);
  if (dup2(output_fd, STDOUT_FILENO) < 0) fail(errno);
  if (dup2(output_fd, STDERR_FILENO) < 0) fail(errno);
  execve(binary, argv, envp);
  fail(errno);
  _exit(127);  // not reached; fail() does not return
}

// The child's argv and environment (the launcher's, with the task's
// TF_CONFIG instead of any of its own), built before fork: the child may
// not allocate. Not copyable: `argv` and `envp` point into the storage.
struct ChildCommand {
  explicit ChildCommand(const TaskProcessOptions& options) {
    arg_storage.push_back(options.binary);
    arg_storage.insert(arg_storage.end(), options.args.begin(),
                       options.args.end());
    for (std::string& arg : arg_storage) argv.push_back(arg.data());
    argv.push_back(nullptr);

    for (char** var = environ; var != nullptr && *var != nullptr; ++var) {
      if (!absl::StartsWith(*var, "TF_CONFIG=")) env_storage.push_back(*var);
    }
    env_storage.push_back(absl::StrCat("TF_CONFIG=", options.tf_config));
    for (std::string& var : env_storage) envp.push_back(var.data());
    envp.push_back(nullptr);
  }
  ChildCommand(const ChildCommand&) = delete;
  ChildCommand& operator=(const ChildCommand&) = delete;

  std::vector<std::string> arg_storage;
  std::vector<char*> argv;
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
};

// The descriptors a child is started with: the pipe of its output, the pipe
// it reports a failed exec on, and /dev/null for its stdin. -1: not open.
struct ChildPipes {
  void CloseAll() {
    CloseIfOpen(output[0]);
    CloseIfOpen(output[1]);
    CloseIfOpen(exec_error[0]);
    CloseIfOpen(exec_error[1]);
    CloseIfOpen(dev_null);
  }

  int output[2] = {-1, -1};
  int exec_error[2] = {-1, -1};
  int dev_null = -1;
};

// Opens `pipes` for a child running `binary`; on an error, closes what it
// opened.
absl::Status OpenChildPipes(const std::string& binary, ChildPipes& pipes) {
  // All close-on-exec: the child's dup2 copies onto 0-2 are not, and no
  // other task inherits this task's pipe (its EOF would never come).
  if (pipe2(pipes.output, O_CLOEXEC) != 0 ||
      pipe2(pipes.exec_error, O_CLOEXEC) != 0) {
    const int error = errno;
    pipes.CloseAll();
    return ErrnoError("cannot create a pipe for", binary, error);
  }
  // Only the launcher's end: the child's writes must block when the pipe
  // is full rather than fail.
  const int flags = fcntl(pipes.output[0], F_GETFL);
  if (flags < 0 || fcntl(pipes.output[0], F_SETFL, flags | O_NONBLOCK) != 0) {
    const int error = errno;
    pipes.CloseAll();
    return ErrnoError("cannot set up the output pipe for", binary, error);
  }
  pipes.dev_null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (pipes.dev_null < 0) {
    const int error = errno;
    pipes.CloseAll();
    return ErrnoError("cannot open", "/dev/null", error);
  }
  return absl::OkStatus();
}

// Waits for the child `pid` to exec `binary`. EOF on the exec error pipe:
// exec succeeded (close-on-exec closed the write end). An int: the errno of
// the step that failed; then the child is reaped and its output closed.
absl::Status AwaitExec(pid_t pid, const std::string& binary,
                       ChildPipes& pipes) {
  int child_error = 0;
  ssize_t got;
  do {
    got = read(pipes.exec_error[0], &child_error, sizeof(child_error));
  } while (got < 0 && errno == EINTR);
  CloseIfOpen(pipes.exec_error[0]);
  if (got == 0) return absl::OkStatus();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  CloseIfOpen(pipes.output[0]);
  if (got == static_cast<ssize_t>(sizeof(child_error))) {
    return ErrnoError("cannot run", binary, child_error);
  }
  return absl::InternalError(
      absl::StrCat("cannot run ", binary, ": the child failed before exec"));
}

}  // namespace

std::string ExitStatus::ToString() const {
  if (!signaled) return absl::StrCat("exited with status ", code);
  const char* name = SignalName(signal);
  return name == nullptr
             ? absl::StrCat("killed by signal ", signal)
             : absl::StrCat("killed by signal ", signal, " (", name, ")");
}

absl::StatusOr<std::unique_ptr<TaskProcess>> TaskProcess::Start(
    const TaskProcessOptions& options) {
  ChildCommand command(options);
  ChildPipes pipes;
  if (absl::Status s = OpenChildPipes(options.binary, pipes); !s.ok()) {
    return s;
  }

  const pid_t launcher_pid = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int error = errno;
    pipes.CloseAll();
    return ErrnoError("cannot fork to run", options.binary, error);
  }
  if (pid == 0) {
    ExecChild(launcher_pid, pipes.dev_null, pipes.output[1],
              pipes.exec_error[1], command.arg_storage[0].c_str(),
              command.argv.data(), command.envp.data());
  }

  // Also here, so that the group exists when Start returns whichever of
  // the two runs first. An error is harmless: EACCES means the child has
  // already exec'd (after its own setpgid), and a child whose setpgid
  // failed reports that below.
  (void)setpgid(pid, pid);
  CloseIfOpen(pipes.output[1]);
  CloseIfOpen(pipes.exec_error[1]);
  CloseIfOpen(pipes.dev_null);
  if (absl::Status s = AwaitExec(pid, options.binary, pipes); !s.ok()) {
    return s;
  }
  return std::unique_ptr<TaskProcess>(new TaskProcess(pid, pipes.output[0]));
}

TaskProcess::~TaskProcess() {
  if (!exit_status_.has_value()) {
    kill(-pid_, SIGKILL);
    // Not waited for: a child stuck in the kernel would hang the launcher,
    // which is about to exit anyway; init reaps what is left.
    TryReap();
  }
  CloseOutput();
}

void TaskProcess::CloseOutput() { CloseIfOpen(fd_); }

void TaskProcess::Signal(int signal) {
  if (exit_status_.has_value()) return;
  kill(-pid_, signal);
}

std::optional<ExitStatus> TaskProcess::TryReap() {
  if (exit_status_.has_value()) return exit_status_;
  int status = 0;
  pid_t reaped;
  do {
    reaped = waitpid(pid_, &status, WNOHANG);
  } while (reaped < 0 && errno == EINTR);
  if (reaped != pid_) return std::nullopt;
  ExitStatus result;
  if (WIFSIGNALED(status)) {
    result.signaled = true;
    result.signal = WTERMSIG(status);
  } else {
    result.code = WEXITSTATUS(status);
  }
  exit_status_ = result;
  return exit_status_;
}

}  // namespace distrt::launcher
