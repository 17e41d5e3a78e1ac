// distctl: inspect and operate a running cluster from the command line.
//
//   distctl resolve    print what this process's TF_CONFIG resolves to
//   distctl stats      status and holdings of every ps task
//   distctl vars       every variable and where it lives
//   distctl pull NAME  a variable's values, or a summary of them
//   distctl save DIR   checkpoint the ps tasks into DIR
//   distctl restore DIR  load the latest checkpoint in DIR
//   distctl shutdown   ask every ps task to exit
//   distctl export --checkpoint=DIR --out=DIR
//                      a checkpoint's tables and variables as .npy files
//                      for serving (reads files; no cluster)
//
// Exit status: 0 on success, 1 when the cluster refused, did not answer
// within --timeout_secs or failed the request, 2 on bad input (TF_CONFIG,
// flags, command).

#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cluster_source.h"
#include "client/export_command.h"
#include "client/ps_client.h"
#include "client/ps_commands.h"
#include "client/resolve_command.h"
#include "client/variable_commands.h"
#include "grpc/grpc.h"
#include "rpc/grpc_logging.h"
#include "rpc/transport_security_flags.h"
#include "runtime/cluster/environment_cluster.h"
#include "runtime/cluster/tf_config.h"

ABSL_FLAG(std::string, cluster_spec, "",
          "JSON file with the cluster (TF_CONFIG's \"cluster\" part, or a "
          "whole TF_CONFIG); default: the TF_CONFIG environment variable.");
ABSL_FLAG(double, timeout_secs, 10,
          "How long a command may wait for the ps tasks, in seconds, in all "
          "(save and restore: 60 times this): each request's deadline, and "
          "how long a ps task that does not answer is retried.");
ABSL_FLAG(int64_t, step, -1,
          "save: the step to record; default: the value of the variable "
          "\"global_step\", or 0 without one.");
ABSL_FLAG(int, keep_last, 5,
          "save: how many checkpoints to keep in DIR, newest first; 0 keeps "
          "all.");
ABSL_FLAG(int, max_values, 20,
          "pull: print every value of variables with at most this many "
          "elements, a summary of larger ones.");
ABSL_FLAG(std::string, checkpoint, "",
          "export: a checkpoint directory (its latest committed checkpoint "
          "is exported) or one ckpt-<step> directory.");
ABSL_FLAG(std::string, out, "",
          "export: the directory to write; it must not exist or be empty "
          "(see --overwrite).");
ABSL_FLAG(bool, overwrite, false,
          "export: replace an earlier export in --out.");
ABSL_FLAG(bool, allow_uncommitted, false,
          "export: export a ckpt-<step> directory that was never committed "
          "(a save that did not finish).");

namespace distrt {
namespace {

constexpr char kUsage[] = R"(distctl COMMAND [ARGUMENT] [--flags]

Commands:
  resolve      Read TF_CONFIG from the environment (or, without it, a Slurm
               step's variables with --slurm_jobs; docs/tf_config.md) and
               print, as one JSON object, what a task started there will
               see: mode, cluster, task_type, task_index, rpc_layer,
               environment, master, is_chief, num_workers, id_in_cluster,
               source (TF_CONFIG, Slurm or local), and under Slurm the
               task's cuda_visible_devices, or cuda_visible_devices_error
               when the host's GPUs cannot be shared among its tasks (a
               worker there would stop with it). Exit status 2 and one line
               on stderr when the cluster is invalid, or when --slurm_jobs
               is given outside a Slurm step without TF_CONFIG.
  stats        Every ps task: address, uptime, incarnation, variables,
               hash tables, bytes, rows, requests served; under it, each
               hash table's rows, admitted, evicted (ttl, capacity),
               unknown lookups, dropped pushes and clock (global step).
  vars         Every variable: shape, dtype, bytes (with optimizer slots)
               and which ps task holds which rows; every hash table.
  pull NAME    A variable's values (at most --max_values), or its shape,
               min / max / mean and first values.
  save DIR     Every ps task writes its shard of a checkpoint under DIR
               (--step, --keep_last).
  restore DIR  Load the latest checkpoint in DIR (or the checkpoint DIR)
               into the variables that exist on the ps tasks.
  shutdown     Ask every ps task of the cluster to finish and exit.
  export       --checkpoint=DIR --out=DIR [--overwrite] [--allow_uncommitted]
               Write the latest committed checkpoint in DIR (or the
               checkpoint DIR) for serving: per hash table its ids, sorted,
               and a float32 matrix of their rows; every variable whole; a
               manifest.json (docs/export.md). Optimizer slots are left
               out. Reads files only: no cluster. Exit status 1 when the
               checkpoint is missing, not committed or damaged.

All but resolve and export find the cluster in --cluster_spec=FILE (a
JSON file with the "cluster" part of TF_CONFIG, or a whole TF_CONFIG) or
else in TF_CONFIG. Each gives up after --timeout_secs (save and restore: 60
times it) and says of a ps task that failed either refused (WHY), when it
answered and refused (the cluster token, the client's certificate, the TLS
handshake), or unreachable (WHY), when nothing answered in time. They exit
1 when the cluster refuses, does not answer or fails the request, and 2 on
bad input.)";

constexpr int kExitBadInput = 2;

// `distctl resolve`: the cluster as a task started here would resolve it.
int Resolve() {
  absl::StatusOr<SlurmClusterOptions> slurm = SlurmClusterOptionsFromFlags();
  if (!slurm.ok()) {
    std::fprintf(stderr, "%s\n", std::string(slurm.status().message()).c_str());
    return kExitBadInput;
  }
  absl::StatusOr<EnvironmentCluster> resolved =
      ResolveClusterFromEnvironment(*slurm);
  if (!resolved.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(resolved.status().message()).c_str());
    return kExitBadInput;
  }
  // Refused rather than answered in local mode: whoever passes --slurm_jobs
  // asks what a task of a Slurm step sees, and the answer goes to stdout as
  // JSON that scripts read, where a note on stderr is easily missed. Here
  // the step's variables are missing (distctl run on the login node or in
  // the batch script rather than under srun), so the honest answer is that
  // there is no Slurm cluster to describe. TF_CONFIG, when set, wins as
  // documented, and is answered.
  if (resolved->source == ClusterSource::kLocal && !slurm->jobs.empty()) {
    std::fprintf(stderr,
                 "Slurm: --slurm_jobs=%s is given, but this process is not "
                 "in a Slurm job step (srun sets SLURM_PROCID, "
                 "SLURM_STEP_NUM_TASKS and SLURM_STEP_NODELIST) and TF_CONFIG "
                 "is unset; run distctl resolve under srun, or leave out "
                 "--slurm_jobs for local mode\n",
                 absl::GetFlag(FLAGS_slurm_jobs).c_str());
    return kExitBadInput;
  }
  Json described = DescribeResolvedConfig(resolved->config);
  described["source"] = std::string(ClusterSourceName(resolved->source));
  // The GPUs a worker here would take. distctl uses none: a host whose GPUs
  // cannot be shared among its tasks is reported, not an error, since the
  // cluster itself resolved (a worker there would stop with this message).
  absl::StatusOr<std::optional<std::string>> task_gpus =
      TaskGpusFromEnvironment(*resolved, *slurm);
  if (!task_gpus.ok()) {
    described["cuda_visible_devices_error"] =
        std::string(task_gpus.status().message());
  } else if (task_gpus->has_value()) {
    described["cuda_visible_devices"] = **task_gpus;
  }
  std::printf("%s\n", described.dump(2).c_str());
  return 0;
}

int BadInput(absl::string_view message) {
  std::fprintf(stderr, "distctl: %s\n\nusage: %s\n",
               std::string(message).c_str(), kUsage);
  return kExitBadInput;
}

// Commands that talk to the cluster's ps tasks, and their argument.
int RunClusterCommand(const std::string& command, const std::string& argument,
                      const ClusterSpec& cluster, absl::Duration timeout,
                      std::shared_ptr<const rpc::TransportSecurity> security) {
  if (command == "stats") {
    return RunStatsCommand(cluster, timeout, security.get(), stdout);
  }
  if (command == "shutdown") {
    return RunShutdownCommand(cluster, timeout, security.get(), stdout);
  }
  // The whole command, its retries included, ends by the deadline: a ps
  // task that refuses the connection (e.g. TLS against a plain-TCP client)
  // is otherwise retried like one that is restarting.
  const bool checkpoint = command == "save" || command == "restore";
  PsClient::Options options;
  options.security = security;
  options.rpc_timeout = timeout;
  options.ps_failure_timeout = timeout;
  options.checkpoint_timeout = timeout * 60;
  options.deadline = absl::Now() + (checkpoint ? timeout * 60 : timeout);
  options.timeout_flag = "--timeout_secs";
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(cluster, options);
  if (!client.ok()) return BadInput(client.status().message());
  const CommandOutput output{stdout, stderr,
                             security != nullptr && security->uses_tls()};
  if (command == "vars") return RunVarsCommand(**client, output);
  if (command == "pull") {
    return RunPullCommand(**client, argument, absl::GetFlag(FLAGS_max_values),
                          output);
  }
  if (command == "save") {
    return RunSaveCommand(**client, argument, absl::GetFlag(FLAGS_step),
                          absl::GetFlag(FLAGS_keep_last), output);
  }
  return RunRestoreCommand(**client, argument, output);
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  rpc::QuietGrpcLoggingUnlessRequested();
  if (args.size() < 2) return BadInput("no command given");
  const std::string command = args[1];
  if (command == "help") {
    std::printf("usage: %s\n", kUsage);
    return 0;
  }
  // Each command and the argument it takes ("" for none).
  static const auto* const kArgumentOf = new std::map<std::string, std::string>{
      {"resolve", ""},  {"stats", ""},   {"shutdown", ""},   {"vars", ""},
      {"pull", "NAME"}, {"save", "DIR"}, {"restore", "DIR"}, {"export", ""}};
  auto known = kArgumentOf->find(command);
  if (known == kArgumentOf->end()) {
    return BadInput(absl::StrCat("unknown command \"", command, "\""));
  }
  const size_t expected_args = known->second.empty() ? 2 : 3;
  if (args.size() != expected_args) {
    return BadInput(
        known->second.empty()
            ? absl::StrCat(command, " takes no arguments")
            : absl::StrCat(command, " takes one argument, ", known->second));
  }
  const std::string argument = expected_args == 3 ? args[2] : "";
  if (command == "resolve") return Resolve();
  if (command == "export") {
    ExportCommandOptions options;
    options.checkpoint = absl::GetFlag(FLAGS_checkpoint);
    options.out = absl::GetFlag(FLAGS_out);
    options.overwrite = absl::GetFlag(FLAGS_overwrite);
    options.allow_uncommitted = absl::GetFlag(FLAGS_allow_uncommitted);
    return RunExportCommand(options, stdout, stderr);
  }

  const double timeout_secs = absl::GetFlag(FLAGS_timeout_secs);
  if (!(timeout_secs > 0)) return BadInput("--timeout_secs must be positive");
  if (absl::GetFlag(FLAGS_keep_last) < 0) {
    return BadInput("--keep_last must not be negative");
  }
  if (absl::GetFlag(FLAGS_max_values) < 1) {
    return BadInput("--max_values must be positive");
  }
  absl::StatusOr<ClusterSpec> cluster =
      LoadClusterForClient(absl::GetFlag(FLAGS_cluster_spec));
  if (!cluster.ok()) {
    std::fprintf(stderr, "distctl: %s\n",
                 std::string(cluster.status().message()).c_str());
    return kExitBadInput;
  }
  absl::StatusOr<std::shared_ptr<const rpc::TransportSecurity>> security =
      rpc::TransportSecurityFromFlags();
  if (!security.ok()) return BadInput(security.status().message());
  const int status =
      RunClusterCommand(command, argument, *cluster,
                        absl::Seconds(timeout_secs), *std::move(security));
  // gRPC frees a channel (its TLS context included) on its own threads
  // after the last reference goes. Wait for that before exiting, so that a
  // command over in a second leaves nothing half-freed: LeakSanitizer at
  // exit reported such OpenSSL objects now and then.
  grpc_init();
  grpc_shutdown_blocking();
  return status;
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) { return distrt::Main(argc, argv); }
