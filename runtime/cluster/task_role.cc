#include "runtime/cluster/task_role.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

// Position of `index` among the indices present in `job` (0 for the first).
int RankInJob(const ClusterSpec& cluster, absl::string_view job, int index) {
  const std::vector<int> indices = cluster.TaskIndices(job);
  return static_cast<int>(
      std::lower_bound(indices.begin(), indices.end(), index) -
      indices.begin());
}

}  // namespace

int NumTrainingTasks(const ClusterSpec& cluster) {
  return std::max(1,
                  cluster.NumTasks(kChiefJob) + cluster.NumTasks(kWorkerJob));
}

TaskRole ResolveTaskRole(const TfConfig& config) {
  TaskRole role;
  if (config.is_local()) {
    role.is_chief = true;
    role.num_workers = 1;
    role.id_in_cluster = 0;
    return role;
  }
  if (!config.task.has_value()) return role;

  const ClusterSpec& cluster = config.cluster;
  const TaskId& task = *config.task;
  const int num_chiefs = cluster.NumTasks(kChiefJob);
  if (task.type == kChiefJob) {
    role.is_chief = true;
    role.num_workers = num_chiefs + cluster.NumTasks(kWorkerJob);
    role.id_in_cluster = 0;
  } else if (task.type == kWorkerJob) {
    const int rank = RankInJob(cluster, kWorkerJob, task.index);
    role.is_chief = num_chiefs == 0 && rank == 0;
    role.num_workers = num_chiefs + cluster.NumTasks(kWorkerJob);
    role.id_in_cluster = num_chiefs + rank;
  } else if (task.type == kEvaluatorJob) {
    // The evaluator is its own cluster: its own chief, counted alone.
    role.is_chief = true;
    role.num_workers = std::max(1, cluster.NumTasks(kEvaluatorJob));
    role.id_in_cluster = task.index;
  }

  absl::StatusOr<std::string> address =
      cluster.TaskAddress(task.type, task.index);
  if (address.ok()) role.address = *address;
  if (address.ok() && cluster.NumTasks() > 1) {
    const bool has_rpc_layer =
        config.rpc_layer.has_value() && !config.rpc_layer->empty();
    role.master = has_rpc_layer
                      ? absl::StrCat(*config.rpc_layer, "://", *address)
                      : *address;
  }
  return role;
}

}  // namespace distrt
