// launch: starts a whole training job on this machine and supervises it.
//
// Plans the cluster (from a cluster spec file or from task counts, every
// task on a free port of --bind_host), starts the ps tasks as ps_server
// processes and the chief, workers and evaluator as worker processes, each
// with its TF_CONFIG, relays their output prefixed with the task's name, and
// stops the whole job when it ends (see deploy/launcher/job_runner.h). The
// job dir keeps each task's log, tasks.json (the cluster and every task's
// pid), and by default the checkpoints, summaries and final metrics.
//
// Exit status: 0 when the primary task (the chief, else worker 0) finished,
// 1 when a task failed, 2 for bad flags or a bad cluster spec, 128+signal
// when interrupted (130 for Ctrl-C).

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "deploy/launcher/job_plan.h"
#include "deploy/launcher/job_runner.h"
#include "deploy/launcher/local_job_security.h"
#include "deploy/launcher/task_args.h"
#include "rpc/transport_security_flags.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/cluster_spec_json.h"
#include "runtime/cluster/json_util.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"

ABSL_FLAG(std::string, cluster_spec, "",
          "A cluster spec file: a cluster object or a whole TF_CONFIG, jobs "
          "as lists or as objects keyed by task index (as Kubeflow writes "
          "them). Its addresses are replaced by free ports on --bind_host. "
          "Instead of --ps/--workers/--chief/--evaluator.");
ABSL_FLAG(std::optional<int>, ps, std::nullopt,
          "Number of ps tasks (with --workers etc., instead of "
          "--cluster_spec).");
ABSL_FLAG(std::optional<int>, workers, std::nullopt,
          "Number of worker tasks (besides the chief).");
ABSL_FLAG(bool, chief, false, "Add a chief task.");
ABSL_FLAG(bool, evaluator, false, "Add an evaluator task.");
ABSL_FLAG(std::string, job_dir, "",
          "Directory for the job's logs (logs/<type>-<index>.log), tasks.json "
          "and, unless the task flags after -- set them, its checkpoints, "
          "summaries and metrics.json; created if missing. Default: a new "
          "/tmp/distrt-job-<date>-<time>-<pid>.");
ABSL_FLAG(std::string, bind_host, "127.0.0.1",
          "Host every task listens on and is reached at.");
ABSL_FLAG(std::string, ps_server_bin, "",
          "The ps_server binary. Default: the one built next to launch.");
ABSL_FLAG(std::string, worker_bin, "",
          "The worker binary. Default: the one built next to launch.");
ABSL_FLAG(double, grace_secs, 120,
          "After the chief (or worker 0) finished, how long the other tasks "
          "may take to exit before they are stopped.");
ABSL_FLAG(bool, secure, false,
          "Make a throwaway CA, a certificate for each task and a random "
          "cluster token (in JOB_DIR/security) and start every task with "
          "mutual TLS and the token. Or give --tls_cert, --tls_key, --tls_ca "
          "and --cluster_token_file of your own: they go to every task.");
ABSL_FLAG(int, max_restarts, 0,
          "Restart a task that fails while the job runs up to this many "
          "times (each task), after a backoff of 1s doubling up to 30s, as "
          "Kubernetes' restartPolicy: OnFailure does for a TFJob. A ps task "
          "comes back with its shard of the latest checkpoint, a chief "
          "resumes from it, a worker rejoins.");
ABSL_FLAG(double, stop_secs, 10,
          "When stopping the job, how long a task may take to exit after "
          "SIGTERM before it gets SIGKILL.");

namespace distrt::launcher {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

constexpr char kUsage[] =
    "launch (--cluster_spec=FILE | --ps=N --workers=M [--chief] "
    "[--evaluator]) [flags] -- TASK_FLAGS...\n"
    "\n"
    "Starts a training job on this machine: ps tasks (ps_server) and the "
    "chief, workers and evaluator (worker), each with its TF_CONFIG and a "
    "free port on --bind_host, and stops them all when the job ends.\n"
    "\n"
    "The cluster comes from one of:\n"
    "  --cluster_spec=FILE   a cluster spec or TF_CONFIG; its addresses are\n"
    "                        placeholders, replaced by free ports\n"
    "  --ps=N --workers=M [--chief] [--evaluator]   task counts\n"
    "\n"
    "Everything after -- goes to every chief, worker and evaluator.\n"
    "Output lines are prefixed with their task ([worker:1]); each task's\n"
    "raw output is in JOB_DIR/logs. Exit status: 0 when the chief (else\n"
    "worker 0) finished, 1 when a task failed, 2 for bad flags, 130 on\n"
    "Ctrl-C.\n"
    "\n"
    "Example:\n"
    "  launch --ps=2 --workers=2 --chief -- --model=logreg "
    "--train_data=DATA --train_steps=1000";

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

// Abseil's parser exits with status 1 on an unknown flag or a bad value,
// which for launch means "the job failed". So the flags before "--" are
// checked here first and a bad one is reported as bad input (exit 2).
absl::Status CheckLauncherFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 2 || arg[0] != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument \"", arg,
                       "\"; flags for the tasks go after -- (see --help)"));
    }
    absl::ConsumePrefix(&arg, "-");
    absl::ConsumePrefix(&arg, "-");
    const size_t equals = arg.find('=');
    const absl::string_view name = arg.substr(0, equals);
    std::optional<absl::string_view> value;
    if (equals != absl::string_view::npos) value = arg.substr(equals + 1);

    // Abseil handles these itself; they are not in its flag registry.
    if (absl::StartsWith(name, "help") || name == "version" ||
        name == "only_check_args") {
      continue;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && !value.has_value() && absl::StartsWith(name, "no")) {
      absl::CommandLineFlag* negated =
          absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) continue;
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name,
                       " (see --help; flags for the tasks go after --)"));
    }
    if (!value.has_value()) {
      if (flag->IsOfType<bool>()) continue;
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag --", name, " needs a value"));
      }
      value = argv[++i];
    }
    // Sets the flag; ParseCommandLine then sets it to the same value.
    std::string error;
    if (!flag->ParseFrom(*value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad value \"", *value, "\" for --", name, ": ", error));
    }
  }
  return absl::OkStatus();
}

bool IsExecutableFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

// The binary `flag_value` names, or else `relative_path` (e.g.
// "ps_server/ps_server") found next to this launcher: in its Bazel runfiles
// tree, or beside it in bazel-bin.
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

std::string DefaultJobDir() {
  return absl::StrCat(
      "/tmp/distrt-job-",
      absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()),
      "-", getpid());
}

absl::StatusOr<std::string> MakeJobDir(const std::string& requested) {
  const std::string dir = requested.empty() ? DefaultJobDir() : requested;
  RETURN_IF_ERROR(CreateDirectories(JoinPath(dir, "logs")));
  // Absolute, so that what is printed and passed to tasks is unambiguous.
  char* absolute = realpath(dir.c_str(), nullptr);
  if (absolute == nullptr) return ErrnoError("cannot resolve", dir);
  std::string result(absolute);
  free(absolute);
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

// A bare IPv6 address in brackets, as ps_server appends ":port" to it.
std::string ListenHost(const std::string& host) {
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return absl::StrCat("[", host, "]");
  }
  return host;
}

int Main(int argc, char** argv) {
  // Under `bazel run` the working directory is the runfiles tree; relative
  // paths the user gave mean the directory they ran it from.
  if (const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
      dir != nullptr && *dir != '\0' && chdir(dir) != 0) {
    return BadInput(ErrnoError("cannot change to", dir).message());
  }
  absl::SetProgramUsageMessage(kUsage);
  if (absl::Status s = CheckLauncherFlags(argc, argv); !s.ok()) {
    return BadInput(s.message());
  }
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  // CheckLauncherFlags let through no argument before "--", so these are
  // all after it.
  const std::vector<std::string> task_flags(positional.begin() + 1,
                                            positional.end());

  const double grace_secs = absl::GetFlag(FLAGS_grace_secs);
  const double stop_secs = absl::GetFlag(FLAGS_stop_secs);
  if (!std::isfinite(grace_secs) || grace_secs < 0) {
    return BadInput("--grace_secs must be a number of seconds >= 0");
  }
  if (!std::isfinite(stop_secs) || stop_secs < 0) {
    return BadInput("--stop_secs must be a number of seconds >= 0");
  }
  const int max_restarts = absl::GetFlag(FLAGS_max_restarts);
  if (max_restarts < 0) return BadInput("--max_restarts must be >= 0");
  // The user's own TLS files and token, checked here once rather than by
  // every task.
  const rpc::TransportSecurityOptions user_security =
      rpc::TransportSecurityOptionsFromFlags();
  const std::vector<std::string> user_security_args =
      rpc::TransportSecurityArgs(user_security);
  if (!user_security_args.empty()) {
    if (absl::GetFlag(FLAGS_secure)) {
      return BadInput(
          "--secure makes its own certificates and token; give either it or "
          "--tls_cert/--tls_key/--tls_ca/--cluster_token_file");
    }
    absl::StatusOr<std::shared_ptr<const rpc::TransportSecurity>> loaded =
        rpc::TransportSecurity::Load(user_security);
    if (!loaded.ok()) return BadInput(loaded.status().message());
  }

  JobPlanOptions plan_options;
  plan_options.bind_host = absl::GetFlag(FLAGS_bind_host);
  const std::string spec_path = absl::GetFlag(FLAGS_cluster_spec);
  if (!spec_path.empty()) {
    absl::StatusOr<std::string> text = ReadFileToString(spec_path);
    if (!text.ok()) {
      return BadInput(
          absl::StrCat("--cluster_spec: ", text.status().message()));
    }
    plan_options.cluster_spec_text = *std::move(text);
  }
  const std::optional<int> num_ps = absl::GetFlag(FLAGS_ps);
  const std::optional<int> num_workers = absl::GetFlag(FLAGS_workers);
  if (num_ps.has_value() || num_workers.has_value() ||
      absl::GetFlag(FLAGS_chief) || absl::GetFlag(FLAGS_evaluator)) {
    plan_options.counts =
        JobCounts{num_ps.value_or(0), num_workers.value_or(0),
                  absl::GetFlag(FLAGS_chief), absl::GetFlag(FLAGS_evaluator)};
  }
  absl::StatusOr<JobPlan> plan = MakeJobPlan(plan_options);
  if (!plan.ok()) {
    if (plan_options.cluster_spec_text.has_value() &&
        !plan_options.counts.has_value()) {
      return BadInput(absl::StrCat("cluster spec ", spec_path, ": ",
                                   plan.status().message()));
    }
    return BadInput(plan.status().message());
  }

  absl::StatusOr<std::string> worker_bin = FindTaskBinary(
      "worker_bin", absl::GetFlag(FLAGS_worker_bin), "worker/worker");
  if (!worker_bin.ok()) return BadInput(worker_bin.status().message());
  std::string ps_server_bin;
  if (plan->cluster.NumTasks(kPsJob) > 0) {
    absl::StatusOr<std::string> found =
        FindTaskBinary("ps_server_bin", absl::GetFlag(FLAGS_ps_server_bin),
                       "ps_server/ps_server");
    if (!found.ok()) return BadInput(found.status().message());
    ps_server_bin = *std::move(found);
  }

  absl::StatusOr<std::string> job_dir =
      MakeJobDir(absl::GetFlag(FLAGS_job_dir));
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

  // The job dir's defaults for what the user did not set, and the host the
  // chief serves a multi-worker job's rendezvous on.
  const std::vector<std::string> training_flags = WithDefaultFlags(
      task_flags, {{"checkpoint_dir", JoinPath(*job_dir, "checkpoints")},
                   {"log_dir", JoinPath(*job_dir, "summaries")},
                   {"metrics_out", JoinPath(*job_dir, "metrics.json")},
                   {"bind_host", ListenHost(plan_options.bind_host)}});
  // Each task's security flags: the user's, or --secure's own.
  std::vector<std::vector<std::string>> security_args(plan->tasks.size(),
                                                      user_security_args);
  if (absl::GetFlag(FLAGS_secure)) {
    const std::string security_dir = JoinPath(*job_dir, "security");
    absl::StatusOr<std::vector<rpc::TransportSecurityOptions>> made =
        MakeLocalJobSecurity(security_dir, plan->tasks);
    if (!made.ok()) return BadInput(made.status().message());
    for (size_t i = 0; i < made->size(); ++i) {
      security_args[i] = rpc::TransportSecurityArgs((*made)[i]);
    }
    std::printf(
        "launch: every task uses mutual TLS and a cluster token (a "
        "throwaway CA, certificates and token in %s)\n",
        security_dir.c_str());
    std::fflush(stdout);
  }

  // The ps tasks take back their shards from the chief's checkpoints when
  // they are restarted.
  const std::string checkpoint_dir =
      FlagValue(training_flags, "checkpoint_dir").value_or("");
  std::vector<TaskCommand> commands;
  for (size_t t = 0; t < plan->tasks.size(); ++t) {
    const LaunchTask& task = plan->tasks[t];
    TaskCommand command;
    command.task = task;
    command.tf_config = TfConfigText(plan->cluster, task);
    if (task.type == kPsJob) {
      command.binary = ps_server_bin;
      command.args = {
          absl::StrCat("--bind_host=", ListenHost(plan_options.bind_host))};
      if (!checkpoint_dir.empty()) {
        command.args.push_back(
            absl::StrCat("--checkpoint_dir=", checkpoint_dir));
      }
    } else {
      command.binary = *worker_bin;
      command.args = training_flags;
    }
    command.args.insert(command.args.end(), security_args[t].begin(),
                        security_args[t].end());
    commands.push_back(std::move(command));
  }

  JobRunnerOptions runner_options;
  runner_options.finish_grace = absl::Seconds(grace_secs);
  runner_options.stop_timeout = absl::Seconds(stop_secs);
  runner_options.log_dir = JoinPath(*job_dir, "logs");
  runner_options.out = stdout;
  runner_options.interrupt_fd = *signal_fd;
  runner_options.max_restarts = max_restarts;
  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      JobRunner::Start(std::move(commands), plan->primary, runner_options);
  if (!runner.ok()) {
    std::fprintf(stderr, "launch: %s\n",
                 std::string(runner.status().message()).c_str());
    return kExitFailed;
  }
  if (absl::Status s =
          WriteTasksJson(*job_dir, plan->cluster, (*runner)->started());
      !s.ok()) {
    // The job itself is unaffected; only tools that read the file are.
    std::printf("launch: warning: %s\n", std::string(s.message()).c_str());
  }

  const JobResult result = (*runner)->Wait();
  switch (result.outcome) {
    case JobResult::Outcome::kSucceeded:
      std::printf("launch: job finished: %s; job dir %s\n",
                  result.summary.c_str(), job_dir->c_str());
      std::fflush(stdout);
      return 0;
    case JobResult::Outcome::kFailed:
      std::printf("launch: job failed: %s\n", result.summary.c_str());
      std::fflush(stdout);
      return kExitFailed;
    case JobResult::Outcome::kInterrupted:
      std::printf("launch: job %s; job dir %s\n", result.summary.c_str(),
                  job_dir->c_str());
      std::fflush(stdout);
      return 128 + result.signal;
  }
  return kExitFailed;
}

}  // namespace
}  // namespace distrt::launcher

int main(int argc, char** argv) { return distrt::launcher::Main(argc, argv); }
