#ifndef DISTRT_JOB_RESOLVED_TASK_H_
#define DISTRT_JOB_RESOLVED_TASK_H_

// ResolvedTask: what this process is within its job, decided once where the
// cluster is resolved and handed down as one value, so that no layer works
// it out again from the raw config:
//
//   resolved by                   consumed by
//   worker/worker_run.cc          RunTrainingJob -> MakeStrategy, and the
//                                 choice of training job or evaluator
//   ps_server/ps_server_run.cc    the ps task it serves
//   MakeStrategy(resolver, ...)   MakeStrategy(task, ...)
//
// It holds:
//
//   config    the cluster, this task (absent in local mode) and rpc_layer
//   source    where the cluster came from (TF_CONFIG, Slurm, local, a
//             program)
//   role      TF's view of the task: chief or not, num_workers,
//             id_in_cluster, its address and master (runtime/cluster/
//             task_role.h); in local mode the task is the chief
//   strategy  for a training task (a chief, a worker, or local mode) the
//             strategy kind the request means for this cluster (kAuto
//             resolved: parameter servers with ps tasks, else multi-worker
//             mirrored with several training tasks, else mirrored); absent
//             for ps and evaluator tasks, which train nothing
//
// A plain value: copy it freely; thread-compatible.

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "job/strategy_kind.h"
#include "runtime/cluster/cluster_source.h"
#include "runtime/cluster/task_role.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {

struct ResolvedTask {
  TfConfig config;
  ClusterSource source = ClusterSource::kLocal;
  TaskRole role;
  std::optional<StrategyKind> strategy;

  // Local mode: no cluster, one task that trains alone.
  bool is_local() const { return config.is_local(); }
  // A chief or worker task, or local mode: the tasks that train.
  bool is_training_task() const;
  bool is_ps() const;
  bool is_evaluator() const;
  // The chief of training: the one training task that creates and restores
  // the variables, checkpoints, evaluates at the end and writes the final
  // metrics (TaskRole::is_chief, without the evaluator, which TF makes a
  // chief of its own cluster).
  bool is_training_chief() const { return is_training_task() && role.is_chief; }
  // The task's type ("chief", "worker", "ps", "evaluator") and index; ""
  // and 0 without a task (local mode).
  std::string type() const;
  int index() const;

  // The job's chief and worker tasks, at least 1: its input pipelines.
  int num_training_tasks() const;
  int num_ps_tasks() const;
  bool has_ps() const { return num_ps_tasks() > 0; }
};

// Resolves `config` (valid, as ParseTfConfig or a ClusterResolver gives it)
// from `source` into a ResolvedTask. For a training task it chooses the
// strategy kind `requested` means (ChooseStrategyKind): INVALID_ARGUMENT,
// saying why and naming --strategy, when the cluster cannot run it. Other
// tasks are resolved whatever `requested` is.
absl::StatusOr<ResolvedTask> ResolveTask(
    TfConfig config, ClusterSource source,
    StrategyKind requested = StrategyKind::kAuto);

}  // namespace distrt

#endif  // DISTRT_JOB_RESOLVED_TASK_H_
