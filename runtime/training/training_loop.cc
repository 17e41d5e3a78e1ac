#include "runtime/training/training_loop.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/training/checkpoint_policy.h"
#include "runtime/training/read_ahead.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// RunTrainingLoop's steps; returns without waiting for updates still in
// flight where a step fails.
absl::StatusOr<TrainingLoopResult> RunSteps(
    Strategy& strategy, const Model& model, ModelVariables& variables,
    InputPipeline& pipeline, const TrainingLoopOptions& options) {
  const auto now = [&options] {
    return options.now ? options.now() : absl::Now();
  };
  const auto log = [&options](absl::string_view line) {
    if (options.log) options.log(line);
  };
  if (options.read_ahead) RETURN_IF_ERROR(CheckReadAhead(strategy));
  const absl::Time start = now();
  ProgressMeter meter(options.train_steps, options.log_every, start);
  ASSIGN_OR_RETURN(int64_t global_step, variables.ReadGlobalStep(strategy));
  TrainingLoopResult result;
  result.first_global_step = global_step;
  log(absl::StrCat("training from global step ", global_step, " on ",
                   pipeline.examples_per_epoch(), " examples"));
  CheckpointPolicy checkpoints(options.checkpoint_every_steps,
                               options.checkpoint_every, global_step, start);
  std::optional<ReadAhead> read_ahead;
  if (options.read_ahead) read_ahead.emplace(strategy.num_local_replicas());
  // With read-ahead, the step after this one, taken from the pipeline
  // early (its error, too, belongs to that step).
  std::optional<absl::StatusOr<InputStep>> next;
  while (result.steps < options.max_steps &&
         (options.train_steps == 0 || global_step < options.train_steps)) {
    absl::StatusOr<InputStep> step =
        next.has_value() ? *std::move(next) : pipeline.Next();
    next.reset();
    if (absl::IsOutOfRange(step.status())) break;  // the end of the data
    RETURN_IF_ERROR(step.status());
    absl::Span<const Batch> next_batches;
    // Not for a step that will not run (as far as this worker knows: other
    // workers move the global step too).
    if (read_ahead.has_value() && result.steps + 1 < options.max_steps &&
        (options.train_steps == 0 || global_step + 1 < options.train_steps)) {
      next = pipeline.Next();
      if (next->ok()) next_batches = (*next)->replicas;
    }
    absl::StatusOr<StepResult> done =
        read_ahead.has_value()
            ? TrainStep(strategy, model, variables, step->replicas,
                        &*read_ahead, next_batches)
            : TrainStep(strategy, model, variables, step->replicas);
    if (!done.ok()) {
      const absl::Status failed =
          options.explain_step_failure
              ? options.explain_step_failure(done.status())
              : done.status();
      // Which step: where to look in the data, and what the ps tasks hold
      // (every update of the steps before it; none of this one's when it
      // failed computing, before its updates).
      return absl::Status(
          failed.code(),
          absl::StrCat("the training step after global step ", global_step,
                       " (this task's step ", result.steps + 1,
                       ") failed: ", failed.message()));
    }
    ++result.steps;
    result.examples += done->examples;
    meter.AddStep(done->examples, done->loss_sum);
    // The step's increment told what it left; a step without examples
    // made none, so the global step is read (other workers move it).
    if (done->global_step.has_value()) {
      global_step = *done->global_step;
    } else {
      // After the updates in flight, which may hold the step before's
      // increment (else the global step could seem to go back).
      RETURN_IF_ERROR(strategy.WaitForUpdates());
      ASSIGN_OR_RETURN(global_step, variables.ReadGlobalStep(strategy));
    }
    if (options.on_step) options.on_step(*done, global_step);
    const absl::Time time = now();
    if (std::optional<std::string> line = meter.Line(global_step, time)) {
      log(*line);
      if (options.on_progress) {
        RETURN_IF_ERROR(options.on_progress(global_step, meter, time));
      }
    }
    if (options.save_checkpoint && checkpoints.Due(global_step, time)) {
      // Every update of this worker's in the checkpoint (one may still be
      // in flight: StrategyOptions::push_in_background).
      RETURN_IF_ERROR(strategy.WaitForUpdates());
      RETURN_IF_ERROR(options.save_checkpoint(global_step));
      checkpoints.Saved(global_step, time);
    }
  }
  // The last step's update may still be in flight: training ends when it
  // has landed (and a failed one fails the loop).
  RETURN_IF_ERROR(strategy.WaitForUpdates());
  const absl::Time end = now();
  result.global_step = global_step;
  result.train_loss = meter.recent_loss();
  result.examples_per_sec = meter.ExamplesPerSecond(end);
  result.wall_secs = absl::ToDoubleSeconds(end - start);
  if (read_ahead.has_value()) {
    result.steps_read_ahead = read_ahead->num_taken();
    result.reads_ahead_dropped = read_ahead->num_dropped();
  }
  return result;
}

}  // namespace

absl::StatusOr<TrainingLoopResult> RunTrainingLoop(
    Strategy& strategy, const Model& model, ModelVariables& variables,
    InputPipeline& pipeline, const TrainingLoopOptions& options) {
  absl::StatusOr<TrainingLoopResult> result =
      RunSteps(strategy, model, variables, pipeline, options);
  if (result.ok()) return result;
  // A step failed with an update of the step before still in flight: it
  // lands (or fails) before the caller may tear down the variables it
  // updates. Its error goes with the step's.
  const absl::Status in_flight = strategy.WaitForUpdates();
  if (in_flight.ok()) return result;
  return absl::Status(
      result.status().code(),
      absl::StrCat(result.status().message(), "; and ", in_flight.message()));
}

}  // namespace distrt
