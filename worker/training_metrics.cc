#include "worker/training_metrics.h"

#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<TrainingMetrics>> TrainingMetrics::Create(
    MetricsRegistry* registry) {
  auto metrics = std::unique_ptr<TrainingMetrics>(new TrainingMetrics());
  ASSIGN_OR_RETURN(Counter * steps,
                   registry->AddCounter("distrt_training_steps_total",
                                        "Training steps this task ran."));
  ASSIGN_OR_RETURN(Counter * examples,
                   registry->AddCounter("distrt_training_examples_total",
                                        "Examples this task trained on."));
  ASSIGN_OR_RETURN(
      Gauge * global_step,
      registry->AddGauge("distrt_global_step",
                         "The job's global step, as this task last read it."));
  ASSIGN_OR_RETURN(
      Counter * restarts,
      registry->AddCounter(
          "distrt_ps_task_restarts_total",
          "ps tasks the chief saw come back with a new incarnation."));
  ASSIGN_OR_RETURN(Counter * records,
                   registry->AddCounter("distrt_input_records_total",
                                        "Records this task's input read."));
  ASSIGN_OR_RETURN(
      Counter * skipped,
      registry->AddCounter(
          "distrt_input_records_skipped_total",
          "Bad records this task's input skipped (--input_errors=skip)."));
  metrics->records_ = records->WithLabels({});
  metrics->records_skipped_ = skipped->WithLabels({});
  metrics->steps_ = steps->WithLabels({});
  metrics->examples_ = examples->WithLabels({});
  metrics->global_step_ = global_step->WithLabels({});
  metrics->ps_restarts_ = restarts->WithLabels({});
  return metrics;
}

void TrainingMetrics::AddStep(int64_t examples, int64_t global_step) {
  steps_->Increment();
  examples_->Increment(static_cast<double>(examples));
  global_step_->Set(static_cast<double>(global_step));
}

void TrainingMetrics::AddPsRestart() { ps_restarts_->Increment(); }

void TrainingMetrics::SetInputRecords(int64_t read, int64_t skipped) {
  records_->Increment(static_cast<double>(read - last_read_));
  records_skipped_->Increment(static_cast<double>(skipped - last_skipped_));
  last_read_ = read;
  last_skipped_ = skipped;
}

}  // namespace distrt
