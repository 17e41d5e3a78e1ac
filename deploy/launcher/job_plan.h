#ifndef DISTRT_DEPLOY_LAUNCHER_JOB_PLAN_H_
#define DISTRT_DEPLOY_LAUNCHER_JOB_PLAN_H_

// JobPlan: the tasks of a training job to be started on this machine, each
// with a free port on one host, and the TF_CONFIG each task is given.
//
// The job's shape comes from one of two places:
//  - a cluster spec (any text ParseClusterSpecText reads: a bare cluster
//    object or a whole TF_CONFIG; dense list jobs or sparse object jobs as
//    Kubeflow writes them). Its addresses are placeholders: each is replaced,
//    and sparse jobs keep their indices; with keep_addresses they are kept
//    as written (tasks on hosts of their own: namespaces, containers);
//  - task counts: so many ps tasks and workers, and optionally a chief and
//    an evaluator.
// Either way, unless the addresses are kept, every task gets
// "<bind_host>:<free port>" (see free_ports.h).

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/cluster/cluster_spec.h"

namespace distrt::launcher {

struct JobCounts {
  int num_ps = 0;
  int num_workers = 0;
  bool chief = false;
  bool evaluator = false;
};

struct JobPlanOptions {
  // Exactly one of these two gives the job's shape.
  std::optional<std::string> cluster_spec_text;
  std::optional<JobCounts> counts;
  // The host every task listens on and is reached at. Default: loopback, so
  // that a job on one machine is not reachable from others.
  std::string bind_host = "127.0.0.1";
  // The cluster spec's addresses as written, each task listening on its own
  // address's host; bind_host is then unused. Needs cluster_spec_text.
  bool keep_addresses = false;
  // TF_CONFIG's "rpc_layer" for every task (runtime/cluster/rpc_layer.h);
  // empty: none written (gRPC).
  std::string rpc_layer;
};

struct LaunchTask {
  std::string type;  // kPsJob, kChiefJob, kWorkerJob or kEvaluatorJob
  int index = 0;
  std::string address;  // "host:port"

  // "worker:1": how the launcher names the task in its output.
  std::string label() const;
  // "worker-1": the task's file names (its log).
  std::string file_stem() const;
};

struct JobPlan {
  ClusterSpec cluster;
  // Every task of `cluster` in start order: ps tasks first (the others
  // connect to them), then the chief, the workers and the evaluator; by
  // index within a type.
  std::vector<LaunchTask> tasks;
  // Position in `tasks` of the task whose success is the job's: the chief,
  // or without one the worker with the lowest index (the one the runtime
  // makes chief, see ResolveTaskRole).
  int primary = 0;
  // JobPlanOptions::rpc_layer.
  std::string rpc_layer;
  // With rpc_layer "grpc+tcp" and picked addresses: ps task i's data plane
  // port (ps_server --data_plane_port); empty otherwise (the OS picks).
  std::vector<int> data_plane_ports;
};

// Builds the plan. Errors are INVALID_ARGUMENT naming the problem: both or
// neither of cluster_spec_text and counts given, a negative count, a cluster
// spec that does not parse or is invalid (e.g. two chiefs), a job with no
// chief and no worker (nothing would train); UNAVAILABLE when ports cannot
// be bound on bind_host (see PickFreePorts).
absl::StatusOr<JobPlan> MakeJobPlan(const JobPlanOptions& options);

// The TF_CONFIG of `task`, one line of JSON:
//   {"cluster": <ClusterSpecToJson(cluster)>,
//    "task": {"type": "<type>", "index": <index>}[, "rpc_layer": "<layer>"]}
// "rpc_layer" only when `rpc_layer` is not empty.
std::string TfConfigText(const ClusterSpec& cluster, const LaunchTask& task,
                         const std::string& rpc_layer = "");

}  // namespace distrt::launcher

#endif  // DISTRT_DEPLOY_LAUNCHER_JOB_PLAN_H_
