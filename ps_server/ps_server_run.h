#ifndef DISTRT_PS_SERVER_PS_SERVER_RUN_H_
#define DISTRT_PS_SERVER_PS_SERVER_RUN_H_

// RunPsServer: what the ps_server binary does once its flags are read
// (ps_server_main.cc has the flags; this library reads none).
//
//   1. Checks the options; resolves the cluster from TF_CONFIG or Slurm's
//      step (runtime/cluster/environment_cluster.h) into a ResolvedTask,
//      which must be a ps task; loads TLS and the cluster token.
//   2. Serves the ParameterServer service on the task's address (or
//      bind_host / port), prints its start-up lines on stdout, and starts
//      the metrics endpoint when metrics_port is set.
//   3. Waits for SIGTERM, SIGINT or a Shutdown RPC; stops (in-flight
//      requests finish first) and writes metrics_file.
//
// Call it from the main thread before any other thread starts: it blocks
// SIGTERM and SIGINT in the calling thread so that gRPC's threads inherit
// the mask and the signals come to it.

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "rpc/transport_security.h"

namespace distrt {

struct PsServerOptions {
  // Port to listen on instead of the one in the task's cluster address;
  // 0: one the OS picks; -1: the cluster address's.
  int port = -1;
  // Address to listen on; empty: the host of the task's cluster address.
  std::string bind_host;
  // rpc_layer "grpc+tcp": the TCP data plane's port (0: one the OS picks).
  int data_plane_port = 0;
  // Largest request or response, MiB (1..2047).
  int max_message_mb = 256;
  // Memory for variables, hash-table rows and slots, MiB (1..2^30).
  int64_t max_memory_mb = int64_t{64} << 10;
  // The job's checkpoint directory: the task takes back its shard of the
  // latest checkpoint before serving. Empty: none.
  std::string checkpoint_dir;
  // The metrics endpoint: -1 off, 0 a free port; its host (empty: the
  // task's, or loopback under TLS).
  int metrics_port = -1;
  std::string metrics_host;
  // Where the metrics go when the task stops; empty: nowhere.
  std::string metrics_file;
  // How long in-flight requests may take to finish on shutdown (>= 0).
  int stop_grace_secs = 5;
  // TLS and the cluster token (--tls_*, --cluster_token_file), loaded by
  // RunPsServer.
  rpc::TransportSecurityOptions security;
  // Under Slurm without TF_CONFIG: --slurm_jobs and --slurm_port_base.
  std::string slurm_jobs;
  int slurm_port_base = 8888;
  // When the process started, for the process metrics.
  absl::Time start_time = absl::Now();
};

// The exit status: 0 after a stop signal or Shutdown RPC, 2 with one line on
// stderr ("ps_server: ...") for bad input (options, the cluster, a task that
// is not a ps task, TLS or token files, a damaged checkpoint, a port it
// cannot listen on), 1 when metrics_file cannot be written at the end.
int RunPsServer(const PsServerOptions& options);

}  // namespace distrt

#endif  // DISTRT_PS_SERVER_PS_SERVER_RUN_H_
