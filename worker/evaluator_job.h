#ifndef DISTRT_WORKER_EVALUATOR_JOB_H_
#define DISTRT_WORKER_EVALUATOR_JOB_H_

// RunEvaluatorJob: what the evaluator task (TF_CONFIG task type "evaluator")
// does. Like TensorFlow's evaluator it is outside training: it never calls
// the job's ps tasks, it reads the checkpoints they write.
//
//   1. Builds the model the workers build (same flags, same shapes, same
//      variables) and holds its variables in this process, in one in-memory
//      ps task (InMemoryParameterServers), so that loading a checkpoint
//      written by any number of ps tasks is the ps task's own verified,
//      re-partitioning restore (the same shard code). It serves nothing: no
//      server, no listening socket.
//   2. Polls --checkpoint_dir's index. Whenever its latest checkpoint is one
//      not evaluated yet, restores it and evaluates --eval_data; logs the
//      metrics, writes them as eval summaries (<log_dir>/eval, at the
//      checkpoint's step) and as JSON (EvaluatorMetricsPath). Checkpoints
//      committed while another is evaluated are skipped: the evaluator
//      keeps up with the latest, as TensorFlow's does.
//   3. Returns the metrics of the last checkpoint evaluated once that is the
//      one the chief's final-checkpoint marker names (training is over);
//      DEADLINE_EXCEEDED when no new checkpoint comes for
//      --eval_timeout_secs.

#include "absl/status/statusor.h"
#include "runtime/cluster/tf_config.h"
#include "worker/final_metrics.h"
#include "worker/training_job.h"
#include "worker/worker_options.h"

namespace distrt {

// INVALID_ARGUMENT without --checkpoint_dir or --eval_data, or for a
// cluster without ps tasks (nothing would write checkpoints).
absl::StatusOr<FinalMetrics> RunEvaluatorJob(const WorkerOptions& options,
                                             const TfConfig& tf_config,
                                             const LogFn& log);

}  // namespace distrt

#endif  // DISTRT_WORKER_EVALUATOR_JOB_H_
