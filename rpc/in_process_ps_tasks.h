#ifndef DISTRT_RPC_IN_PROCESS_PS_TASKS_H_
#define DISTRT_RPC_IN_PROCESS_PS_TASKS_H_

// For tests of what talks to parameter servers (strategies, the training
// step, PsClient): ps tasks served from the test's own process over
// loopback gRPC, on ports the OS picks, and the requests they counted.
// Integration tests that need real ps_server processes use
// tests/util/ps_processes.h instead.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/ps_service.pb.h"
#include "rpc/ps_grpc_server.h"

namespace distrt::rpc {

struct InProcessPsTasks {
  // Task i serves at addresses[i] ("127.0.0.1:<port>"). Destroying a server
  // stops it (in-flight requests get a second).
  std::vector<std::unique_ptr<PsGrpcServer>> servers;
  std::vector<std::string> addresses;
};

// Starts `num_tasks` ps tasks, numbered 0 up. The first start's error when
// one cannot listen.
absl::StatusOr<InProcessPsTasks> StartInProcessPsTasks(int num_tasks);

// Requests of `method` (e.g. "PullDense") each task served, from its
// GetStatus (PsClient::Stats), task 0 first.
std::vector<int64_t> RequestsPerTask(
    absl::Span<const ps::GetStatusResponse> stats, absl::string_view method);

}  // namespace distrt::rpc

#endif  // DISTRT_RPC_IN_PROCESS_PS_TASKS_H_
