#include "deploy/launcher/launcher.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "deploy/launcher/local_job_security.h"
#include "deploy/launcher/task_args.h"
#include "rpc/transport_security_flags.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/cluster_spec_json.h"
#include "runtime/cluster/json_util.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

namespace distrt::launcher {
namespace {

// The signal handlers' only work: the signal's number into this pipe,
// which the runner polls. Written from the handler, so a plain int.
int g_signal_pipe_write = -1;

void OnStopSignal(int signal) {
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(signal);
  ssize_t ignored = write(g_signal_pipe_write, &byte, 1);
  (void)ignored;
  errno = saved_errno;
}

// The read end of the self-pipe, or an error. SIGPIPE is ignored so that a
// closed stdout (`launch ... | head`) does not kill the launcher and, by
// PR_SET_PDEATHSIG, the job; the job keeps running and logging to files.
absl::StatusOr<int> InstallSignalHandlers() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return ErrnoError("cannot create", "the signal pipe");
  }
  g_signal_pipe_write = fds[1];
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  // Restarted, so that a signal does not cut a write to stdout short; poll
  // is never restarted, so the runner still wakes at once.
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return fds[0];
}

int BadInput(absl::string_view message) {
  std::fprintf(stderr, "launch: %.*s\n", static_cast<int>(message.size()),
               message.data());
  return kExitBadInput;
}

bool IsExecutableFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

}  // namespace

absl::StatusOr<std::string> FindTaskBinary(absl::string_view flag_name,
                                           const std::string& flag_value,
                                           absl::string_view relative_path) {
  if (!flag_value.empty()) {
    if (IsExecutableFile(flag_value)) return flag_value;
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag_name, "=", flag_value, " is not an executable file"));
  }
  char exe[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot find this program (/proc/self/exe) to find ",
                     relative_path, " next to it; pass --", flag_name));
  }
  const std::string self(exe, length);
  const std::string self_dir = self.substr(0, self.rfind('/'));
  const std::vector<std::string> tried = {
      absl::StrCat(self, ".runfiles/distrt/", relative_path),
      absl::StrCat(self_dir, "/../", relative_path),
  };
  for (const std::string& path : tried) {
    if (IsExecutableFile(path)) return path;
  }
  return absl::NotFoundError(absl::StrCat(
      "cannot find ", relative_path, " (tried ", absl::StrJoin(tried, ", "),
      "); build it with bazel or pass --", flag_name));
}

namespace {

std::string DefaultJobDir() {
  return absl::StrCat(
      "/tmp/distrt-job-",
      absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()),
      "-", getpid());
}

// `private_dir` (--secure): the directory is this user's and closed to
// everybody else (0700), so that nobody else on the host reads the job's
// logs, checkpoints and secrets, nor plants files in it. The default's name
// can be guessed, so one made beforehand by another user is refused.
absl::StatusOr<std::string> MakeJobDir(const std::string& requested,
                                       bool private_dir) {
  const std::string dir = requested.empty() ? DefaultJobDir() : requested;
  RETURN_IF_ERROR(CreateDirectories(JoinPath(dir, "logs")));
  // Absolute, so that what is printed and passed to tasks is unambiguous.
  char* absolute = realpath(dir.c_str(), nullptr);
  if (absolute == nullptr) return ErrnoError("cannot resolve", dir);
  std::string result(absolute);
  free(absolute);
  if (private_dir) {
    struct stat info;
    if (stat(result.c_str(), &info) != 0) {
      return ErrnoError("cannot stat", result);
    }
    if (info.st_uid != geteuid()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--secure: the job dir ", result, " is owned by uid ", info.st_uid,
          ", not ", geteuid(),
          ": a secure job keeps its secrets only in a directory of its own "
          "user; choose another --job_dir"));
    }
    if (chmod(result.c_str(), 0700) != 0) {
      return ErrnoError("cannot chmod", result);
    }
  }
  return result;
}

absl::Status WriteTasksJson(const std::string& job_dir,
                            const ClusterSpec& cluster,
                            const std::vector<JobRunner::StartedTask>& tasks) {
  Json doc = Json::object();
  doc["job_dir"] = job_dir;
  doc["cluster"] = ClusterSpecToJson(cluster);
  Json list = Json::array();
  for (const JobRunner::StartedTask& started : tasks) {
    list.push_back(Json{{"type", started.task.type},
                        {"index", started.task.index},
                        {"address", started.task.address},
                        {"pid", started.pid}});
  }
  doc["tasks"] = std::move(list);
  const std::string text = doc.dump(2) + "\n";
  return WriteFileAtomically(JoinPath(job_dir, "tasks.json"), {text});
}

}  // namespace

std::string ListenHost(const std::string& host) {
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return absl::StrCat("[", host, "]");
  }
  return host;
}

std::vector<std::string> TrainingFlags(const std::vector<std::string>& flags,
                                       const std::string& job_dir,
                                       const std::string& bind_host) {
  std::vector<std::pair<std::string, std::string>> defaults = {
      {"checkpoint_dir", JoinPath(job_dir, "checkpoints")},
      {"log_dir", JoinPath(job_dir, "summaries")},
      {"metrics_out", JoinPath(job_dir, "metrics.json")}};
  if (!bind_host.empty())
    defaults.push_back({"bind_host", ListenHost(bind_host)});
  return WithDefaultFlags(flags, defaults);
}

std::vector<TaskCommand> MakeTaskCommands(const JobPlan& plan,
                                          const TaskCommandOptions& options) {
  // The ps tasks take back their shards from the chief's checkpoints when
  // they are restarted.
  const std::string checkpoint_dir =
      FlagValue(options.training_flags, "checkpoint_dir").value_or("");
  std::vector<TaskCommand> commands;
  for (size_t t = 0; t < plan.tasks.size(); ++t) {
    const LaunchTask& task = plan.tasks[t];
    TaskCommand command;
    command.task = task;
    command.tf_config = TfConfigText(plan.cluster, task, plan.rpc_layer);
    if (task.type == kPsJob) {
      command.binary = options.ps_server_bin;
      if (!options.bind_host.empty()) {
        command.args = {
            absl::StrCat("--bind_host=", ListenHost(options.bind_host))};
      }
      if (static_cast<size_t>(task.index) < plan.data_plane_ports.size()) {
        command.args.push_back(absl::StrCat("--data_plane_port=",
                                            plan.data_plane_ports[task.index]));
      }
      if (!checkpoint_dir.empty()) {
        command.args.push_back(
            absl::StrCat("--checkpoint_dir=", checkpoint_dir));
      }
    } else {
      command.binary = options.worker_bin;
      command.args = options.training_flags;
    }
    if (t < options.security_args.size()) {
      command.args.insert(command.args.end(), options.security_args[t].begin(),
                          options.security_args[t].end());
    }
    commands.push_back(std::move(command));
  }
  return commands;
}

namespace {

// The user's own TLS files and token (--tls_cert ...), checked here once
// rather than by every task; their flags for the tasks.
absl::StatusOr<std::vector<std::string>> CheckUserSecurity(
    const LaunchOptions& options) {
  std::vector<std::string> args =
      rpc::TransportSecurityArgs(options.user_security);
  if (args.empty()) return args;
  if (options.secure) {
    return absl::InvalidArgumentError(
        "--secure makes its own certificates and token; give either it or "
        "--tls_cert/--tls_key/--tls_ca/--cluster_token_file");
  }
  absl::StatusOr<std::shared_ptr<const rpc::TransportSecurity>> loaded =
      rpc::TransportSecurity::Load(options.user_security);
  if (!loaded.ok()) return loaded.status();
  return args;
}

// The job's plan; an error in a cluster spec file names the file.
absl::StatusOr<JobPlan> PlanJob(const LaunchOptions& options) {
  absl::StatusOr<JobPlan> plan = MakeJobPlan(options.plan);
  if (!plan.ok() && options.plan.cluster_spec_text.has_value() &&
      !options.plan.counts.has_value()) {
    return absl::Status(plan.status().code(),
                        absl::StrCat("cluster spec ", options.cluster_spec_path,
                                     ": ", plan.status().message()));
  }
  return plan;
}

// The worker binary and, when the job has ps tasks, the ps_server binary,
// into `commands`.
absl::Status FindTaskBinaries(const LaunchOptions& options, const JobPlan& plan,
                              TaskCommandOptions& commands) {
  ASSIGN_OR_RETURN(
      commands.worker_bin,
      FindTaskBinary("worker_bin", options.worker_bin, "worker/worker"));
  if (plan.cluster.NumTasks(kPsJob) > 0) {
    ASSIGN_OR_RETURN(commands.ps_server_bin,
                     FindTaskBinary("ps_server_bin", options.ps_server_bin,
                                    "ps_server/ps_server"));
  }
  return absl::OkStatus();
}

// --secure: a throwaway CA, certificates and token under `job_dir`, and each
// task's flags for them in commands.security_args.
absl::Status MakeSecureJobArgs(const std::string& job_dir, const JobPlan& plan,
                               TaskCommandOptions& commands) {
  const std::string security_dir = JoinPath(job_dir, "security");
  ASSIGN_OR_RETURN(std::vector<rpc::TransportSecurityOptions> made,
                   MakeLocalJobSecurity(security_dir, plan.tasks));
  for (size_t i = 0; i < made.size(); ++i) {
    commands.security_args[i] = rpc::TransportSecurityArgs(made[i]);
  }
  std::printf(
      "launch: every task uses mutual TLS and a cluster token (a "
      "throwaway CA, certificates and token in %s)\n",
      security_dir.c_str());
  std::fflush(stdout);
  return absl::OkStatus();
}

// Starts every task of `plan`, and lists them in the job dir's tasks.json.
absl::StatusOr<std::unique_ptr<JobRunner>> StartJob(
    const LaunchOptions& options, const JobPlan& plan,
    const TaskCommandOptions& commands, const std::string& job_dir,
    int signal_fd) {
  JobRunnerOptions runner_options;
  runner_options.finish_grace = options.finish_grace;
  runner_options.stop_timeout = options.stop_timeout;
  runner_options.log_dir = JoinPath(job_dir, "logs");
  runner_options.out = stdout;
  runner_options.interrupt_fd = signal_fd;
  runner_options.max_restarts = options.max_restarts;
  ASSIGN_OR_RETURN(std::unique_ptr<JobRunner> runner,
                   JobRunner::Start(MakeTaskCommands(plan, commands),
                                    plan.primary, runner_options));
  if (absl::Status s = WriteTasksJson(job_dir, plan.cluster, runner->started());
      !s.ok()) {
    // The job itself is unaffected; only tools that read the file are.
    std::printf("launch: warning: %s\n", std::string(s.message()).c_str());
  }
  return runner;
}

// Says how the job ended; the launcher's exit code.
int ReportResult(const JobResult& result, const std::string& job_dir) {
  switch (result.outcome) {
    case JobResult::Outcome::kSucceeded:
      std::printf("launch: job finished: %s; job dir %s\n",
                  result.summary.c_str(), job_dir.c_str());
      std::fflush(stdout);
      return 0;
    case JobResult::Outcome::kFailed:
      std::printf("launch: job failed: %s\n", result.summary.c_str());
      std::fflush(stdout);
      return kExitFailed;
    case JobResult::Outcome::kInterrupted:
      std::printf("launch: job %s; job dir %s\n", result.summary.c_str(),
                  job_dir.c_str());
      std::fflush(stdout);
      return 128 + result.signal;
  }
  return kExitFailed;
}

}  // namespace

int Launch(const LaunchOptions& options) {
  absl::StatusOr<std::vector<std::string>> user_security_args =
      CheckUserSecurity(options);
  if (!user_security_args.ok()) {
    return BadInput(user_security_args.status().message());
  }
  absl::StatusOr<JobPlan> plan = PlanJob(options);
  if (!plan.ok()) return BadInput(plan.status().message());

  TaskCommandOptions commands;
  // Kept addresses: each task listens on its own address's host.
  const std::string bind_host =
      options.plan.keep_addresses ? "" : options.plan.bind_host;
  commands.bind_host = bind_host;
  if (absl::Status s = FindTaskBinaries(options, *plan, commands); !s.ok()) {
    return BadInput(s.message());
  }

  absl::StatusOr<std::string> job_dir =
      MakeJobDir(options.job_dir, options.secure);
  if (!job_dir.ok()) return BadInput(job_dir.status().message());
  std::printf("launch: job dir %s\n", job_dir->c_str());
  std::fflush(stdout);

  // Before any task starts, so that a Ctrl-C from now on stops the job in
  // order rather than killing the launcher.
  absl::StatusOr<int> signal_fd = InstallSignalHandlers();
  if (!signal_fd.ok()) {
    std::fprintf(stderr, "launch: %s\n",
                 std::string(signal_fd.status().message()).c_str());
    return kExitFailed;
  }

  commands.training_flags =
      TrainingFlags(options.task_flags, *job_dir, bind_host);
  // Each task's security flags: the user's, or --secure's own.
  commands.security_args.assign(plan->tasks.size(), *user_security_args);
  if (options.secure) {
    if (absl::Status s = MakeSecureJobArgs(*job_dir, *plan, commands);
        !s.ok()) {
      return BadInput(s.message());
    }
  }

  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      StartJob(options, *plan, commands, *job_dir, *signal_fd);
  if (!runner.ok()) {
    std::fprintf(stderr, "launch: %s\n",
                 std::string(runner.status().message()).c_str());
    return kExitFailed;
  }
  return ReportResult((*runner)->Wait(), *job_dir);
}

}  // namespace distrt::launcher
