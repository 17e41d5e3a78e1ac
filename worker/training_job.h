#ifndef DISTRT_WORKER_TRAINING_JOB_H_
#define DISTRT_WORKER_TRAINING_JOB_H_

// RunTrainingJob: what a chief or worker task does from start to finish.
//
//   1. Takes its place in the cluster from the ResolvedTask it is given
//      (job/resolved_task.h: its role, input pipeline and strategy
//      kind, decided where the cluster was resolved), reads its share of
//      the training data, builds the model.
//   2. Creates its local devices and the strategy of the task's kind
//      (ParameterServerStrategy when the cluster has ps tasks, ... or what
//      --strategy says).
//   3. The chief creates the variables, restores the latest checkpoint in
//      --checkpoint_dir (so a restarted job resumes), then marks the
//      variables ready; other workers wait for that mark, bounded. The
//      chief then reads --eval_data, so that bad evaluation data stops the
//      job before training.
//   4. Trains: one TrainStep per input step until the global step reaches
//      --train_steps or the data's --epochs are done, printing a progress
//      line every few seconds; the chief checkpoints periodically.
//   5. The chief checkpoints once more, evaluates on --eval_data, writes
//      --metrics_out, waits (bounded) for the other workers to finish and
//      tells the ps tasks to exit.

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "job/resolved_task.h"
#include "runtime/cluster/tf_config.h"
#include "worker/final_metrics.h"
#include "worker/worker_options.h"

namespace distrt {

using LogFn = std::function<void(absl::string_view)>;

// Errors name what failed: bad data (file:line), an unreachable ps task, a
// chief that never marked the variables ready, ... INVALID_ARGUMENT for a
// task that does not train (a ps task, the evaluator).
absl::StatusOr<FinalMetrics> RunTrainingJob(const WorkerOptions& options,
                                            const ResolvedTask& task,
                                            const LogFn& log);

// The same for a cluster given in code: `tf_config` resolved (ResolveTask,
// source kProgram) with options.strategy.
absl::StatusOr<FinalMetrics> RunTrainingJob(const WorkerOptions& options,
                                            const TfConfig& tf_config,
                                            const LogFn& log);

}  // namespace distrt

#endif  // DISTRT_WORKER_TRAINING_JOB_H_
