#include "client/resolve_command.h"

#include <optional>

#include "runtime/cluster/cluster_spec_json.h"
#include "runtime/cluster/task_role.h"

namespace distrt {
namespace {

template <typename T>
Json OrNull(const std::optional<T>& value) {
  return value.has_value() ? Json(*value) : Json(nullptr);
}

}  // namespace

Json DescribeResolvedConfig(const TfConfig& config) {
  const TaskRole role = ResolveTaskRole(config);
  Json out = Json::object();
  out["mode"] = config.is_local() ? "local" : "distributed";
  out["cluster"] = ClusterSpecToJson(config.cluster);
  out["task_type"] =
      config.task.has_value() ? Json(config.task->type) : Json(nullptr);
  out["task_index"] =
      config.task.has_value() ? Json(config.task->index) : Json(nullptr);
  out["rpc_layer"] = OrNull(config.rpc_layer);
  out["environment"] = OrNull(config.environment);
  out["master"] = role.master;
  out["is_chief"] = role.is_chief;
  out["num_workers"] = OrNull(role.num_workers);
  out["id_in_cluster"] = OrNull(role.id_in_cluster);
  return out;
}

}  // namespace distrt
