#ifndef DISTRT_WORKER_WORKER_RUN_H_
#define DISTRT_WORKER_WORKER_RUN_H_

// RunWorker: what the worker binary does once its flags are read
// (worker_main.cc has the flags; this library reads none).
//
//   1. Checks the options; loads TLS and the cluster token; resolves the
//      cluster from TF_CONFIG or Slurm's step (runtime/cluster/
//      environment_cluster.h) into a ResolvedTask (job/
//      resolved_task.h): its role and strategy kind, decided here once.
//      Under Slurm it sets CUDA_VISIBLE_DEVICES to the task's GPUs before
//      anything touches CUDA.
//   2. Starts the metrics endpoint when metrics_port is set.
//   3. Runs the training job (worker/training_job.h) of a chief or worker,
//      or the evaluator's (worker/evaluator_job.h), with that task; the
//      chief and the evaluator print the final metrics and the chief writes
//      metrics_out.

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "rpc/transport_security.h"
#include "worker/worker_options.h"

namespace distrt {

struct WorkerRunOptions {
  // What the job reads. RunWorker sets `job.security` (from `security`) and
  // `job.metrics` (with metrics_port) itself.
  WorkerOptions job;
  // TLS and the cluster token (--tls_*, --cluster_token_file).
  rpc::TransportSecurityOptions security;
  // Under Slurm without TF_CONFIG: --slurm_jobs and --slurm_port_base.
  std::string slurm_jobs;
  int slurm_port_base = 8888;
  // The metrics endpoint: -1 off, 0 a free port; its host (empty: the
  // task's own, or loopback without a task or under TLS).
  int metrics_port = -1;
  std::string metrics_host;
  // When the process started, for the process metrics.
  absl::Time start_time = absl::Now();
};

// The exit status: 0 when the job finished; 2 with one line on stderr
// ("worker: ...") for bad input: options, TF_CONFIG or Slurm's step, a
// strategy the cluster cannot run, TLS or token files, an unwritable
// metrics_out, a port the metrics cannot use, malformed data
// (INVALID_ARGUMENT); 1 when the job failed otherwise.
int RunWorker(const WorkerRunOptions& options);

}  // namespace distrt

#endif  // DISTRT_WORKER_WORKER_RUN_H_
