#include "runtime/metrics/process_metrics.h"

#include "absl/status/statusor.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::Status AddProcessMetrics(MetricsRegistry* registry, absl::Time start) {
  ASSIGN_OR_RETURN(
      Gauge * start_time,
      registry->AddGauge(
          "process_start_time_seconds",
          "Start time of the process since the Unix epoch, in seconds."));
  (start_time)
      ->WithLabels({})
      ->Set(absl::ToDoubleSeconds(start - absl::UnixEpoch()));
  return absl::OkStatus();
}

}  // namespace distrt
