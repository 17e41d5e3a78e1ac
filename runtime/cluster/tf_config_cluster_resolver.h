#ifndef DISTRT_RUNTIME_CLUSTER_TF_CONFIG_CLUSTER_RESOLVER_H_
#define DISTRT_RUNTIME_CLUSTER_TF_CONFIG_CLUSTER_RESOLVER_H_

// TFConfigClusterResolver (tf.distribute.cluster_resolver.
// TFConfigClusterResolver): the cluster and task of the TF_CONFIG
// environment variable, read as TensorFlow reads it (tf_config.h).

#include "absl/status/statusor.h"
#include "runtime/cluster/cluster_resolver.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {

class TFConfigClusterResolver : public ClusterResolver {
 public:
  // Reads TF_CONFIG at every Resolve, as TF's resolver reads the
  // environment: unset is local mode (one task, no cluster).
  absl::StatusOr<TfConfig> Resolve() const override;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_TF_CONFIG_CLUSTER_RESOLVER_H_
