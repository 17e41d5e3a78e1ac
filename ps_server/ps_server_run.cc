#include "ps_server/ps_server_run.h"

#include <signal.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "job/resolved_task.h"
#include "rpc/ps_grpc_server.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/environment_cluster.h"
#include "runtime/cluster/rpc_layer.h"
#include "runtime/cluster/tf_config.h"
#include "runtime/metrics/metrics_endpoint.h"
#include "runtime/metrics/metrics_listen_host.h"
#include "runtime/metrics/metrics_registry.h"
#include "runtime/metrics/process_metrics.h"
#include "runtime/util/atomic_file_writer.h"
#include "runtime/util/file_system.h"

namespace distrt {
namespace {

constexpr int kExitBadInput = 2;

int Fail(absl::string_view message) {
  std::fprintf(stderr, "ps_server: %s\n", std::string(message).c_str());
  return kExitBadInput;
}

// The options a flag can get wrong, each naming its flag.
absl::Status CheckOptions(const PsServerOptions& o) {
  if (o.port < -1 || o.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--port=", o.port, " is not a port (0 to 65535)"));
  }
  if (o.stop_grace_secs < 0) {
    return absl::InvalidArgumentError("--stop_grace_secs must not be negative");
  }
  if (o.max_message_mb < 1 || o.max_message_mb > 2047) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_message_mb=", o.max_message_mb,
                     " is not in 1..2047 (gRPC's limit is 2 GiB)"));
  }
  if (o.metrics_port < -1 || o.metrics_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_port=", o.metrics_port,
                     " is not a port (0 to 65535, or -1 for none)"));
  }
  if (o.max_memory_mb < 1 || o.max_memory_mb > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_memory_mb=", o.max_memory_mb, " is not in 1..2^30"));
  }
  return absl::OkStatus();
}

// The ps task this process is.
absl::Status CheckPsTask(const ResolvedTask& task) {
  if (task.is_local() || !task.config.task.has_value()) {
    return absl::InvalidArgumentError(
        "TF_CONFIG must name a ps task of a cluster, e.g. "
        "{\"cluster\": {\"ps\": [\"localhost:2222\"], ...}, \"task\": "
        "{\"type\": \"ps\", \"index\": 0}}");
  }
  if (!task.is_ps()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG's task is ", task.type(), " ", task.index(),
                     ", not a ps task; start a worker for it instead"));
  }
  return absl::OkStatus();
}

// Blocks until a stop signal or a Shutdown RPC, whichever comes first, and
// says which.
std::string WaitForStop(rpc::PsGrpcServer& server,
                        const sigset_t& stop_signals) {
  const timespec poll_interval = {0, 100 * 1000 * 1000};
  while (!server.WaitForShutdownRequest(absl::ZeroDuration())) {
    const int signal = sigtimedwait(&stop_signals, nullptr, &poll_interval);
    if (signal > 0) return signal == SIGTERM ? "SIGTERM" : "SIGINT";
  }
  return server.shutdown_reason();
}

void PrintStarted(const rpc::PsGrpcServer& server, const ResolvedTask& task,
                  const std::string& bind_host,
                  const rpc::TransportSecurity& security) {
  std::printf(
      "ps_server: ps task %d serving on %s (cluster address %s), "
      "incarnation %016llx, %s\n",
      task.index(), absl::StrCat(bind_host, ":", server.port()).c_str(),
      task.role.address.c_str(),
      static_cast<unsigned long long>(server.incarnation()),
      security.Description().c_str());
  if (server.data_plane_port() != 0) {
    std::printf(
        "ps_server: tensors also over the TCP data plane on %s "
        "(rpc_layer \"grpc+tcp\"), %s\n",
        absl::StrCat(bind_host, ":", server.data_plane_port()).c_str(),
        security.Description().c_str());
  }
  if (const std::optional<RestoreInfo>& restored = server.restored()) {
    std::printf(
        "ps_server: took back this task's shard of %s (step %lld): %lld "
        "variable parts, %lld hash tables (%lld rows)\n",
        restored->checkpoint_dir.c_str(),
        static_cast<long long>(restored->step),
        static_cast<long long>(restored->variables_restored),
        static_cast<long long>(restored->hash_tables_restored),
        static_cast<long long>(restored->hash_table_rows_restored));
  }
}

// The cluster's ps task this process is, from the environment (TF_CONFIG,
// or Slurm's variables).
absl::StatusOr<ResolvedTask> ResolvePsTask(const PsServerOptions& o) {
  absl::StatusOr<SlurmClusterOptions> slurm =
      MakeSlurmClusterOptions(o.slurm_jobs, o.slurm_port_base);
  if (!slurm.ok()) return slurm.status();
  absl::StatusOr<EnvironmentCluster> cluster =
      ResolveClusterFromEnvironment(*slurm);
  if (!cluster.ok()) return cluster.status();
  absl::StatusOr<ResolvedTask> task =
      ResolveTask(std::move(cluster->config), cluster->source);
  if (!task.ok()) return task.status();
  if (absl::Status s = CheckPsTask(*task); !s.ok()) return s;
  return task;
}

// Where --metrics_port is served, its host refused now, before the task
// serves, rather than once it does. The registry is set when it starts.
absl::StatusOr<MetricsEndpointOptions> CheckedMetricsEndpoint(
    const PsServerOptions& o, const std::string& bind_host, bool job_uses_tls) {
  MetricsEndpointOptions metrics_endpoint;
  metrics_endpoint.port = o.metrics_port;
  metrics_endpoint.requested_host = o.metrics_host;
  metrics_endpoint.task_host = bind_host;
  metrics_endpoint.job_uses_tls = job_uses_tls;
  if (absl::Status s = MetricsListenHost(metrics_endpoint.requested_host,
                                         metrics_endpoint.task_host,
                                         metrics_endpoint.job_uses_tls)
                           .status();
      !s.ok()) {
    return s;
  }
  return metrics_endpoint;
}

// Signals are taken synchronously (WaitForStop); this blocks them, and must
// run before gRPC starts its threads so that none of those threads receives
// them.
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// The server's options from the flags and the task. With --metrics_port or
// --metrics_file the server counts into `metrics`, which also gets the
// process's own metrics.
absl::StatusOr<rpc::PsGrpcServer::Options> MakeServerOptions(
    const PsServerOptions& o, const ResolvedTask& task,
    std::string listen_address,
    std::shared_ptr<const rpc::TransportSecurity> security,
    MetricsRegistry* metrics) {
  rpc::PsGrpcServer::Options options;
  options.listen_address = std::move(listen_address);
  options.security = std::move(security);
  options.restore_dir = o.checkpoint_dir;
  options.num_ps_tasks = task.num_ps_tasks();
  if (!o.metrics_file.empty()) {
    // Refused now rather than found unwritable when the job is over.
    if (absl::Status s = CheckCanCreateFile(o.metrics_file); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("--metrics_file: ", s.message()));
    }
  }
  if (o.metrics_port >= 0 || !o.metrics_file.empty()) {
    options.metrics = metrics;
    if (absl::Status s = AddProcessMetrics(metrics, o.start_time); !s.ok()) {
      return s;
    }
  }
  options.task_index = task.index();
  options.log = [](absl::string_view line) {
    std::fprintf(stderr, "ps_server: %s\n", std::string(line).c_str());
  };
  options.stop_grace = absl::Seconds(o.stop_grace_secs);
  options.max_message_bytes = int64_t{o.max_message_mb} << 20;
  options.max_variable_bytes = o.max_memory_mb << 20;
  absl::StatusOr<RpcLayer> rpc_layer = ParseRpcLayer(task.config.rpc_layer);
  if (!rpc_layer.ok()) return rpc_layer.status();
  options.data_plane = *rpc_layer == RpcLayer::kGrpcTcp;
  options.data_plane_port = o.data_plane_port;
  if (options.data_plane_port < 0 || options.data_plane_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--data_plane_port=", options.data_plane_port,
                     " is not a port (0 lets the OS pick one)"));
  }
  return options;
}

}  // namespace

int RunPsServer(const PsServerOptions& o) {
  if (absl::Status s = CheckOptions(o); !s.ok()) return Fail(s.message());
  absl::StatusOr<ResolvedTask> task = ResolvePsTask(o);
  if (!task.ok()) return Fail(task.status().message());
  // Valid: ClusterSpec checked every address when the cluster was resolved,
  // and a ps task is always one of the cluster's.
  const HostPort cluster_host_port = *ParseTaskAddress(task->role.address);
  const int port = o.port >= 0 ? o.port : cluster_host_port.port;
  const std::string bind_host =
      o.bind_host.empty() ? cluster_host_port.host : o.bind_host;
  absl::StatusOr<std::shared_ptr<const rpc::TransportSecurity>> security =
      rpc::TransportSecurity::Load(o.security);
  if (!security.ok()) return Fail(security.status().message());
  absl::StatusOr<MetricsEndpointOptions> metrics_endpoint =
      CheckedMetricsEndpoint(o, bind_host, (*security)->uses_tls());
  if (!metrics_endpoint.ok()) return Fail(metrics_endpoint.status().message());

  const sigset_t stop_signals = BlockStopSignals();
  MetricsRegistry metrics;
  absl::StatusOr<rpc::PsGrpcServer::Options> options = MakeServerOptions(
      o, *task, absl::StrCat(bind_host, ":", port), *security, &metrics);
  if (!options.ok()) return Fail(options.status().message());
  absl::StatusOr<std::unique_ptr<rpc::PsGrpcServer>> server =
      rpc::PsGrpcServer::Start(*options);
  if (!server.ok()) return Fail(server.status().message());
  PrintStarted(**server, *task, bind_host, **security);

  std::unique_ptr<MetricsHttpServer> metrics_server;
  if (o.metrics_port >= 0) {
    metrics_endpoint->registry = &metrics;
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started =
        StartMetricsEndpoint(*metrics_endpoint);
    if (!started.ok()) {
      (*server)->Stop();
      return Fail(started.status().message());
    }
    metrics_server = *std::move(started);
    std::printf("ps_server: metrics at %s\n", metrics_server->url().c_str());
  }
  std::fflush(stdout);

  const std::string reason = WaitForStop(**server, stop_signals);
  std::printf("ps_server: stopping (%s)\n", reason.c_str());
  std::fflush(stdout);
  (*server)->Stop();
  if (!o.metrics_file.empty()) {
    // After Stop, so that every request served is counted.
    const std::string exposition = metrics.Exposition();
    if (absl::Status s = WriteFileAtomically(o.metrics_file, {exposition});
        !s.ok()) {
      std::fprintf(stderr, "ps_server: --metrics_file: %s\n",
                   std::string(s.message()).c_str());
      return 1;
    }
  }
  std::printf("ps_server: stopped\n");
  return 0;
}

}  // namespace distrt
