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

#include <signal.h>

#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "rpc/grpc_logging.h"
#include "rpc/ps_grpc_server.h"
#include "rpc/transport_security_flags.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/environment_cluster.h"
#include "runtime/cluster/rpc_layer.h"
#include "runtime/cluster/tf_config.h"
#include "runtime/metrics/metrics_http_server.h"
#include "runtime/metrics/metrics_listen_host.h"
#include "runtime/metrics/metrics_registry.h"
#include "runtime/metrics/process_metrics.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"
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

constexpr int kExitBadInput = 2;

int Fail(absl::string_view message) {
  std::fprintf(stderr, "ps_server: %s\n", std::string(message).c_str());
  return kExitBadInput;
}

// The ps task this process is, from TF_CONFIG.
absl::StatusOr<TaskId> PsTaskOf(const TfConfig& config) {
  if (config.is_local() || !config.task.has_value()) {
    return absl::InvalidArgumentError(
        "TF_CONFIG must name a ps task of a cluster, e.g. "
        "{\"cluster\": {\"ps\": [\"localhost:2222\"], ...}, \"task\": "
        "{\"type\": \"ps\", \"index\": 0}}");
  }
  if (config.task->type != kPsJob) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG's task is ", config.task->type, " ", config.task->index,
        ", not a ps task; start a worker for it instead"));
  }
  return *config.task;
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
    return Fail(absl::StrCat("unexpected argument \"", args[1],
                             "\" (configuration comes from TF_CONFIG and "
                             "flags)"));
  }
  const int port_flag = absl::GetFlag(FLAGS_port);
  if (port_flag < -1 || port_flag > 65535) {
    return Fail(
        absl::StrCat("--port=", port_flag, " is not a port (0 to 65535)"));
  }
  if (absl::GetFlag(FLAGS_stop_grace_secs) < 0) {
    return Fail("--stop_grace_secs must not be negative");
  }
  const int max_message_mb = absl::GetFlag(FLAGS_max_message_mb);
  if (max_message_mb < 1 || max_message_mb > 2047) {
    return Fail(absl::StrCat("--max_message_mb=", max_message_mb,
                             " is not in 1..2047 (gRPC's limit is 2 GiB)"));
  }
  const int metrics_port = absl::GetFlag(FLAGS_metrics_port);
  if (metrics_port < -1 || metrics_port > 65535) {
    return Fail(absl::StrCat("--metrics_port=", metrics_port,
                             " is not a port (0 to 65535, or -1 for none)"));
  }
  const int64_t max_memory_mb = absl::GetFlag(FLAGS_max_memory_mb);
  if (max_memory_mb < 1 || max_memory_mb > (int64_t{1} << 30)) {
    return Fail(
        absl::StrCat("--max_memory_mb=", max_memory_mb, " is not in 1..2^30"));
  }

  absl::StatusOr<EnvironmentCluster> resolved =
      ResolveClusterFromFlagsAndEnvironment();
  if (!resolved.ok()) return Fail(resolved.status().message());
  const TfConfig* config = &resolved->config;
  absl::StatusOr<TaskId> task = PsTaskOf(*config);
  if (!task.ok()) return Fail(task.status().message());
  const std::string cluster_address =
      *config->cluster.TaskAddress(task->type, task->index);
  // Valid: ClusterSpec checked every address when TF_CONFIG was parsed.
  const HostPort cluster_host_port = *ParseTaskAddress(cluster_address);
  const int port = port_flag >= 0 ? port_flag : cluster_host_port.port;
  const std::string bind_host = absl::GetFlag(FLAGS_bind_host).empty()
                                    ? cluster_host_port.host
                                    : absl::GetFlag(FLAGS_bind_host);
  absl::StatusOr<std::shared_ptr<const rpc::TransportSecurity>> security =
      rpc::TransportSecurityFromFlags();
  if (!security.ok()) return Fail(security.status().message());
  const absl::StatusOr<std::string> metrics_host = MetricsListenHost(
      absl::GetFlag(FLAGS_metrics_host), bind_host, (*security)->uses_tls());
  if (!metrics_host.ok()) return Fail(metrics_host.status().message());

  // Signals are taken synchronously below; block them before gRPC starts its
  // threads so that none of those threads receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  rpc::PsGrpcServer::Options options;
  options.listen_address = absl::StrCat(bind_host, ":", port);
  options.security = *security;
  options.restore_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  options.num_ps_tasks = config->cluster.NumTasks(kPsJob);
  MetricsRegistry metrics;
  const std::string metrics_file = absl::GetFlag(FLAGS_metrics_file);
  if (!metrics_file.empty()) {
    // Refused now rather than found unwritable when the job is over.
    if (absl::Status s = CheckCanCreateFile(metrics_file); !s.ok()) {
      return Fail(absl::StrCat("--metrics_file: ", s.message()));
    }
  }
  if (metrics_port >= 0 || !metrics_file.empty()) {
    options.metrics = &metrics;
    if (absl::Status s = AddProcessMetrics(&metrics, start_time); !s.ok()) {
      return Fail(s.message());
    }
  }
  options.task_index = task->index;
  options.log = [](absl::string_view line) {
    std::fprintf(stderr, "ps_server: %s\n", std::string(line).c_str());
  };
  options.stop_grace = absl::Seconds(absl::GetFlag(FLAGS_stop_grace_secs));
  options.max_message_bytes = int64_t{max_message_mb} << 20;
  options.max_variable_bytes = max_memory_mb << 20;
  absl::StatusOr<RpcLayer> rpc_layer = ParseRpcLayer(config->rpc_layer);
  if (!rpc_layer.ok()) return Fail(rpc_layer.status().message());
  options.data_plane = *rpc_layer == RpcLayer::kGrpcTcp;
  options.data_plane_port = absl::GetFlag(FLAGS_data_plane_port);
  if (options.data_plane_port < 0 || options.data_plane_port > 65535) {
    return Fail(absl::StrCat("--data_plane_port=", options.data_plane_port,
                             " is not a port (0 lets the OS pick one)"));
  }
  absl::StatusOr<std::unique_ptr<rpc::PsGrpcServer>> server =
      rpc::PsGrpcServer::Start(options);
  if (!server.ok()) return Fail(server.status().message());

  std::printf(
      "ps_server: ps task %d serving on %s (cluster address %s), "
      "incarnation %016llx, %s\n",
      task->index, absl::StrCat(bind_host, ":", (*server)->port()).c_str(),
      cluster_address.c_str(),
      static_cast<unsigned long long>((*server)->incarnation()),
      (*security)->Description().c_str());
  if ((*server)->data_plane_port() != 0) {
    std::printf(
        "ps_server: tensors also over the TCP data plane on %s "
        "(rpc_layer \"grpc+tcp\"), %s\n",
        absl::StrCat(bind_host, ":", (*server)->data_plane_port()).c_str(),
        (*security)->Description().c_str());
  }
  if (const std::optional<RestoreInfo>& restored = (*server)->restored()) {
    std::printf(
        "ps_server: took back this task's shard of %s (step %lld): %lld "
        "variable parts, %lld hash tables (%lld rows)\n",
        restored->checkpoint_dir.c_str(),
        static_cast<long long>(restored->step),
        static_cast<long long>(restored->variables_restored),
        static_cast<long long>(restored->hash_tables_restored),
        static_cast<long long>(restored->hash_table_rows_restored));
  }
  std::unique_ptr<MetricsHttpServer> metrics_server;
  if (metrics_port >= 0) {
    MetricsHttpServer::Options metrics_options;
    metrics_options.bind_host = *metrics_host;
    metrics_options.port = metrics_port;
    metrics_options.registry = &metrics;
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started =
        MetricsHttpServer::Start(metrics_options);
    if (!started.ok()) {
      (*server)->Stop();
      return Fail(absl::StrCat("--metrics_port: ", started.status().message()));
    }
    metrics_server = *std::move(started);
    std::printf("ps_server: metrics at %s\n", metrics_server->url().c_str());
  }
  std::fflush(stdout);

  // Wait for a stop signal or a Shutdown RPC, whichever comes first.
  const timespec poll_interval = {0, 100 * 1000 * 1000};
  std::string reason;
  while (!(*server)->WaitForShutdownRequest(absl::ZeroDuration())) {
    const int signal = sigtimedwait(&stop_signals, nullptr, &poll_interval);
    if (signal > 0) {
      reason = signal == SIGTERM ? "SIGTERM" : "SIGINT";
      break;
    }
  }
  if (reason.empty()) reason = (*server)->shutdown_reason();
  std::printf("ps_server: stopping (%s)\n", reason.c_str());
  std::fflush(stdout);
  (*server)->Stop();
  if (!metrics_file.empty()) {
    // After Stop, so that every request served is counted.
    const std::string exposition = metrics.Exposition();
    if (absl::Status s = WriteFileAtomically(metrics_file, {exposition});
        !s.ok()) {
      std::fprintf(stderr, "ps_server: --metrics_file: %s\n",
                   std::string(s.message()).c_str());
      return 1;
    }
  }
  std::printf("ps_server: stopped\n");
  return 0;
}

}  // namespace
}  // namespace distrt

int main(int argc, char** argv) {
  distrt::KeepLargeAllocationsInHeap();
  distrt::ConfigureMutexDeadlockDetection();
  return distrt::Main(argc, argv);
}
