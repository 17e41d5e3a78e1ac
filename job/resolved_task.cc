#include "job/resolved_task.h"

#include <utility>

#include "runtime/cluster/cluster_spec.h"
#include "runtime/util/status_macros.h"

namespace distrt {

bool ResolvedTask::is_training_task() const {
  if (is_local() || !config.task.has_value()) return true;
  return config.task->type == kChiefJob || config.task->type == kWorkerJob;
}

bool ResolvedTask::is_ps() const {
  return !is_local() && config.task.has_value() && config.task->type == kPsJob;
}

bool ResolvedTask::is_evaluator() const {
  return !is_local() && config.task.has_value() &&
         config.task->type == kEvaluatorJob;
}

std::string ResolvedTask::type() const {
  return config.task.has_value() ? config.task->type : std::string();
}

int ResolvedTask::index() const {
  return config.task.has_value() ? config.task->index : 0;
}

int ResolvedTask::num_training_tasks() const {
  return NumTrainingTasks(config.cluster);
}

int ResolvedTask::num_ps_tasks() const {
  return config.cluster.NumTasks(kPsJob);
}

absl::StatusOr<ResolvedTask> ResolveTask(TfConfig config, ClusterSource source,
                                         StrategyKind requested) {
  ResolvedTask task;
  task.config = std::move(config);
  task.source = source;
  task.role = ResolveTaskRole(task.config);
  if (task.is_training_task()) {
    ASSIGN_OR_RETURN(task.strategy, ChooseStrategyKind(task.config, requested));
  }
  return task;
}

}  // namespace distrt
