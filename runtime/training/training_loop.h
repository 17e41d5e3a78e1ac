#ifndef DISTRT_RUNTIME_TRAINING_TRAINING_LOOP_H_
#define DISTRT_RUNTIME_TRAINING_TRAINING_LOOP_H_

// RunTrainingLoop: the loop every training task runs (TF's
// MonitoredTrainingSession / Keras fit loop, in the terms of this library):
// take the next step of the distributed dataset, run TrainStep over the
// strategy's replicas, read the global step, and every so often print a
// progress line and have the chief checkpoint. It stops at the first of: the
// global step reaching `train_steps` (counted over every worker, so each
// stops when the job has done its steps), the end of the data, or
// `max_steps` steps of this process.
//
// What only some jobs do (summaries, noticing restarted ps tasks, metrics
// export, naming a lost worker) comes in as callbacks, so the `worker`
// binary and a program of one's own run the same loop, and a test runs it
// with in-process parameter servers.

#include <cstdint>
#include <functional>
#include <limits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "runtime/distribute/strategy.h"
#include "runtime/input/input_pipeline.h"
#include "runtime/input/input_position.h"
#include "runtime/models/model.h"
#include "runtime/training/model_variables.h"
#include "runtime/training/progress_meter.h"
#include "runtime/training/train_step.h"

namespace distrt {

struct TrainingLoopOptions {
  // Stop once the global step reaches this; 0: no such bound.
  int64_t train_steps = 0;
  // The most steps this process runs, e.g. what every worker's data
  // allows under multi-worker mirrored, where all must run alike.
  int64_t max_steps = std::numeric_limits<int64_t>::max();
  // Read each step's values during the step before (read_ahead.h): one
  // round of requests to the ps tasks per step instead of two, at the price
  // of a step perhaps computing with values that lack this worker's
  // previous step. Under ParameterServerStrategy only (INVALID_ARGUMENT
  // elsewhere, before any step). The loop then takes each input step from
  // the pipeline one step early.
  bool read_ahead = false;
  // How often a progress line is logged (and on_progress called).
  absl::Duration log_every = absl::Seconds(10);

  // Periodic checkpoints (CheckpointPolicy): every so many global steps,
  // every so often, or both; none when save_checkpoint is unset (only the
  // chief sets it). The final checkpoint is the caller's.
  int64_t checkpoint_every_steps = 0;
  absl::Duration checkpoint_every = absl::ZeroDuration();
  std::function<absl::Status(int64_t global_step)> save_checkpoint;

  // Progress lines ("step 120/1000: 5400 examples/s, ..."); none if unset.
  std::function<void(absl::string_view)> log;
  // With each progress line, e.g. to write summaries; an error ends the
  // loop with it.
  std::function<absl::Status(int64_t global_step, const ProgressMeter& meter,
                             absl::Time now)>
      on_progress;
  // After each step, with its result and the global step after it.
  std::function<void(const StepResult& step, int64_t global_step)> on_step;
  // After each step, with where the input stood after it (a file
  // pipeline's resume point; InputStep::position) and the global step
  // after it, e.g. to log it for a restarted worker (InputPositionLog); an
  // error ends the loop with it.
  std::function<absl::Status(const InputPosition& after, int64_t global_step)>
      on_input_position;
  // What a failed step returns instead of its error, e.g. one that names
  // the lost worker (WorkerGroup::ExplainFailure); unset: the error.
  std::function<absl::Status(const absl::Status&)> explain_step_failure;

  // The clock, for tests; unset: absl::Now.
  std::function<absl::Time()> now;
};

struct TrainingLoopResult {
  int64_t steps = 0;              // this process's steps
  int64_t examples = 0;           // over this process's replicas
  int64_t first_global_step = 0;  // when the loop began
  int64_t global_step = 0;        // when it ended
  // The mean loss of the last progress window: the "current" loss.
  double train_loss = 0;
  double examples_per_sec = 0;
  double wall_secs = 0;
  // With read_ahead, counted per replica (a step of n replicas counts n):
  // the replicas' steps that computed with values read during the step
  // before, and the reads dropped (another batch came, or it failed).
  int64_t steps_read_ahead = 0;
  int64_t reads_ahead_dropped = 0;
};

// Runs the loop over `pipeline`'s steps. The variables must have been
// created (ModelVariables::Create) under `strategy`. Errors: the first of a
// step (explained), the pipeline, a checkpoint or on_progress.
absl::StatusOr<TrainingLoopResult> RunTrainingLoop(
    Strategy& strategy, const Model& model, ModelVariables& variables,
    InputPipeline& pipeline, const TrainingLoopOptions& options);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_TRAINING_TRAINING_LOOP_H_
