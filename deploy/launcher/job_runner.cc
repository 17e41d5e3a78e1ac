#include "deploy/launcher/job_runner.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/util/file_system.h"

namespace distrt::launcher {
namespace {

constexpr size_t kReadChunk = 64 << 10;
// Reads per task per poll round: enough to keep up with a chatty task
// without letting it starve the others.
constexpr int kReadsPerRound = 4;
// Reads of an exited task's pipe: more than the largest pipe buffer holds,
// so all the task wrote is read, yet bounded when something it started
// still writes into the pipe.
constexpr int kReadsAfterExit = 64;

std::string FormatSeconds(absl::Duration d) {
  return absl::StrFormat("%.1fs", absl::ToDoubleSeconds(d));
}

std::string SignalLabel(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    default:
      return absl::StrCat("signal ", signal);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<JobRunner>> JobRunner::Start(
    std::vector<TaskCommand> commands, int primary,
    const JobRunnerOptions& options) {
  if (primary < 0 || primary >= static_cast<int>(commands.size())) {
    return absl::InvalidArgumentError(absl::StrCat("the primary task ", primary,
                                                   " is not one of the ",
                                                   commands.size(), " tasks"));
  }
  auto runner = std::unique_ptr<JobRunner>(new JobRunner(options, primary));
  runner->tasks_.reserve(commands.size());
  runner->start_time_ = Clock::now();
  for (TaskCommand& command : commands) {
    // In the vector before anything is opened, so that the destructor
    // closes it whatever happens next.
    runner->tasks_.emplace_back();
    Task& added = runner->tasks_.back();
    added.command = std::move(command);
    const LaunchTask& id = added.command.task;
    const std::string log_path =
        JoinPath(options.log_dir, absl::StrCat(id.file_stem(), ".log"));
    added.log = std::fopen(log_path.c_str(), "ae");
    if (added.log == nullptr) {
      return ErrnoError(
          absl::StrCat("cannot start ", id.label(), ": cannot open"), log_path);
    }
    added.prefixer =
        std::make_unique<LinePrefixer>(absl::StrCat("[", id.label(), "] "));
    absl::StatusOr<std::unique_ptr<TaskProcess>> process = TaskProcess::Start(
        {added.command.binary, added.command.args, added.command.tf_config});
    if (!process.ok()) {
      return absl::Status(process.status().code(),
                          absl::StrCat("cannot start ", id.label(), ": ",
                                       process.status().message()));
    }
    added.process = *std::move(process);
    runner->Say(absl::StrCat("started ", id.label(), " at ", id.address,
                             " (pid ", added.process->pid(), ")"));
  }
  return runner;
}

JobRunner::~JobRunner() {
  for (Task& task : tasks_) {
    task.process.reset();
    if (task.log != nullptr) std::fclose(task.log);
  }
}

std::vector<JobRunner::StartedTask> JobRunner::started() const {
  std::vector<StartedTask> result;
  for (const Task& task : tasks_) {
    result.push_back({task.command.task, task.process->pid()});
  }
  return result;
}

void JobRunner::Say(const std::string& message) {
  std::fprintf(options_.out, "launch: %s\n", message.c_str());
  std::fflush(options_.out);
}

void JobRunner::ReadOutput(Task& task, int max_reads) {
  if (task.process->fd() < 0) return;
  char buffer[kReadChunk];
  std::string lines;
  bool ended = false;
  for (int i = 0; i < max_reads; ++i) {
    const ssize_t got = read(task.process->fd(), buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (got <= 0) {
      // EOF, or an error that will not go away: the task's output ends.
      ended = true;
      break;
    }
    const absl::string_view bytes(buffer, got);
    std::fwrite(bytes.data(), 1, bytes.size(), task.log);
    lines += task.prefixer->Append(bytes);
  }
  std::fflush(task.log);
  if (!lines.empty()) {
    std::fwrite(lines.data(), 1, lines.size(), options_.out);
    std::fflush(options_.out);
  }
  // After the lines above, as its last partial line follows them.
  if (ended) CloseOutput(task);
}

void JobRunner::CloseOutput(Task& task) {
  task.process->CloseOutput();
  const std::string last = task.prefixer->Flush();
  if (!last.empty()) {
    std::fwrite(last.data(), 1, last.size(), options_.out);
    std::fflush(options_.out);
  }
}

void JobRunner::ReadInterrupts() {
  unsigned char signals[16];
  const ssize_t got = read(options_.interrupt_fd, signals, sizeof(signals));
  if (got == 0) interrupt_open_ = false;
  for (ssize_t i = 0; i < got; ++i) OnInterrupt(signals[i]);
}

void JobRunner::OnInterrupt(int signal) {
  if (phase_ != Phase::kStopping) {
    Say("interrupted; stopping the job");
    result_ = {JobResult::Outcome::kInterrupted,
               absl::StrCat("interrupted by ", SignalLabel(signal)), signal};
    StopAll();
    return;
  }
  // Asked again while stopping: do not make the user wait for stop_timeout.
  if (result_.outcome == JobResult::Outcome::kSucceeded) {
    result_ = {JobResult::Outcome::kInterrupted,
               absl::StrCat("interrupted by ", SignalLabel(signal)), signal};
  }
  if (kill_at_.has_value()) kill_at_ = Clock::now();
}

void JobRunner::OnExit(Task& task, const ExitStatus& status) {
  task.exited = true;
  const std::string label = task.command.task.label();
  if (task.stop_sent) {
    Say(absl::StrCat(label, " stopped (", status.ToString(), ")"));
    return;
  }
  if (!status.success()) {
    if (phase_ == Phase::kStopping) {
      Say(absl::StrCat(label, " ", status.ToString()));
      return;
    }
    if (phase_ == Phase::kRunning && task.restarts < options_.max_restarts) {
      absl::Duration delay = options_.restart_backoff;
      for (int i = 0; i < task.restarts && delay < options_.max_restart_backoff;
           ++i) {
        delay *= 2;
      }
      delay = std::min(delay, options_.max_restart_backoff);
      ++task.restarts;
      Say(absl::StrCat(label, " ", status.ToString(), "; restarting it in ",
                       FormatSeconds(delay), " (restart ", task.restarts,
                       " of at most ", options_.max_restarts, ")"));
      task.restart_at = Clock::now() + absl::ToChronoNanoseconds(delay);
      return;
    }
    Say(absl::StrCat(label, " ", status.ToString(), "; stopping the job"));
    result_ = {JobResult::Outcome::kFailed,
               absl::StrCat(label, " ", status.ToString()), 0};
    StopAll();
    return;
  }
  const bool is_primary = &task == &tasks_[primary_];
  if (!is_primary || phase_ != Phase::kRunning) {
    Say(absl::StrCat(label, " exited 0"));
    return;
  }
  const std::string elapsed =
      FormatSeconds(absl::FromChrono(Clock::now() - start_time_));
  result_ = {JobResult::Outcome::kSucceeded,
             absl::StrCat(label, " exited 0 after ", elapsed), 0};
  phase_ = Phase::kFinishing;
  CancelRestarts();
  grace_end_ = Clock::now() + absl::ToChronoNanoseconds(options_.finish_grace);
  if (!AllExited()) {
    Say(absl::StrCat(label, " exited 0 after ", elapsed, "; waiting up to ",
                     FormatSeconds(options_.finish_grace),
                     " for the other tasks to exit"));
  } else {
    Say(absl::StrCat(label, " exited 0 after ", elapsed));
  }
}

void JobRunner::RestartDue() {
  const Clock::time_point now = Clock::now();
  for (Task& task : tasks_) {
    if (!task.restart_at.has_value() || now < *task.restart_at) continue;
    task.restart_at.reset();
    const std::string label = task.command.task.label();
    absl::StatusOr<std::unique_ptr<TaskProcess>> process = TaskProcess::Start(
        {task.command.binary, task.command.args, task.command.tf_config});
    if (!process.ok()) {
      Say(absl::StrCat("cannot restart ", label, ": ",
                       process.status().message(), "; stopping the job"));
      result_ = {JobResult::Outcome::kFailed,
                 absl::StrCat("cannot restart ", label), 0};
      StopAll();
      return;
    }
    task.process = *std::move(process);
    task.exited = false;
    task.stop_sent = false;
    Say(absl::StrCat("restarted ", label, " at ", task.command.task.address,
                     " (pid ", task.process->pid(), ")"));
  }
}

void JobRunner::CancelRestarts() {
  for (Task& task : tasks_) {
    if (!task.restart_at.has_value()) continue;
    task.restart_at.reset();
    Say(absl::StrCat(
        task.command.task.label(), " will not be restarted: the ",
        phase_ == Phase::kStopping ? "job is stopping" : "job is finishing"));
  }
}

void JobRunner::StopAll() {
  phase_ = Phase::kStopping;
  CancelRestarts();
  for (Task& task : tasks_) {
    if (task.exited) continue;
    task.process->Signal(SIGTERM);
    task.stop_sent = true;
  }
  kill_at_ = Clock::now() + absl::ToChronoNanoseconds(options_.stop_timeout);
}

void JobRunner::CheckDeadlines() {
  const Clock::time_point now = Clock::now();
  if (phase_ == Phase::kFinishing && now >= *grace_end_) {
    const std::string primary_label = tasks_[primary_].command.task.label();
    for (const Task& task : tasks_) {
      if (task.exited) continue;
      Say(absl::StrCat(task.command.task.label(), " still running ",
                       FormatSeconds(options_.finish_grace), " after ",
                       primary_label, " finished; stopping it"));
    }
    StopAll();
    return;
  }
  if (phase_ != Phase::kStopping) return;
  if (kill_at_.has_value() && now >= *kill_at_) {
    for (Task& task : tasks_) {
      if (task.exited) continue;
      Say(absl::StrCat(task.command.task.label(),
                       " did not stop after SIGTERM; sending SIGKILL"));
      task.process->Signal(SIGKILL);
    }
    kill_at_.reset();
    give_up_at_ = now + absl::ToChronoNanoseconds(options_.stop_timeout);
  }
}

bool JobRunner::AllExited() const {
  return std::all_of(tasks_.begin(), tasks_.end(), [](const Task& task) {
    return task.exited && !task.restart_at.has_value();
  });
}

JobResult JobRunner::Wait() {
  std::vector<pollfd> fds;
  std::vector<Task*> fd_tasks;  // fds[i + first_task_fd] is fd_tasks[i]'s
  while (!AllExited()) {
    if (give_up_at_.has_value() && Clock::now() >= *give_up_at_) {
      for (const Task& task : tasks_) {
        if (task.exited) continue;
        Say(absl::StrCat(task.command.task.label(), " (pid ",
                         task.process->pid(),
                         ") has not exited after SIGKILL; leaving it"));
      }
      break;
    }

    // Wake for the nearest deadline, or after poll_interval to reap.
    Clock::duration timeout = absl::ToChronoNanoseconds(options_.poll_interval);
    auto wake_by = [&](const std::optional<Clock::time_point>& deadline) {
      if (deadline.has_value()) {
        timeout = std::min(timeout, *deadline - Clock::now());
      }
    };
    if (phase_ == Phase::kFinishing) wake_by(grace_end_);
    for (const Task& task : tasks_) wake_by(task.restart_at);
    wake_by(kill_at_);
    wake_by(give_up_at_);
    const int timeout_ms = static_cast<int>(std::max<int64_t>(
        0, std::chrono::ceil<std::chrono::milliseconds>(timeout).count()));

    fds.clear();
    fd_tasks.clear();
    const bool poll_interrupts = options_.interrupt_fd >= 0 && interrupt_open_;
    if (poll_interrupts) fds.push_back({options_.interrupt_fd, POLLIN, 0});
    const size_t first_task_fd = fds.size();
    for (Task& task : tasks_) {
      if (task.process->fd() < 0) continue;
      fds.push_back({task.process->fd(), POLLIN, 0});
      fd_tasks.push_back(&task);
    }
    const int ready = poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      // Cannot happen with valid fds; stop rather than spin.
      Say(absl::StrCat("poll failed: ", std::strerror(errno),
                       "; stopping the job"));
      if (phase_ != Phase::kStopping) {
        result_ = {JobResult::Outcome::kFailed, "the launcher's poll failed",
                   0};
        StopAll();
      }
    }
    if (ready > 0) {
      if (poll_interrupts && fds[0].revents != 0) ReadInterrupts();
      for (size_t i = 0; i < fd_tasks.size(); ++i) {
        if (fds[first_task_fd + i].revents != 0) {
          ReadOutput(*fd_tasks[i], kReadsPerRound);
        }
      }
    }

    for (Task& task : tasks_) {
      if (task.exited) continue;
      std::optional<ExitStatus> status = task.process->TryReap();
      if (!status.has_value()) continue;
      // What the task wrote before it exited is all in the pipe now.
      ReadOutput(task, kReadsAfterExit);
      if (task.process->fd() >= 0) CloseOutput(task);
      OnExit(task, *status);
    }
    RestartDue();
    CheckDeadlines();
  }
  return result_;
}

}  // namespace distrt::launcher
