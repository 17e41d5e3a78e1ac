#ifndef DISTRT_CLIENT_CLUSTER_SOURCE_H_
#define DISTRT_CLIENT_CLUSTER_SOURCE_H_

// Where a client finds the cluster it talks to: a cluster-spec file given on
// the command line (the "cluster" part of TF_CONFIG, or a whole TF_CONFIG),
// or else the TF_CONFIG environment variable.

#include <string>

#include "absl/status/statusor.h"
#include "runtime/cluster/cluster_spec.h"

namespace distrt {

// `cluster_spec_path` empty: TF_CONFIG. Errors name the file or TF_CONFIG.
// FAILED_PRECONDITION when the cluster has no tasks at all.
absl::StatusOr<ClusterSpec> LoadClusterForClient(
    const std::string& cluster_spec_path);

}  // namespace distrt

#endif  // DISTRT_CLIENT_CLUSTER_SOURCE_H_
