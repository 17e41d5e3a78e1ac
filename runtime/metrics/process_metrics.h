#ifndef DISTRT_RUNTIME_METRICS_PROCESS_METRICS_H_
#define DISTRT_RUNTIME_METRICS_PROCESS_METRICS_H_

// The process metric that Prometheus client libraries export by the same
// name, so that the usual queries work on our tasks:
//
//   process_start_time_seconds   when this process started (Unix seconds)
//
// A task restarted by launch --max_restarts or by Kubernetes starts again,
// so `changes(process_start_time_seconds[1h])` counts its restarts and
// `time() - process_start_time_seconds` is its uptime.

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "runtime/metrics/metrics_registry.h"

namespace distrt {

// Registers the process metrics in `registry` (borrowed), with `start` as
// the start time; errors are the registry's (e.g. registered twice).
absl::Status AddProcessMetrics(MetricsRegistry* registry, absl::Time start);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_METRICS_PROCESS_METRICS_H_
