#ifndef DISTRT_DEPLOY_LAUNCHER_TASK_PROCESS_H_
#define DISTRT_DEPLOY_LAUNCHER_TASK_PROCESS_H_

// TaskProcess: one task of a job running as a child process of the
// launcher.
//
// The child:
//  - leads its own process group, so that a Ctrl-C on the terminal reaches
//    only the launcher (which then stops the job in order) and so that a
//    signal sent to the task also reaches anything the task started;
//  - is killed (SIGKILL) by the kernel when the launcher dies, however it
//    dies (PR_SET_PDEATHSIG), so that no task outlives its launcher. This
//    covers the task process itself, not processes it starts (ps_server and
//    worker start none);
//  - has TF_CONFIG set to the given text and otherwise the launcher's
//    environment; stdin from /dev/null; stdout and stderr into one pipe whose
//    read end the launcher holds (fd()), so that its lines keep their order.
//
// Not thread-safe. The launcher must be single-threaded when it starts
// tasks: PR_SET_PDEATHSIG fires when the thread that forked exits.

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace distrt::launcher {

// How a child ended.
struct ExitStatus {
  bool signaled = false;  // killed by a signal rather than exiting
  int code = 0;           // the exit status, when !signaled
  int signal = 0;         // the signal, when signaled

  bool success() const { return !signaled && code == 0; }
  // "exited with status 1", "killed by signal 9 (SIGKILL)".
  std::string ToString() const;
};

struct TaskProcessOptions {
  std::string binary;             // path of the program (no PATH search)
  std::vector<std::string> args;  // its arguments, without argv[0]
  std::string tf_config;          // the value of TF_CONFIG
};

class TaskProcess {
 public:
  // Starts the child. Returns once the program has been exec'd: an error
  // (with the code errno maps to, naming the binary) when it could not be,
  // e.g. NOT_FOUND for a missing binary; no child is left behind then.
  static absl::StatusOr<std::unique_ptr<TaskProcess>> Start(
      const TaskProcessOptions& options);

  // A child that has not been reaped is killed (SIGKILL to its group) but
  // not waited for: it is reaped here only if it is already gone, and is
  // otherwise left to init (the launcher is about to exit).
  ~TaskProcess();

  TaskProcess(const TaskProcess&) = delete;
  TaskProcess& operator=(const TaskProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The read end of the child's output pipe: non-blocking and close-on-exec;
  // -1 after CloseOutput(). Owned by this object.
  int fd() const { return fd_; }
  void CloseOutput();

  // Sends `signal` to the child's process group. No-op once reaped (the
  // group's id may then belong to another process).
  void Signal(int signal);

  // The exit status once the child has exited (waitpid WNOHANG; the status
  // is kept, so later calls return it again); nullopt while it runs.
  std::optional<ExitStatus> TryReap();

 private:
  TaskProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}

  const pid_t pid_;
  int fd_;
  std::optional<ExitStatus> exit_status_;
};

}  // namespace distrt::launcher

#endif  // DISTRT_DEPLOY_LAUNCHER_TASK_PROCESS_H_
