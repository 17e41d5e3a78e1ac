#include "job/make_strategy.h"

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/cluster/rpc_layer.h"
#include "runtime/distribute/central_storage_strategy.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/distribute/multi_worker_mirrored_strategy.h"
#include "runtime/distribute/one_device_strategy.h"
#include "runtime/distribute/parameter_server_strategy.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// The options of every strategy, with this task's part in the job.
StrategyOptions TaskStrategyOptions(const ResolvedTask& task,
                                    const MakeStrategyOptions& options) {
  StrategyOptions strategy_options = options.strategy;
  strategy_options.is_chief = task.role.is_chief;
  strategy_options.input_workers.count = task.num_training_tasks();
  strategy_options.input_workers.index = task.role.id_in_cluster.value_or(0);
  return strategy_options;
}

// A ParameterServerStrategy; with ps tasks, over a client of them kept in
// resolved->ps_client.
absl::StatusOr<std::unique_ptr<Strategy>> MakeParameterServerStrategy(
    const ResolvedTask& task, std::vector<Device*> devices,
    const MakeStrategyOptions& options, const StrategyOptions& strategy_options,
    ResolvedStrategy* resolved) {
  if (!task.has_ps()) {
    return ParameterServerStrategy::Create(devices, nullptr, strategy_options);
  }
  ASSIGN_OR_RETURN(const RpcLayer rpc_layer,
                   ParseRpcLayer(task.config.rpc_layer));
  PsClient::Options ps_options = options.ps;
  ps_options.data_plane =
      ps_options.data_plane || rpc_layer == RpcLayer::kGrpcTcp;
  ASSIGN_OR_RETURN(resolved->ps_client,
                   PsClient::Create(task.config.cluster, ps_options));
  return ParameterServerStrategy::Create(devices, resolved->ps_client.get(),
                                         strategy_options,
                                         options.wait_for_servers);
}

// A MultiWorkerMirroredStrategy, once this task has joined the group of
// workers (kept in resolved->workers).
absl::StatusOr<std::unique_ptr<Strategy>> MakeMultiWorkerMirroredStrategy(
    const ResolvedTask& task, std::vector<Device*> devices,
    const MakeStrategyOptions& options, const StrategyOptions& strategy_options,
    const std::function<void(absl::string_view)>& log,
    ResolvedStrategy* resolved) {
  WorkerGroup::Options workers = options.workers;
  if (!workers.log) workers.log = log;
  ASSIGN_OR_RETURN(resolved->workers, WorkerGroup::Join(task.config, workers));
  log(absl::StrCat("joined the ", resolved->workers->size(),
                   " training tasks as rank ", resolved->workers->rank(),
                   "; collectives over ", resolved->workers->transport()));
  return MultiWorkerMirroredStrategy::Create(
      devices, &resolved->workers->collective(), strategy_options,
      options.all_reduce_bucket_bytes);
}

// The strategy of `task`'s kind over `devices`; what it needs beside it (a
// ps client, the group of workers) goes into `resolved`.
absl::StatusOr<std::unique_ptr<Strategy>> CreateStrategy(
    const ResolvedTask& task, std::vector<Device*> devices,
    const MakeStrategyOptions& options,
    const std::function<void(absl::string_view)>& log,
    ResolvedStrategy* resolved) {
  const StrategyOptions strategy_options = TaskStrategyOptions(task, options);
  switch (*task.strategy) {
    case StrategyKind::kOneDevice:
      if (devices.empty()) {
        return absl::InvalidArgumentError("a strategy needs a device");
      }
      return OneDeviceStrategy::Create(devices[0], strategy_options);
    case StrategyKind::kCentralStorage:
      return CentralStorageStrategy::Create(devices, strategy_options);
    case StrategyKind::kParameterServer:
      return MakeParameterServerStrategy(task, std::move(devices), options,
                                         strategy_options, resolved);
    case StrategyKind::kMultiWorkerMirrored:
      return MakeMultiWorkerMirroredStrategy(task, std::move(devices), options,
                                             strategy_options, log, resolved);
    default:
      return MirroredStrategy::Create(devices, strategy_options);
  }
}

}  // namespace

absl::StatusOr<ResolvedStrategy> MakeStrategy(
    const ClusterResolver& resolver, std::vector<Device*> devices,
    const MakeStrategyOptions& options) {
  ASSIGN_OR_RETURN(TfConfig config, resolver.Resolve());
  ASSIGN_OR_RETURN(
      ResolvedTask task,
      ResolveTask(std::move(config), ClusterSource::kProgram, options.kind));
  return MakeStrategy(task, std::move(devices), options);
}

absl::StatusOr<ResolvedStrategy> MakeStrategy(
    const ResolvedTask& task, std::vector<Device*> devices,
    const MakeStrategyOptions& options) {
  StrategyKind kind = StrategyKind::kAuto;
  if (task.strategy.has_value()) {
    kind = *task.strategy;
  } else {
    // Not resolved by ResolveTask (a task built by hand), or a ps task or
    // the evaluator, for which ChooseStrategyKind says why it does not
    // train.
    ASSIGN_OR_RETURN(kind, ChooseStrategyKind(task.config, options.kind));
  }
  if (options.strategy.push_in_background &&
      kind != StrategyKind::kParameterServer) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push_in_background overlaps a step's push to the ps tasks with the "
        "next step, so it needs parameter servers; the cluster's strategy is ",
        StrategyKindName(kind)));
  }
  auto log = [&](absl::string_view line) {
    if (options.log) options.log(line);
  };
  ResolvedStrategy resolved;
  resolved.task = task;
  absl::StatusOr<std::unique_ptr<Strategy>> strategy =
      CreateStrategy(task, std::move(devices), options, log, &resolved);
  if (!strategy.ok()) {
    // The other workers have joined too: tell them why this one will not
    // take part, rather than leave them to time out.
    if (resolved.workers != nullptr) {
      return resolved.workers->Abandon(strategy.status());
    }
    return strategy.status();
  }
  resolved.strategy = *std::move(strategy);
  log(resolved.strategy->Describe());
  if (absl::Status s = resolved.strategy->Initialize(); !s.ok()) {
    if (resolved.workers != nullptr) {
      return resolved.workers->ExplainFailure(s);
    }
    return s;
  }
  return resolved;
}

}  // namespace distrt
