#include "runtime/cluster/cluster_source.h"

namespace distrt {

absl::string_view ClusterSourceName(ClusterSource source) {
  switch (source) {
    case ClusterSource::kTfConfig:
      return "TF_CONFIG";
    case ClusterSource::kSlurm:
      return "Slurm";
    case ClusterSource::kLocal:
      return "local";
    case ClusterSource::kProgram:
      return "program";
  }
  return "?";
}

}  // namespace distrt
