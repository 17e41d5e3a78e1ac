#ifndef DISTRT_RUNTIME_CLUSTER_CLUSTER_SOURCE_H_
#define DISTRT_RUNTIME_CLUSTER_CLUSTER_SOURCE_H_

// ClusterSource: where a task's cluster came from. Compared as a value, never
// by its name; the name is what the binaries print (distctl resolve's
// "source").

#include "absl/strings/string_view.h"

namespace distrt {

enum class ClusterSource {
  // The TF_CONFIG environment variable (Kubeflow, the local launcher, by
  // hand).
  kTfConfig,
  // Slurm's step variables, under srun (SlurmClusterResolver).
  kSlurm,
  // Neither: local mode, one task and no cluster.
  kLocal,
  // A TfConfig or ClusterResolver that a program passed in (MakeStrategy,
  // RunTrainingJob from a TfConfig).
  kProgram,
};

// "TF_CONFIG", "Slurm", "local", "program".
absl::string_view ClusterSourceName(ClusterSource source);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_CLUSTER_SOURCE_H_
