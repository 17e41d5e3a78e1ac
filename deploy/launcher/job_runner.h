#ifndef DISTRT_DEPLOY_LAUNCHER_JOB_RUNNER_H_
#define DISTRT_DEPLOY_LAUNCHER_JOB_RUNNER_H_

// JobRunner: runs the tasks of one job as child processes (TaskProcess) and
// supervises them until the job ends, relaying their output.
//
// Every line a task writes goes to `out` as "[worker:1] <line>" and, as
// written, to "<log_dir>/worker-1.log". The runner's own messages go to
// `out` as "launch: ...", between whole task lines.
//
// The job succeeds when its primary task (JobPlan::primary) exits 0; fails
// when any task exits non-zero or is killed by a signal the runner did not
// send; and is interrupted by a signal to the launcher (see interrupt_fd).
// A task that exits 0 is fine at any time (ps tasks do when the chief shuts
// them down).
//
//            primary exits 0                  every task has exited
//   RUNNING ----------------> FINISHING ----------------------------> done
//      |                         |    grace over: SIGTERM the rest
//      | a task fails,           |    (the job still succeeds)
//      | or interrupted          v
//      +--------------------> STOPPING --- every task has exited ---> done
//                  SIGTERM to all; SIGKILL to those left after
//                  stop_timeout (or at a second interrupt); gives up on
//                  any left stop_timeout after that
//
// With max_restarts, a task that fails in RUNNING is started again (the
// same command, after a backoff that doubles from restart_backoff) up to
// that many times, as Kubernetes' restartPolicy OnFailure restarts a
// TFJob's pods; only a failure beyond that fails the job. A task that fails
// in FINISHING fails the job as in RUNNING, and restarts still pending then
// are dropped (the job is done). Output is
// read until every task has exited, so a stopping task's last lines are
// kept. Single-threaded: Start and Wait on one thread, which must be the
// only thread of the process (see TaskProcess).

#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "deploy/launcher/job_plan.h"
#include "deploy/launcher/line_prefixer.h"
#include "deploy/launcher/task_process.h"

namespace distrt::launcher {

// How to run one task.
struct TaskCommand {
  LaunchTask task;
  std::string binary;
  std::vector<std::string> args;  // without argv[0]
  std::string tf_config;
};

struct JobRunnerOptions {
  // After the primary task exits 0, how long the others may take to exit
  // before they are stopped.
  absl::Duration finish_grace = absl::Seconds(120);
  // After SIGTERM, how long a task may take to exit before SIGKILL.
  absl::Duration stop_timeout = absl::Seconds(10);
  // Upper bound on how long the runner waits for output before it checks
  // for exited tasks and deadlines again.
  absl::Duration poll_interval = absl::Milliseconds(200);
  // An existing directory for the tasks' raw logs; each is appended to, so
  // that a job dir reused to resume training keeps the earlier runs' logs.
  std::string log_dir;
  // Where task lines and the runner's messages go. Borrowed: must outlive
  // the runner.
  FILE* out = stdout;
  // The read end (non-blocking) of a pipe on which each byte is the number
  // of a signal the launcher received: its signal handlers' self-pipe.
  // Borrowed; -1 for none.
  int interrupt_fd = -1;
  // Restarts of each task that fails while the job runs; 0: none.
  int max_restarts = 0;
  // Wait before a task's first restart; doubles for each further one, up
  // to max_restart_backoff.
  absl::Duration restart_backoff = absl::Seconds(1);
  absl::Duration max_restart_backoff = absl::Seconds(30);
};

struct JobResult {
  enum class Outcome { kSucceeded, kFailed, kInterrupted };
  Outcome outcome = Outcome::kFailed;
  // What decided it: "chief:0 exited 0 after 12.3s", "worker:1 exited with
  // status 1", "interrupted by SIGINT".
  std::string summary;
  // kInterrupted: the signal received.
  int signal = 0;
};

class JobRunner {
 public:
  // Starts the tasks in the order of `commands`, printing
  //   launch: started ps:0 at 127.0.0.1:41234 (pid 4711)
  // for each. `primary` is a position in `commands`. On an error (a log
  // that cannot be opened, a binary that cannot be run; the message names
  // the task) the tasks already started are killed.
  static absl::StatusOr<std::unique_ptr<JobRunner>> Start(
      std::vector<TaskCommand> commands, int primary,
      const JobRunnerOptions& options);

  // Kills (SIGKILL) any task still running; see ~TaskProcess.
  ~JobRunner();

  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  struct StartedTask {
    LaunchTask task;
    pid_t pid = 0;
  };
  // The tasks in start order, with their process ids.
  std::vector<StartedTask> started() const;

  // Supervises the job until it ends (see the file comment) and every task
  // has exited. Call once.
  JobResult Wait();

 private:
  using Clock = std::chrono::steady_clock;

  enum class Phase { kRunning, kFinishing, kStopping };

  struct Task {
    TaskCommand command;
    std::unique_ptr<TaskProcess> process;
    std::unique_ptr<LinePrefixer> prefixer;
    FILE* log = nullptr;  // owned
    bool stop_sent = false;
    bool exited = false;
    int restarts = 0;
    // Exited, and to be started again then.
    std::optional<Clock::time_point> restart_at;
  };

  JobRunner(const JobRunnerOptions& options, int primary)
      : options_(options), primary_(primary) {}

  void Say(const std::string& message);
  // Reads what the task's pipe holds now (at most `max_reads` reads),
  // relaying it; closes the pipe at EOF.
  void ReadOutput(Task& task, int max_reads);
  void CloseOutput(Task& task);
  void ReadInterrupts();
  void OnInterrupt(int signal);
  void OnExit(Task& task, const ExitStatus& status);
  // Starts the tasks whose restart is due; a task that cannot be started
  // fails the job.
  void RestartDue();
  // Drops the restarts not done yet.
  void CancelRestarts();
  // SIGTERM to every task still running; enters STOPPING.
  void StopAll();
  void CheckDeadlines();
  // Every task has exited and none waits for a restart.
  bool AllExited() const;

  // Constant after construction.
  const JobRunnerOptions options_;
  const int primary_;

  std::vector<Task> tasks_;
  Clock::time_point start_time_;
  Phase phase_ = Phase::kRunning;
  JobResult result_;
  std::optional<Clock::time_point> grace_end_;   // FINISHING
  std::optional<Clock::time_point> kill_at_;     // STOPPING: SIGKILL then
  std::optional<Clock::time_point> give_up_at_;  // after SIGKILL
  bool interrupt_open_ = true;
};

}  // namespace distrt::launcher

#endif  // DISTRT_DEPLOY_LAUNCHER_JOB_RUNNER_H_
