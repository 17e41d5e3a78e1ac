#include "job/strategy_kind.h"

#include "absl/strings/str_cat.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/task_role.h"

namespace distrt {

absl::string_view StrategyKindName(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::kAuto:
      return "auto";
    case StrategyKind::kOneDevice:
      return "one_device";
    case StrategyKind::kMirrored:
      return "mirrored";
    case StrategyKind::kCentralStorage:
      return "central_storage";
    case StrategyKind::kParameterServer:
      return "parameter_server";
    case StrategyKind::kMultiWorkerMirrored:
      return "multi_worker_mirrored";
  }
  return "?";
}

absl::StatusOr<StrategyKind> ParseStrategyKind(absl::string_view name) {
  for (StrategyKind kind :
       {StrategyKind::kAuto, StrategyKind::kOneDevice, StrategyKind::kMirrored,
        StrategyKind::kCentralStorage, StrategyKind::kParameterServer,
        StrategyKind::kMultiWorkerMirrored}) {
    if (name == StrategyKindName(kind)) return kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown strategy \"", name,
                   "\"; known: auto, one_device, mirrored, central_storage, "
                   "parameter_server, multi_worker_mirrored"));
}

absl::StatusOr<StrategyKind> ChooseStrategyKind(const TfConfig& config,
                                                StrategyKind requested) {
  if (!config.is_local() && config.task.has_value() &&
      config.task->type != kChiefJob && config.task->type != kWorkerJob) {
    return absl::InvalidArgumentError(
        absl::StrCat("the task is ", config.task->type, " ", config.task->index,
                     "; training runs on chief and worker tasks (ps tasks run "
                     "ps_server)"));
  }
  const bool has_ps = config.cluster.NumTasks(kPsJob) > 0;
  const int training_tasks = NumTrainingTasks(config.cluster);
  StrategyKind kind = requested;
  if (kind == StrategyKind::kAuto) {
    kind = has_ps               ? StrategyKind::kParameterServer
           : training_tasks > 1 ? StrategyKind::kMultiWorkerMirrored
                                : StrategyKind::kMirrored;
  }
  if (kind == StrategyKind::kParameterServer && !has_ps && training_tasks > 1) {
    // Alone, a worker falls back to local variables, as TF does; several
    // would each train their own.
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy=parameter_server without ps tasks trains in one process; "
        "this cluster has ",
        training_tasks,
        " training tasks and no ps tasks: add ps tasks to TF_CONFIG's "
        "cluster, or use --strategy=multi_worker_mirrored"));
  }
  if (has_ps && kind != StrategyKind::kParameterServer &&
      kind != StrategyKind::kMultiWorkerMirrored) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy=", StrategyKindName(kind),
        " keeps the variables in this process; this cluster has ps tasks, "
        "which would wait forever: remove them, or use "
        "--strategy=parameter_server"));
  }
  if (kind == StrategyKind::kMultiWorkerMirrored && has_ps) {
    return absl::InvalidArgumentError(
        "--strategy=multi_worker_mirrored keeps the variables on the workers; "
        "this cluster has ps tasks, which would wait forever: remove them, or "
        "use --strategy=parameter_server");
  }
  if (kind != StrategyKind::kParameterServer &&
      kind != StrategyKind::kMultiWorkerMirrored && training_tasks > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy=", StrategyKindName(kind), " trains within one process; ",
        "this cluster has ", training_tasks,
        " training tasks: use --strategy=multi_worker_mirrored or parameter "
        "servers (or one worker)"));
  }
  return kind;
}

}  // namespace distrt
