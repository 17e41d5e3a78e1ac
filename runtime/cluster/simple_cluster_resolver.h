#ifndef DISTRT_RUNTIME_CLUSTER_SIMPLE_CLUSTER_RESOLVER_H_
#define DISTRT_RUNTIME_CLUSTER_SIMPLE_CLUSTER_RESOLVER_H_

// SimpleClusterResolver (tf.distribute.cluster_resolver.
// SimpleClusterResolver): a cluster and task given in code.

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/cluster/cluster_resolver.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {

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

#endif  // DISTRT_RUNTIME_CLUSTER_SIMPLE_CLUSTER_RESOLVER_H_
