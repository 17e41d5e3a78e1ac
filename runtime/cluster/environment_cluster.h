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
// The flags are defined here so that every binary takes the same ones; only
// a main() reads them (the *FromFlags functions), and passes the values on.

#include <optional>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/cluster/cluster_source.h"
#include "runtime/cluster/slurm_cluster_resolver.h"
#include "runtime/cluster/tf_config.h"

// --slurm_jobs and --slurm_port_base, for a main() to read and pass on
// (MakeSlurmClusterOptions).
ABSL_DECLARE_FLAG(std::string, slurm_jobs);
ABSL_DECLARE_FLAG(int, slurm_port_base);

namespace distrt {

struct EnvironmentCluster {
  TfConfig config;
  // kTfConfig, kSlurm or kLocal.
  ClusterSource source = ClusterSource::kLocal;
};

// The values of --slurm_jobs ("ps:2,worker:3"; empty: every task is a
// worker) and --slurm_port_base. INVALID_ARGUMENT starting "Slurm: " and
// naming the flag.
absl::StatusOr<SlurmClusterOptions> MakeSlurmClusterOptions(
    absl::string_view jobs, int port_base);
// The same, of the flags themselves; for a main().
absl::StatusOr<SlurmClusterOptions> SlurmClusterOptionsFromFlags();

// The rules above; errors name their source ("TF_CONFIG: ...",
// "Slurm: ...").
absl::StatusOr<EnvironmentCluster> ResolveClusterFromEnvironment(
    const SlurmClusterOptions& slurm,
    const EnvironmentLookup& env = ProcessEnvironment);

// Both of the above, for a main(): the flags, then the environment.
absl::StatusOr<EnvironmentCluster> ResolveClusterFromFlagsAndEnvironment();

// Under Slurm (`cluster.source` kSlurm), this task's GPUs for
// CUDA_VISIBLE_DEVICES, as TF's resolver sets them
// (SlurmClusterResolver::TaskGpus); absent elsewhere or when the step names
// no GPUs. Asked only by what uses GPUs (the worker, distctl resolve), so
// that a GPU shortfall on a host does not stop a ps task or a client.
absl::StatusOr<std::optional<std::string>> TaskGpusFromEnvironment(
    const EnvironmentCluster& cluster, const SlurmClusterOptions& slurm,
    const EnvironmentLookup& env = ProcessEnvironment);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_ENVIRONMENT_CLUSTER_H_
