#ifndef DISTRT_RUNTIME_METRICS_METRICS_LISTEN_HOST_H_
#define DISTRT_RUNTIME_METRICS_METRICS_LISTEN_HOST_H_

// Where a task's metrics endpoint (--metrics_port) listens. It is plain
// HTTP without authentication, and a ps task's metrics name its variables
// and count its requests, so in a job with TLS (--secure) it listens on
// loopback only: a scraper on the same host (a sidecar, a node agent)
// reads it, nobody across the network does. Without TLS it listens on the
// task's own host, as the job's other ports do.

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distrt {

// `requested`: --metrics_host ("" for the default). `task_host`: the host
// of the task's address (an IPv6 literal may keep its brackets). Under
// `job_uses_tls`, a host other than loopback's is refused, naming the flag.
absl::StatusOr<std::string> MetricsListenHost(absl::string_view requested,
                                              absl::string_view task_host,
                                              bool job_uses_tls);

// Whether `host` names loopback: "localhost", 127.0.0.0/8, "::1".
bool IsLoopbackHost(absl::string_view host);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_METRICS_METRICS_LISTEN_HOST_H_
