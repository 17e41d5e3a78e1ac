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

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
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
#include "deploy/launcher/launcher.h"
#include "rpc/transport_security_flags.h"
#include "runtime/util/file_system.h"

ABSL_FLAG(std::string, cluster_spec, "",
          "A cluster spec file: a cluster object or a whole TF_CONFIG, jobs "
          "as lists or as objects keyed by task index (as Kubeflow writes "
          "them). Its addresses are replaced by free ports on --bind_host "
          "unless --keep_addresses. Instead of "
          "--ps/--workers/--chief/--evaluator.");
ABSL_FLAG(bool, keep_addresses, false,
          "With --cluster_spec: keep its addresses as written, each task "
          "listening on its own address's host (tasks on hosts of their "
          "own, e.g. network namespaces or containers that --ps_server_bin "
          "and --worker_bin enter); --bind_host is then unused.");
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
ABSL_FLAG(std::string, rpc_layer, "",
          "TF_CONFIG \"rpc_layer\" for every task: \"grpc\" (the default) "
          "or \"grpc+tcp\" (tensors to the ps tasks over a TCP data plane "
          "beside gRPC; with --secure, inside mutual TLS with the token)");
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

  LaunchOptions options;
  options.task_flags = task_flags;
  options.finish_grace = absl::Seconds(grace_secs);
  options.stop_timeout = absl::Seconds(stop_secs);
  options.max_restarts = max_restarts;
  options.secure = absl::GetFlag(FLAGS_secure);
  options.user_security = rpc::TransportSecurityOptionsFromFlags();
  options.worker_bin = absl::GetFlag(FLAGS_worker_bin);
  options.ps_server_bin = absl::GetFlag(FLAGS_ps_server_bin);
  options.job_dir = absl::GetFlag(FLAGS_job_dir);
  JobPlanOptions& plan_options = options.plan;
  plan_options.bind_host = absl::GetFlag(FLAGS_bind_host);
  plan_options.keep_addresses = absl::GetFlag(FLAGS_keep_addresses);
  plan_options.rpc_layer = absl::GetFlag(FLAGS_rpc_layer);
  const std::string spec_path = absl::GetFlag(FLAGS_cluster_spec);
  options.cluster_spec_path = spec_path;
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
  return Launch(options);
}

}  // namespace
}  // namespace distrt::launcher

int main(int argc, char** argv) { return distrt::launcher::Main(argc, argv); }
