#ifndef DISTRT_RUNTIME_CLUSTER_ENVIRONMENT_CLUSTER_H_
#define DISTRT_RUNTIME_CLUSTER_ENVIRONMENT_CLUSTER_H_

// Where the binaries (worker, ps_server, distctl resolve) find their
// cluster, in this order:
//
//   1. TF_CONFIG, when it is set (Kubeflow, the local launcher, by hand);
//   2. Slurm's step variables, when the process runs under srun
//      (SlurmClusterResolver, with --slurm_jobs and --slurm_port_base);
//   3. otherwise local mode: one task, no cluster.
//
// The flags are defined here so that every binary takes the same ones.

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/cluster/slurm_cluster_resolver.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {

struct EnvironmentCluster {
  TfConfig config;
  // "TF_CONFIG", "Slurm" or "local".
  std::string source;
};

// --slurm_jobs and --slurm_port_base. INVALID_ARGUMENT naming the flag.
absl::StatusOr<SlurmClusterOptions> SlurmClusterOptionsFromFlags();

// The rules above; errors name their source ("TF_CONFIG: ...",
// "Slurm: ...").
absl::StatusOr<EnvironmentCluster> ResolveClusterFromEnvironment(
    const SlurmClusterOptions& slurm,
    const EnvironmentLookup& env = ProcessEnvironment);

// Both of the above, for a main(): the flags, then the environment.
absl::StatusOr<EnvironmentCluster> ResolveClusterFromFlagsAndEnvironment();

// Under Slurm (`cluster.source` "Slurm"), this task's GPUs for
// CUDA_VISIBLE_DEVICES, as TF's resolver sets them
// (SlurmClusterResolver::TaskGpus); absent elsewhere or when the step names
// no GPUs. Asked only by what uses GPUs (the worker, distctl resolve), so
// that a GPU shortfall on a host does not stop a ps task or a client.
absl::StatusOr<std::optional<std::string>> TaskGpusFromEnvironment(
    const EnvironmentCluster& cluster, const SlurmClusterOptions& slurm,
    const EnvironmentLookup& env = ProcessEnvironment);
// The same with --slurm_jobs and --slurm_port_base.
absl::StatusOr<std::optional<std::string>> TaskGpusFromFlagsAndEnvironment(
    const EnvironmentCluster& cluster);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_ENVIRONMENT_CLUSTER_H_
