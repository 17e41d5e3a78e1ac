#include "client/cluster_source.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/cluster/cluster_spec_json.h"
#include "runtime/cluster/environment_cluster.h"
#include "runtime/cluster/tf_config.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<ClusterSpec> LoadClusterForClient(
    const std::string& cluster_spec_path) {
  ClusterSpec cluster;
  std::string source;
  if (cluster_spec_path.empty()) {
    ASSIGN_OR_RETURN(EnvironmentCluster resolved,
                     ResolveClusterFromFlagsAndEnvironment());
    source = resolved.source == ClusterSource::kLocal
                 ? "the environment (no TF_CONFIG, no Slurm step)"
                 : std::string(ClusterSourceName(resolved.source));
    cluster = resolved.config.cluster;
  } else {
    source = cluster_spec_path;
    std::ifstream file(cluster_spec_path);
    if (!file) {
      return absl::NotFoundError(
          absl::StrCat(cluster_spec_path, ": cannot read the file"));
    }
    std::stringstream text;
    text << file.rdbuf();
    absl::StatusOr<ClusterSpec> parsed = ParseClusterSpecText(text.str());
    if (!parsed.ok()) {
      return absl::Status(
          parsed.status().code(),
          absl::StrCat(cluster_spec_path, ": ", parsed.status().message()));
    }
    cluster = *std::move(parsed);
  }
  if (cluster.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(source,
                     " describes no cluster (give --cluster_spec=FILE or set "
                     "TF_CONFIG)"));
  }
  return cluster;
}

}  // namespace distrt
