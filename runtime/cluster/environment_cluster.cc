#include "runtime/cluster/environment_cluster.h"

#include <utility>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

ABSL_FLAG(std::string, slurm_jobs, "",
          "Under srun without TF_CONFIG: the step's tasks by job, e.g. "
          "ps:2,worker:3 (jobs take ranks in name order; with no chief job "
          "worker 0 is the chief). Empty: every task is a worker.");
ABSL_FLAG(int, slurm_port_base, 8888,
          "Under srun without TF_CONFIG: a task listens on this port plus its "
          "rank on its host (TF's SlurmClusterResolver's port_base).");

namespace distrt {

absl::StatusOr<SlurmClusterOptions> MakeSlurmClusterOptions(
    absl::string_view jobs, int port_base) {
  SlurmClusterOptions options;
  if (!jobs.empty()) {
    ASSIGN_OR_RETURN(options.jobs, ParseSlurmJobs(jobs));
  }
  options.port_base = port_base;
  if (options.port_base < 1 || options.port_base > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("Slurm: --slurm_port_base=", options.port_base,
                     " is not a port (1 to 65535)"));
  }
  return options;
}

absl::StatusOr<SlurmClusterOptions> SlurmClusterOptionsFromFlags() {
  return MakeSlurmClusterOptions(absl::GetFlag(FLAGS_slurm_jobs),
                                 absl::GetFlag(FLAGS_slurm_port_base));
}

absl::StatusOr<EnvironmentCluster> ResolveClusterFromEnvironment(
    const SlurmClusterOptions& slurm, const EnvironmentLookup& env) {
  EnvironmentCluster cluster;
  if (std::optional<std::string> tf_config = env("TF_CONFIG");
      tf_config.has_value()) {
    ASSIGN_OR_RETURN(cluster.config, ParseTfConfig(*tf_config));
    cluster.source = ClusterSource::kTfConfig;
    return cluster;
  }
  if (SlurmClusterResolver::InSlurmStep(env)) {
    const SlurmClusterResolver resolver(slurm, env);
    ASSIGN_OR_RETURN(cluster.config, resolver.Resolve());
    cluster.source = ClusterSource::kSlurm;
    return cluster;
  }
  cluster.source = ClusterSource::kLocal;
  return cluster;
}

absl::StatusOr<EnvironmentCluster> ResolveClusterFromFlagsAndEnvironment() {
  ASSIGN_OR_RETURN(SlurmClusterOptions slurm, SlurmClusterOptionsFromFlags());
  return ResolveClusterFromEnvironment(slurm);
}

absl::StatusOr<std::optional<std::string>> TaskGpusFromEnvironment(
    const EnvironmentCluster& cluster, const SlurmClusterOptions& slurm,
    const EnvironmentLookup& env) {
  if (cluster.source != ClusterSource::kSlurm) return std::nullopt;
  return SlurmClusterResolver(slurm, env).TaskGpus();
}

}  // namespace distrt
