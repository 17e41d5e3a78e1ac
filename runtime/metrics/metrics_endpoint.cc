#include "runtime/metrics/metrics_endpoint.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/metrics/metrics_listen_host.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> StartMetricsEndpoint(
    const MetricsEndpointOptions& options) {
  MetricsHttpServer::Options server;
  server.registry = options.registry;
  server.port = options.port;
  ASSIGN_OR_RETURN(server.bind_host,
                   MetricsListenHost(options.requested_host, options.task_host,
                                     options.job_uses_tls));
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started =
      MetricsHttpServer::Start(server);
  if (!started.ok()) {
    return absl::Status(
        started.status().code(),
        absl::StrCat("--metrics_port: ", started.status().message()));
  }
  return started;
}

}  // namespace distrt
