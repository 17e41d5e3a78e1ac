#ifndef DISTRT_RUNTIME_CLUSTER_CLUSTER_RESOLVER_H_
#define DISTRT_RUNTIME_CLUSTER_CLUSTER_RESOLVER_H_

// ClusterResolver: where a program learns its job's cluster and its own
// task (tf.distribute.cluster_resolver.ClusterResolver). The strategy
// factory (distribute/make_strategy.h) takes one:
//
//   TFConfigClusterResolver  the TF_CONFIG environment variable, read as
//                            TensorFlow reads it (tf_config_cluster_resolver.h)
//   SimpleClusterResolver    a cluster and task given in code
//                            (simple_cluster_resolver.h)
//   SlurmClusterResolver     an srun step (slurm_cluster_resolver.h)
//
// Each gives a validated TfConfig; a resolver for another cluster manager
// implements Resolve().

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/task_role.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {

class ClusterResolver {
 public:
  virtual ~ClusterResolver() = default;

  // The cluster, this task and the rpc layer. INVALID_ARGUMENT naming what
  // is wrong for a cluster or task that TensorFlow would refuse.
  virtual absl::StatusOr<TfConfig> Resolve() const = 0;

  // TF's cluster_spec(), task_type / task_id and master(), from Resolve().
  absl::StatusOr<ClusterSpec> cluster_spec() const;
  // Absent without a task (local mode, or a client of the cluster).
  absl::StatusOr<std::optional<TaskId>> task() const;
  // What the task is within the job (chief, its rank, its address).
  absl::StatusOr<TaskRole> task_role() const;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_CLUSTER_RESOLVER_H_
