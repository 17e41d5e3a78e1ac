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

absl::Time Now(const TrainingLoopOptions& options) {
  return options.now ? options.now() : absl::Now();
}

void Log(const TrainingLoopOptions& options, absl::string_view line) {
  if (options.log) options.log(line);
}

// Whether a step runs once this process has run `steps` steps and the
// global step is `global_step` (as far as this worker knows: other workers
// move the global step too).
bool StepRuns(const TrainingLoopOptions& options, int64_t steps,
              int64_t global_step) {
  return steps < options.max_steps &&
         (options.train_steps == 0 || global_step < options.train_steps);
}

// The loop of RunSteps and what it carries from one step to the next.
class StepLoop {
 public:
  // `start`: when training started; `global_step`: the global step then.
  StepLoop(Strategy& strategy, const Model& model, ModelVariables& variables,
           InputPipeline& pipeline, const TrainingLoopOptions& options,
           absl::Time start, int64_t global_step)
      : strategy_(strategy),
        model_(model),
        variables_(variables),
        pipeline_(pipeline),
        options_(options),
        start_(start),
        meter_(options.train_steps, options.log_every, start),
        checkpoints_(options.checkpoint_every_steps, options.checkpoint_every,
                     global_step, start),
        global_step_(global_step) {
    result_.first_global_step = global_step;
    if (options.read_ahead) read_ahead_.emplace(strategy.num_local_replicas());
  }

  // Runs steps until one of the loop's ends; returns without waiting for
  // updates still in flight where a step fails.
  absl::StatusOr<TrainingLoopResult> Run();

 private:
  // Trains on `step`, first taking the step after it from the pipeline
  // where reading ahead; a failure is explained and names the step.
  absl::StatusOr<StepResult> Train(const InputStep& step);
  // Counts the step done and moves on the global step, then reports
  // progress and checkpoints where due.
  absl::Status AfterStep(const StepResult& done, const InputPosition& position);
  absl::Status AdvanceGlobalStep(const StepResult& done);
  absl::Status ReportProgress(absl::Time time);
  absl::Status CheckpointIfDue(absl::Time time);
  // After the last step's update has landed: the result of the loop.
  absl::StatusOr<TrainingLoopResult> Finish();

  Strategy& strategy_;
  const Model& model_;
  ModelVariables& variables_;
  InputPipeline& pipeline_;
  const TrainingLoopOptions& options_;
  const absl::Time start_;
  ProgressMeter meter_;
  CheckpointPolicy checkpoints_;
  std::optional<ReadAhead> read_ahead_;
  // With read-ahead, the step after this one, taken from the pipeline
  // early (its error, too, belongs to that step).
  std::optional<absl::StatusOr<InputStep>> next_;
  int64_t global_step_;
  TrainingLoopResult result_;
};

absl::StatusOr<TrainingLoopResult> StepLoop::Run() {
  while (StepRuns(options_, result_.steps, global_step_)) {
    absl::StatusOr<InputStep> step =
        next_.has_value() ? *std::move(next_) : pipeline_.Next();
    next_.reset();
    if (absl::IsOutOfRange(step.status())) break;  // the end of the data
    RETURN_IF_ERROR(step.status());
    ASSIGN_OR_RETURN(const StepResult done, Train(*step));
    RETURN_IF_ERROR(AfterStep(done, step->position));
  }
  return Finish();
}

absl::StatusOr<StepResult> StepLoop::Train(const InputStep& step) {
  absl::Span<const Batch> next_batches;
  // Not for a step that will not run.
  if (read_ahead_.has_value() &&
      StepRuns(options_, result_.steps + 1, global_step_ + 1)) {
    next_ = pipeline_.Next();
    if (next_->ok()) next_batches = (*next_)->replicas;
  }
  // The global step before this step's increment, which its hash-table
  // pushes carry.
  absl::StatusOr<StepResult> done =
      TrainStep(strategy_, model_, variables_, step.replicas,
                read_ahead_.has_value() ? &*read_ahead_ : nullptr, next_batches,
                global_step_);
  if (done.ok()) return done;
  const absl::Status failed = options_.explain_step_failure
                                  ? options_.explain_step_failure(done.status())
                                  : done.status();
  // Which step: where to look in the data, and what the ps tasks hold
  // (every update of the steps before it; none of this one's when it
  // failed computing, before its updates).
  return absl::Status(
      failed.code(),
      absl::StrCat("the training step after global step ", global_step_,
                   " (this task's step ", result_.steps + 1,
                   ") failed: ", failed.message()));
}

absl::Status StepLoop::AfterStep(const StepResult& done,
                                 const InputPosition& position) {
  ++result_.steps;
  result_.examples += done.examples;
  meter_.AddStep(done.examples, done.loss_sum);
  RETURN_IF_ERROR(AdvanceGlobalStep(done));
  if (options_.on_step) options_.on_step(done, global_step_);
  if (options_.on_input_position) {
    RETURN_IF_ERROR(options_.on_input_position(position, global_step_));
  }
  const absl::Time time = Now(options_);
  RETURN_IF_ERROR(ReportProgress(time));
  return CheckpointIfDue(time);
}

absl::Status StepLoop::AdvanceGlobalStep(const StepResult& done) {
  // The step's increment told what it left; a step without examples
  // made none, so the global step is read (other workers move it).
  if (done.global_step.has_value()) {
    global_step_ = *done.global_step;
    return absl::OkStatus();
  }
  // After the updates in flight, which may hold the step before's
  // increment (else the global step could seem to go back).
  RETURN_IF_ERROR(strategy_.WaitForUpdates());
  ASSIGN_OR_RETURN(global_step_, variables_.ReadGlobalStep(strategy_));
  return absl::OkStatus();
}

absl::Status StepLoop::ReportProgress(absl::Time time) {
  std::optional<std::string> line = meter_.Line(global_step_, time);
  if (!line.has_value()) return absl::OkStatus();
  Log(options_, *line);
  if (!options_.on_progress) return absl::OkStatus();
  return options_.on_progress(global_step_, meter_, time);
}

absl::Status StepLoop::CheckpointIfDue(absl::Time time) {
  if (!options_.save_checkpoint || !checkpoints_.Due(global_step_, time)) {
    return absl::OkStatus();
  }
  // Every update of this worker's in the checkpoint (one may still be
  // in flight: StrategyOptions::push_in_background).
  RETURN_IF_ERROR(strategy_.WaitForUpdates());
  RETURN_IF_ERROR(options_.save_checkpoint(global_step_));
  checkpoints_.Saved(global_step_, time);
  return absl::OkStatus();
}

absl::StatusOr<TrainingLoopResult> StepLoop::Finish() {
  // The last step's update may still be in flight: training ends when it
  // has landed (and a failed one fails the loop).
  RETURN_IF_ERROR(strategy_.WaitForUpdates());
  const absl::Time end = Now(options_);
  result_.global_step = global_step_;
  result_.train_loss = meter_.recent_loss();
  result_.examples_per_sec = meter_.ExamplesPerSecond(end);
  result_.wall_secs = absl::ToDoubleSeconds(end - start_);
  if (read_ahead_.has_value()) {
    result_.steps_read_ahead = read_ahead_->num_taken();
    result_.reads_ahead_dropped = read_ahead_->num_dropped();
  }
  return result_;
}

// RunTrainingLoop's steps; returns without waiting for updates still in
// flight where a step fails.
absl::StatusOr<TrainingLoopResult> RunSteps(
    Strategy& strategy, const Model& model, ModelVariables& variables,
    InputPipeline& pipeline, const TrainingLoopOptions& options) {
  if (options.read_ahead) RETURN_IF_ERROR(CheckReadAhead(strategy));
  const absl::Time start = Now(options);
  ASSIGN_OR_RETURN(const int64_t global_step,
                   variables.ReadGlobalStep(strategy));
  const int64_t examples = pipeline.examples_per_epoch();
  Log(options,
      absl::StrCat("training from global step ", global_step,
                   examples >= 0 ? absl::StrCat(" on ", examples, " examples")
                                 : std::string(" on streamed input")));
  StepLoop loop(strategy, model, variables, pipeline, options, start,
                global_step);
  return loop.Run();
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
