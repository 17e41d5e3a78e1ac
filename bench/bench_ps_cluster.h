#ifndef DISTRT_BENCH_BENCH_PS_CLUSTER_H_
#define DISTRT_BENCH_BENCH_PS_CLUSTER_H_

// BenchPsCluster: ps_server processes on 127.0.0.1 (tests/util/ps_processes.h)
// and a PsClient of them that has seen every task answer: what the dense and
// sparse families measure. Destroying it drops the client, then kills the
// processes.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/ps_client.h"
#include "tests/util/ps_processes.h"

namespace distrt::bench {

struct BenchPsCluster {
  std::vector<testing::PsProcess> tasks;
  // Declared after `tasks`, so that they are destroyed first. `client`
  // sends tensors over gRPC, `data_plane_client` over the tasks' TCP data
  // planes (rpc_layer "grpc+tcp", which every task is started with).
  std::unique_ptr<PsClient> client;
  std::unique_ptr<PsClient> data_plane_client;
};

// Starts ps tasks 0..num_ps-1 with `extra_flags` (ps_server flags) and two
// clients of them with `options` (the second with data_plane set), and waits
// up to 30 s for every task to answer each. The binary is ps_server/ps_server
// under the working directory (the runfiles tree under `bazel run`; the bench
// target lists //ps_server in its data): FAILED_PRECONDITION saying so when it
// is not there. Otherwise the errors of starting the processes or the client.
absl::StatusOr<BenchPsCluster> StartBenchPsCluster(
    int num_ps, const std::vector<std::string>& extra_flags,
    PsClient::Options options);

}  // namespace distrt::bench

#endif  // DISTRT_BENCH_BENCH_PS_CLUSTER_H_
