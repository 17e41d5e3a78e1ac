#ifndef DISTRT_RUNTIME_METRICS_METRICS_ENDPOINT_H_
#define DISTRT_RUNTIME_METRICS_METRICS_ENDPOINT_H_

// A task's metrics endpoint: the MetricsHttpServer that the worker's and the
// ps_server's --metrics_port and --metrics_host start, on the host
// MetricsListenHost picks (metrics_listen_host.h). One start for every
// binary, so that they listen, and fail, alike.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/metrics/metrics_http_server.h"
#include "runtime/metrics/metrics_registry.h"

namespace distrt {

struct MetricsEndpointOptions {
  // Borrowed; must outlive the server. Required.
  MetricsRegistry* registry = nullptr;
  // --metrics_port: 0 lets the OS pick a free port (MetricsHttpServer::port
  // reports it).
  int port = 0;
  // --metrics_host; empty: `task_host`, or loopback in a job with TLS.
  std::string requested_host;
  // The host of the task's own address (an IPv6 literal may keep its
  // brackets); loopback for a task without one.
  std::string task_host = "127.0.0.1";
  bool job_uses_tls = false;
};

// Starts serving `registry` at http://HOST:PORT/metrics. Errors:
// MetricsListenHost's INVALID_ARGUMENT naming --metrics_host as it is; the
// server's own (a port in use, an address not of this machine) prefixed
// "--metrics_port: ", with its code.
absl::StatusOr<std::unique_ptr<MetricsHttpServer>> StartMetricsEndpoint(
    const MetricsEndpointOptions& options);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_METRICS_METRICS_ENDPOINT_H_
