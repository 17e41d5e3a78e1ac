#include "runtime/metrics/process_metrics.h"

#include "absl/status/statusor.h"

namespace distrt {

absl::Status AddProcessMetrics(MetricsRegistry* registry, absl::Time start) {
  absl::StatusOr<Gauge*> start_time = registry->AddGauge(
      "process_start_time_seconds",
      "Start time of the process since the Unix epoch, in seconds.");
  if (!start_time.ok()) return start_time.status();
  (*start_time)
      ->WithLabels({})
      ->Set(absl::ToDoubleSeconds(start - absl::UnixEpoch()));
  return absl::OkStatus();
}

}  // namespace distrt
