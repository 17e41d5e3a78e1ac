#ifndef DISTRT_RUNTIME_CLUSTER_CLUSTER_SPEC_JSON_H_
#define DISTRT_RUNTIME_CLUSTER_CLUSTER_SPEC_JSON_H_

// Reading and writing a ClusterSpec as the JSON of TF_CONFIG's "cluster":
//   {"chief": ["host:2222"], "worker": ["w0:2222", "w1:2222"],
//    "ps": {"0": "ps0:2222", "3": "ps3:2222"}}
// Lists are dense jobs; objects keyed by index are sparse jobs.

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/json_util.h"

namespace distrt {

// Errors are INVALID_ARGUMENT naming the job, task and problem.
absl::StatusOr<ClusterSpec> ClusterSpecFromJson(const Json& cluster);

// Parses a file's text: either a cluster object as above, or a whole
// TF_CONFIG object whose "cluster" member is used.
absl::StatusOr<ClusterSpec> ParseClusterSpecText(absl::string_view text);

// The inverse of ClusterSpecFromJson: jobs in their order, dense jobs as
// lists, sparse jobs as objects keyed by the index as a string.
Json ClusterSpecToJson(const ClusterSpec& spec);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_CLUSTER_CLUSTER_SPEC_JSON_H_
