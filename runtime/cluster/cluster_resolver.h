#ifndef DISTRT_RUNTIME_CLUSTER_CLUSTER_RESOLVER_H_
#define DISTRT_RUNTIME_CLUSTER_CLUSTER_RESOLVER_H_

// ClusterResolver: where a program learns its job's cluster and its own
// task (tf.distribute.cluster_resolver.ClusterResolver). The strategy
// factory (distribute/make_strategy.h) takes one:
//
//   TFConfigClusterResolver  the TF_CONFIG environment variable, read as
//                            TensorFlow reads it (tf_config.h)
//   SimpleClusterResolver    a cluster and task given in code
//
// Both give a validated TfConfig; a resolver for another cluster manager
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

class TFConfigClusterResolver : public ClusterResolver {
 public:
  // Reads TF_CONFIG at every Resolve, as TF's resolver reads the
  // environment: unset is local mode (one task, no cluster).
  absl::StatusOr<TfConfig> Resolve() const override;
};

class SimpleClusterResolver : public ClusterResolver {
 public:
  // `task` must be one of `cluster`'s (or "evaluator"), as in TF_CONFIG;
  // checked by Resolve. An empty cluster is local mode.
  SimpleClusterResolver(ClusterSpec cluster, std::optional<TaskId> task,
                        std::optional<std::string> rpc_layer = std::nullopt);

  // The config as given, or INVALID_ARGUMENT with TF_CONFIG's messages
  // prefixed "SimpleClusterResolver: " instead of "TF_CONFIG: ".
  absl::StatusOr<TfConfig> Resolve() const override;

 private:
  TfConfig config_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_CLUSTER_RESOLVER_H_
