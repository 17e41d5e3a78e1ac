// distctl: inspect and operate a running cluster from the command line.
//
//   distctl resolve    print what this process's TF_CONFIG resolves to
//   distctl stats      status of every ps task
//   distctl shutdown   ask every ps task to exit
//
// Exit status: 0 on success, 2 on bad input (TF_CONFIG, flags, command).

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "client/cluster_source.h"
#include "client/ps_commands.h"
#include "client/resolve_command.h"
#include "rpc/grpc_logging.h"
#include "runtime/cluster/tf_config.h"

ABSL_FLAG(std::string, cluster_spec, "",
          "JSON file with the cluster (TF_CONFIG's \"cluster\" part, or a "
          "whole TF_CONFIG); default: the TF_CONFIG environment variable.");
ABSL_FLAG(double, timeout_secs, 10, "Deadline of each RPC, in seconds.");

namespace distrt {
namespace {

constexpr char kUsage[] = R"(distctl COMMAND

Commands:
  resolve   Read TF_CONFIG from the environment and print, as one JSON
            object, what a task started with it will see: mode, cluster,
            task_type, task_index, rpc_layer, environment, master, is_chief,
            num_workers, id_in_cluster. Exit status 2 and one line on stderr
            when TF_CONFIG is invalid.
  stats     Show every ps task of the cluster: address, uptime, incarnation.
  shutdown  Ask every ps task of the cluster to finish and exit.

stats and shutdown find the cluster in --cluster_spec=FILE (a JSON file with
the "cluster" part of TF_CONFIG, or a whole TF_CONFIG) or else in TF_CONFIG.
They exit 1 when a task does not answer within --timeout_secs.)";

constexpr int kExitBadInput = 2;

int Resolve() {
  absl::StatusOr<TfConfig> config = TfConfigFromEnvironment();
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(config.status().message()).c_str());
    return kExitBadInput;
  }
  std::printf("%s\n", DescribeResolvedConfig(*config).dump(2).c_str());
  return 0;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  rpc::QuietGrpcLoggingUnlessRequested();
  if (args.size() < 2) {
    std::fprintf(stderr, "distctl: no command given\n\nusage: %s\n", kUsage);
    return kExitBadInput;
  }
  const std::string command = args[1];
  if (command == "resolve" && args.size() == 2) return Resolve();
  if ((command == "stats" || command == "shutdown") && args.size() == 2) {
    const double timeout_secs = absl::GetFlag(FLAGS_timeout_secs);
    if (!(timeout_secs > 0)) {
      std::fprintf(stderr, "distctl: --timeout_secs must be positive\n");
      return kExitBadInput;
    }
    absl::StatusOr<ClusterSpec> cluster =
        LoadClusterForClient(absl::GetFlag(FLAGS_cluster_spec));
    if (!cluster.ok()) {
      std::fprintf(stderr, "distctl: %s\n",
                   std::string(cluster.status().message()).c_str());
      return kExitBadInput;
    }
    const absl::Duration timeout = absl::Seconds(timeout_secs);
    return command == "stats" ? RunStatsCommand(*cluster, timeout, stdout)
                              : RunShutdownCommand(*cluster, timeout, stdout);
  }
  if (command == "help") {
    std::printf("usage: %s\n", kUsage);
    return 0;
  }
  std::fprintf(
      stderr, "distctl: %s\n\nusage: %s\n",
      (command == "resolve" || command == "stats" || command == "shutdown"
           ? absl::StrCat(command, " takes no arguments")
           : absl::StrCat("unknown command \"", command, "\""))
          .c_str(),
      kUsage);
  return kExitBadInput;
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) { return distrt::Main(argc, argv); }
