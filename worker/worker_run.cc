#include "worker/worker_run.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "job/resolved_task.h"
#include "runtime/cluster/cluster_source.h"
#include "runtime/cluster/cluster_spec.h"
#include "runtime/cluster/environment_cluster.h"
#include "runtime/metrics/metrics_endpoint.h"
#include "runtime/metrics/metrics_http_server.h"
#include "runtime/metrics/metrics_registry.h"
#include "runtime/metrics/process_metrics.h"
#include "runtime/util/file_system.h"
#include "runtime/util/status_macros.h"
#include "worker/evaluator_job.h"
#include "worker/final_metrics.h"
#include "worker/training_job.h"
#include "worker/training_metrics.h"

namespace distrt {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;

void Log(absl::string_view line) {
  std::fprintf(stdout, "%.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(stdout);
}

int Fail(absl::string_view message, int exit_code = kExitBadInput) {
  std::fprintf(stderr, "worker: %s\n", std::string(message).c_str());
  return exit_code;
}

// The cluster from the environment, and this task in it. Under Slurm, also
// the task's GPUs in CUDA_VISIBLE_DEVICES, as TF's SlurmClusterResolver
// does (auto_set_gpu), before any CUDA call. Every error is bad input.
absl::StatusOr<ResolvedTask> ResolveThisTask(const WorkerRunOptions& options) {
  ASSIGN_OR_RETURN(
      SlurmClusterOptions slurm,
      MakeSlurmClusterOptions(options.slurm_jobs, options.slurm_port_base));
  ASSIGN_OR_RETURN(EnvironmentCluster cluster,
                   ResolveClusterFromEnvironment(slurm));
  ASSIGN_OR_RETURN(std::optional<std::string> task_gpus,
                   TaskGpusFromEnvironment(cluster, slurm));
  if (task_gpus.has_value()) {
    setenv("CUDA_VISIBLE_DEVICES", task_gpus->c_str(), 1);
  }
  if (cluster.source == ClusterSource::kSlurm) {
    std::fprintf(stderr, "worker: cluster from Slurm's step: task %s:%d\n",
                 cluster.config.task->type.c_str(), cluster.config.task->index);
  }
  absl::StatusOr<ResolvedTask> task = ResolveTask(
      std::move(cluster.config), cluster.source, options.job.strategy);
  if (!task.ok()) {
    // Worded as the training job words its errors ("INVALID_ARGUMENT: ..."):
    // a strategy the cluster cannot run was one of them before it was
    // decided here.
    return absl::InvalidArgumentError(task.status().ToString());
  }
  return task;
}

// The host of the task's own address; loopback without one (local mode, an
// evaluator outside the cluster).
std::string TaskHost(const ResolvedTask& task) {
  absl::StatusOr<HostPort> host = ParseTaskAddress(task.role.address);
  return task.role.address.empty() || !host.ok() ? std::string("127.0.0.1")
                                                 : host->host;
}

}  // namespace

int RunWorker(const WorkerRunOptions& run) {
  WorkerOptions options = run.job;
  if (absl::Status s = ValidateWorkerOptions(options); !s.ok()) {
    return Fail(s.message());
  }
  absl::StatusOr<std::shared_ptr<const rpc::TransportSecurity>> security =
      rpc::TransportSecurity::Load(run.security);
  if (!security.ok()) return Fail(security.status().message());
  options.security = *std::move(security);
  const absl::StatusOr<ResolvedTask> task = ResolveThisTask(run);
  if (!task.ok()) return Fail(task.status().message());

  const bool evaluator = task->is_evaluator();
  const bool chief = task->is_training_chief();
  if (!options.metrics_out.empty() && (chief || evaluator)) {
    const std::string path = evaluator
                                 ? EvaluatorMetricsPath(options.metrics_out)
                                 : options.metrics_out;
    if (absl::Status s = CheckCanCreateFile(path); !s.ok()) {
      return Fail(absl::StrCat("--metrics_out: ", s.message()));
    }
  }
  // Metrics: served from here until the task ends.
  MetricsRegistry registry;
  std::unique_ptr<TrainingMetrics> training_metrics;
  std::unique_ptr<MetricsHttpServer> metrics_server;
  if (run.metrics_port >= 0) {
    absl::StatusOr<std::unique_ptr<TrainingMetrics>> made =
        TrainingMetrics::Create(&registry);
    if (!made.ok()) return Fail(made.status().ToString(), kExitFailed);
    training_metrics = *std::move(made);
    if (absl::Status s = AddProcessMetrics(&registry, run.start_time);
        !s.ok()) {
      return Fail(s.ToString(), kExitFailed);
    }
    options.metrics = training_metrics.get();
    MetricsEndpointOptions endpoint;
    endpoint.registry = &registry;
    endpoint.port = run.metrics_port;
    endpoint.requested_host = run.metrics_host;
    endpoint.task_host = TaskHost(*task);
    endpoint.job_uses_tls = options.security->uses_tls();
    absl::StatusOr<std::unique_ptr<MetricsHttpServer>> started =
        StartMetricsEndpoint(endpoint);
    if (!started.ok()) return Fail(started.status().message());
    metrics_server = *std::move(started);
    Log(absl::StrCat("metrics at ", metrics_server->url()));
  }

  absl::StatusOr<FinalMetrics> metrics =
      evaluator ? RunEvaluatorJob(options, task->config, Log)
                : RunTrainingJob(options, *task, Log);
  if (!metrics.ok()) {
    return Fail(metrics.status().ToString(),
                absl::IsInvalidArgument(metrics.status()) ? kExitBadInput
                                                          : kExitFailed);
  }
  if (evaluator) {
    // Its metrics file was written after each checkpoint.
    for (const std::string& line : SummaryLines(*metrics)) Log(line);
    return 0;
  }
  if (chief) {
    for (const std::string& line : SummaryLines(*metrics)) Log(line);
    if (!options.metrics_out.empty()) {
      if (absl::Status s = WriteFinalMetrics(options.metrics_out, *metrics);
          !s.ok()) {
        return Fail(s.ToString(), kExitFailed);
      }
      Log(absl::StrCat("wrote ", options.metrics_out));
    }
  }
  return 0;
}

}  // namespace distrt
