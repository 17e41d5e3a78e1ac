#include "runtime/cluster/cluster_resolver.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "runtime/cluster/simple_cluster_resolver.h"
#include "runtime/cluster/tf_config_cluster_resolver.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<ClusterSpec> ClusterResolver::cluster_spec() const {
  ASSIGN_OR_RETURN(TfConfig config, Resolve());
  return config.cluster;
}

absl::StatusOr<std::optional<TaskId>> ClusterResolver::task() const {
  ASSIGN_OR_RETURN(TfConfig config, Resolve());
  return config.task;
}

absl::StatusOr<TaskRole> ClusterResolver::task_role() const {
  ASSIGN_OR_RETURN(TfConfig config, Resolve());
  return ResolveTaskRole(config);
}

absl::StatusOr<TfConfig> TFConfigClusterResolver::Resolve() const {
  return TfConfigFromEnvironment();
}

SimpleClusterResolver::SimpleClusterResolver(
    ClusterSpec cluster, std::optional<TaskId> task,
    std::optional<std::string> rpc_layer) {
  config_.cluster = std::move(cluster);
  config_.task = std::move(task);
  config_.rpc_layer = std::move(rpc_layer);
}

absl::StatusOr<TfConfig> SimpleClusterResolver::Resolve() const {
  absl::Status valid = ValidateTfConfig(config_);
  if (valid.ok()) return config_;
  absl::string_view message = valid.message();
  absl::ConsumePrefix(&message, "TF_CONFIG: ");
  return absl::Status(valid.code(),
                      absl::StrCat("SimpleClusterResolver: ", message));
}

}  // namespace distrt
