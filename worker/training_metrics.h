#ifndef DISTRT_WORKER_TRAINING_METRICS_H_
#define DISTRT_WORKER_TRAINING_METRICS_H_

// What a chief or worker exposes to Prometheus (worker --metrics_port):
//
//   distrt_training_steps_total       steps this task ran
//   distrt_training_examples_total    examples it trained on
//   distrt_global_step                the job's global step, as last read
//   distrt_ps_task_restarts_total     ps tasks the chief saw restart
//   distrt_input_records_total        records its input pipeline read
//   distrt_input_records_skipped_total  of them, bad ones it skipped
//                                     (--input_errors=skip)
//
// A step rate is rate(distrt_training_steps_total[1m]) in PromQL. All
// methods are cheap (atomics) and thread-safe; a null TrainingMetrics*
// means "no metrics" to the callers that hold one.

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "runtime/metrics/metrics_registry.h"

namespace distrt {

class TrainingMetrics {
 public:
  // Registers the metrics in `registry` (borrowed; must outlive this).
  static absl::StatusOr<std::unique_ptr<TrainingMetrics>> Create(
      MetricsRegistry* registry);

  void AddStep(int64_t examples, int64_t global_step);
  void AddPsRestart();
  // The input pipeline's counts so far (InputPipeline::records_read and
  // records_skipped), from one thread.
  void SetInputRecords(int64_t read, int64_t skipped);

 private:
  TrainingMetrics() = default;

  CounterCell* steps_ = nullptr;
  CounterCell* examples_ = nullptr;
  GaugeCell* global_step_ = nullptr;
  CounterCell* ps_restarts_ = nullptr;
  CounterCell* records_ = nullptr;
  CounterCell* records_skipped_ = nullptr;
  // What SetInputRecords last set, to add the difference.
  int64_t last_read_ = 0;
  int64_t last_skipped_ = 0;
};

}  // namespace distrt

#endif  // DISTRT_WORKER_TRAINING_METRICS_H_
