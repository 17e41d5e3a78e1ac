// ps_server: one parameter-server task of a cluster.
//
// Reads TF_CONFIG (its task must be of type "ps"), serves the
// ParameterServer service on its address from the cluster spec (and only
// there), and prints one start-up line:
//   ps_server: ps task 0 serving on ps0.example:2222 (cluster address
//   ps0.example:2222), incarnation 8c1f0e6b2a7d4e13, mutual TLS, cluster
//   token
// then, when --checkpoint_dir had a checkpoint, one line saying what it took
// back from it. It exits 0 after SIGTERM/SIGINT or a Shutdown RPC
// (in-flight requests finish first), and 2 with one line on stderr on bad
// input: TF_CONFIG, a task that is not a ps task, flags, TLS or token
// files, a damaged checkpoint, or a port it cannot listen on. (An unknown
// flag, or a value Abseil cannot parse as the flag's type, is refused by
// Abseil's own parser before that: status 1, with its "ERROR: " line.)

#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "ps_server/ps_server_run.h"
#include "rpc/grpc_logging.h"
#include "rpc/transport_security_flags.h"
#include "runtime/cluster/environment_cluster.h"
#include "runtime/util/malloc_tuning.h"
#include "runtime/util/mutex_checks.h"

ABSL_FLAG(int, port, -1,
          "Port to listen on instead of the one in this task's cluster "
          "address; 0 lets the OS pick a free port (printed at start-up).");
ABSL_FLAG(std::string, bind_host, "",
          "Address to listen on. Default: the host of this task's address "
          "in TF_CONFIG, and only that (a name is resolved, and must be an "
          "address of this machine). \"0.0.0.0\" listens on every "
          "interface, as TensorFlow's servers do.");
ABSL_FLAG(int, data_plane_port, 0,
          "with TF_CONFIG \"rpc_layer\": \"grpc+tcp\", the port of the TCP "
          "data plane for tensors, on the gRPC address's host (0: one the "
          "OS picks; workers learn it from GetStatus)");
ABSL_FLAG(int, max_message_mb, 256,
          "Largest request or response message in MiB; larger requests are "
          "refused with RESOURCE_EXHAUSTED (clients split big tensors into "
          "several requests below this).");
ABSL_FLAG(int64_t, max_memory_mb, 64 << 10,
          "Memory for variables, hash-table rows and their optimizer slots, "
          "in MiB; creating a variable or hash-table rows beyond it is "
          "refused with RESOURCE_EXHAUSTED.");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "The job's checkpoint directory (the chief's --checkpoint_dir). "
          "When it has a committed checkpoint, this task takes back its "
          "shard of the latest one before serving, so that a ps task "
          "restarted after a failure (by launch --max_restarts or "
          "Kubernetes) comes back holding what it held then.");
ABSL_FLAG(int, metrics_port, -1,
          "Serve Prometheus metrics at http://HOST:PORT/metrics, on the host "
          "this task listens on, or on loopback in a job with TLS "
          "(--metrics_host); 0: a free port, printed at start-up; -1: off. "
          "See docs/observability.md.");
ABSL_FLAG(std::string, metrics_host, "",
          "Where --metrics_port listens instead (\"0.0.0.0\": everywhere). "
          "In a job with TLS only loopback is accepted: the endpoint is "
          "plain HTTP without authentication (docs/security.md).");
ABSL_FLAG(std::string, metrics_file, "",
          "Write the metrics (what /metrics serves) to this file when the "
          "task stops: what a batch job without a Prometheus server scraping "
          "it did (requests, bytes, rows held). Works with or without "
          "--metrics_port. A task that is killed writes nothing, and a "
          "restarted one counts from its own start.");
ABSL_FLAG(int, stop_grace_secs, 5,
          "On shutdown, how long in-flight requests may take to finish.");

namespace distrt {
namespace {

PsServerOptions OptionsFromFlags() {
  PsServerOptions o;
  o.port = absl::GetFlag(FLAGS_port);
  o.bind_host = absl::GetFlag(FLAGS_bind_host);
  o.data_plane_port = absl::GetFlag(FLAGS_data_plane_port);
  o.max_message_mb = absl::GetFlag(FLAGS_max_message_mb);
  o.max_memory_mb = absl::GetFlag(FLAGS_max_memory_mb);
  o.checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  o.metrics_port = absl::GetFlag(FLAGS_metrics_port);
  o.metrics_host = absl::GetFlag(FLAGS_metrics_host);
  o.metrics_file = absl::GetFlag(FLAGS_metrics_file);
  o.stop_grace_secs = absl::GetFlag(FLAGS_stop_grace_secs);
  o.security = rpc::TransportSecurityOptionsFromFlags();
  o.slurm_jobs = absl::GetFlag(FLAGS_slurm_jobs);
  o.slurm_port_base = absl::GetFlag(FLAGS_slurm_port_base);
  return o;
}

int Main(int argc, char** argv) {
  const absl::Time start_time = absl::Now();
  absl::SetProgramUsageMessage(
      "ps_server [--port=N] [--bind_host=HOST] [--max_message_mb=N] "
      "[--max_memory_mb=N] [--checkpoint_dir=DIR] [--metrics_file=PATH] "
      "[--tls_cert=PEM "
      "--tls_key=PEM --tls_ca=PEM] [--cluster_token_file=FILE]\n"
      "Serves the parameter-server task named by TF_CONFIG.");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  rpc::QuietGrpcLoggingUnlessRequested();
  if (args.size() > 1) {
    std::fprintf(stderr,
                 "ps_server: unexpected argument \"%s\" (configuration comes "
                 "from TF_CONFIG and flags)\n",
                 args[1]);
    return 2;
  }
  PsServerOptions options = OptionsFromFlags();
  options.start_time = start_time;
  return RunPsServer(options);
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) {
  distrt::KeepLargeAllocationsInHeap();
  distrt::ConfigureMutexDeadlockDetection();
  return distrt::Main(argc, argv);
}
