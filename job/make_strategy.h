#ifndef DISTRT_JOB_MAKE_STRATEGY_H_
#define DISTRT_JOB_MAKE_STRATEGY_H_

// MakeStrategy: the strategy that a cluster and a few choices ask for, with
// what it needs connected, as TF's strategy constructors do from a cluster
// resolver: ParameterServerStrategy reaches the ps tasks (PsClient over
// gRPC), MultiWorkerMirroredStrategy joins the other training tasks
// (WorkerGroup: the chief's rendezvous, then a Gloo mesh), the local
// strategies need nothing. The `worker` binary builds its strategy here;
// so can any program (docs/library.md).
//
//   TFConfigClusterResolver resolver;  // tf_config_cluster_resolver.h
//   LocalDevices devices = *CreateLocalDevices({});
//   ASSIGN_OR_RETURN(ResolvedStrategy resolved,
//                    MakeStrategy(resolver, devices.pointers(), {}));
//   Strategy& strategy = *resolved.strategy;

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/ps_client.h"
#include "job/resolved_task.h"
#include "job/strategy_kind.h"
#include "job/worker_group.h"
#include "runtime/cluster/cluster_resolver.h"
#include "runtime/device/device.h"
#include "runtime/distribute/multi_worker_all_reduce.h"
#include "runtime/distribute/strategy.h"

namespace distrt {

struct MakeStrategyOptions {
  // What MakeStrategy(resolver, ...) asks the cluster for; MakeStrategy(task,
  // ...) takes the task's own (ResolvedTask::strategy).
  StrategyKind kind = StrategyKind::kAuto;
  // Cross-device ops and the collective timeout; MakeStrategy sets is_chief
  // and input_workers from the cluster.
  StrategyOptions strategy;
  // ParameterServerStrategy: the ps client (TLS and token, retries, the
  // failure timeout), and how long Initialize waits for every ps task.
  PsClient::Options ps;
  absl::Duration wait_for_servers = absl::Minutes(5);
  // MultiWorkerMirroredStrategy: joining the group, and the most bytes one
  // cross-worker all-reduce carries.
  WorkerGroup::Options workers;
  int64_t all_reduce_bucket_bytes = MultiWorkerAllReduce::kDefaultBucketBytes;
  // Progress lines ("joined the 3 training tasks as rank 1"); none if unset.
  std::function<void(absl::string_view)> log;
};

// The strategy with what it borrows. Members are destroyed in reverse
// order: the strategy before the connections it uses.
struct ResolvedStrategy {
  // The task the strategy was made for: cluster, role, strategy kind.
  ResolvedTask task;
  // With ps tasks only.
  std::unique_ptr<PsClient> ps_client;
  // MultiWorkerMirroredStrategy only.
  std::unique_ptr<WorkerGroup> workers;
  std::unique_ptr<Strategy> strategy;
};

// Resolves the cluster, chooses the kind, connects and creates the
// strategy over `devices` (non-empty; they must outlive it), and
// initializes it (waits for the ps tasks; checks the workers' replica
// counts). Errors name what failed; a multi-worker failure names the lost
// task (WorkerGroup::ExplainFailure).
absl::StatusOr<ResolvedStrategy> MakeStrategy(
    const ClusterResolver& resolver, std::vector<Device*> devices,
    const MakeStrategyOptions& options);

// The same for a task resolved already (ResolveTask), with its strategy
// kind; INVALID_ARGUMENT for a task that does not train (a ps task, the
// evaluator).
absl::StatusOr<ResolvedStrategy> MakeStrategy(
    const ResolvedTask& task, std::vector<Device*> devices,
    const MakeStrategyOptions& options);

}  // namespace distrt

#endif  // DISTRT_JOB_MAKE_STRATEGY_H_
