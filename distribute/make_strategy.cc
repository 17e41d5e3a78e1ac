#include "distribute/make_strategy.h"

#include <algorithm>
#include <utility>

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

// Chief and worker tasks: one input pipeline each.
int TrainingTasks(const TfConfig& config) {
  return std::max(1, config.cluster.NumTasks(kChiefJob) +
                         config.cluster.NumTasks(kWorkerJob));
}

}  // namespace

absl::StatusOr<StrategyKind> ChooseStrategyKind(const TfConfig& config,
                                                StrategyKind requested) {
  if (!config.is_local() && config.task.has_value() &&
      config.task->type != kChiefJob && config.task->type != kWorkerJob) {
    return absl::InvalidArgumentError(
        absl::StrCat("the task is ", config.task->type, " ", config.task->index,
                     "; training runs on chief and worker tasks (ps tasks run "
                     "ps_server)"));
  }
  const bool has_ps = config.cluster.NumTasks(kPsJob) > 0;
  const int training_tasks = TrainingTasks(config);
  StrategyKind kind = requested;
  if (kind == StrategyKind::kAuto) {
    kind = has_ps               ? StrategyKind::kParameterServer
           : training_tasks > 1 ? StrategyKind::kMultiWorkerMirrored
                                : StrategyKind::kMirrored;
  }
  if (kind == StrategyKind::kParameterServer && !has_ps && training_tasks > 1) {
    // Alone, a worker falls back to local variables, as TF does; several
    // would each train their own.
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy=parameter_server without ps tasks trains in one process; "
        "this cluster has ",
        training_tasks,
        " training tasks and no ps tasks: add ps tasks to TF_CONFIG's "
        "cluster, or use --strategy=multi_worker_mirrored"));
  }
  if (has_ps && kind != StrategyKind::kParameterServer &&
      kind != StrategyKind::kMultiWorkerMirrored) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy=", StrategyKindName(kind),
        " keeps the variables in this process; this cluster has ps tasks, "
        "which would wait forever: remove them, or use "
        "--strategy=parameter_server"));
  }
  if (kind == StrategyKind::kMultiWorkerMirrored && has_ps) {
    return absl::InvalidArgumentError(
        "--strategy=multi_worker_mirrored keeps the variables on the workers; "
        "this cluster has ps tasks, which would wait forever: remove them, or "
        "use --strategy=parameter_server");
  }
  if (kind != StrategyKind::kParameterServer &&
      kind != StrategyKind::kMultiWorkerMirrored && training_tasks > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy=", StrategyKindName(kind), " trains within one process; ",
        "this cluster has ", training_tasks,
        " training tasks: use --strategy=multi_worker_mirrored or parameter "
        "servers (or one worker)"));
  }
  return kind;
}

absl::StatusOr<ResolvedStrategy> MakeStrategy(
    const ClusterResolver& resolver, std::vector<Device*> devices,
    const MakeStrategyOptions& options) {
  ResolvedStrategy resolved;
  ASSIGN_OR_RETURN(resolved.config, resolver.Resolve());
  const TfConfig& config = resolved.config;
  resolved.role = ResolveTaskRole(config);
  if (config.is_local()) resolved.role.is_chief = true;
  ASSIGN_OR_RETURN(StrategyKind kind, ChooseStrategyKind(config, options.kind));
  auto log = [&](absl::string_view line) {
    if (options.log) options.log(line);
  };

  if (options.strategy.push_in_background &&
      kind != StrategyKind::kParameterServer) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push_in_background overlaps a step's push to the ps tasks with the "
        "next step, so it needs parameter servers; the cluster's strategy is ",
        StrategyKindName(kind)));
  }
  StrategyOptions strategy_options = options.strategy;
  strategy_options.is_chief = resolved.role.is_chief;
  strategy_options.input_workers.count = TrainingTasks(config);
  strategy_options.input_workers.index =
      resolved.role.id_in_cluster.value_or(0);
  absl::StatusOr<std::unique_ptr<Strategy>> strategy;
  switch (kind) {
    case StrategyKind::kOneDevice:
      if (devices.empty()) {
        return absl::InvalidArgumentError("a strategy needs a device");
      }
      strategy = OneDeviceStrategy::Create(devices[0], strategy_options);
      break;
    case StrategyKind::kCentralStorage:
      strategy = CentralStorageStrategy::Create(devices, strategy_options);
      break;
    case StrategyKind::kParameterServer: {
      if (config.cluster.NumTasks(kPsJob) == 0) {
        strategy =
            ParameterServerStrategy::Create(devices, nullptr, strategy_options);
        break;
      }
      ASSIGN_OR_RETURN(const RpcLayer rpc_layer,
                       ParseRpcLayer(config.rpc_layer));
      PsClient::Options ps_options = options.ps;
      ps_options.data_plane =
          ps_options.data_plane || rpc_layer == RpcLayer::kGrpcTcp;
      ASSIGN_OR_RETURN(resolved.ps_client,
                       PsClient::Create(config.cluster, ps_options));
      strategy = ParameterServerStrategy::Create(
          devices, resolved.ps_client.get(), strategy_options,
          options.wait_for_servers);
      break;
    }
    case StrategyKind::kMultiWorkerMirrored: {
      WorkerGroup::Options workers = options.workers;
      if (!workers.log) workers.log = log;
      ASSIGN_OR_RETURN(resolved.workers, WorkerGroup::Join(config, workers));
      log(absl::StrCat("joined the ", resolved.workers->size(),
                       " training tasks as rank ", resolved.workers->rank(),
                       "; collectives over ", resolved.workers->transport()));
      strategy = MultiWorkerMirroredStrategy::Create(
          devices, &resolved.workers->collective(), strategy_options,
          options.all_reduce_bucket_bytes);
      break;
    }
    default:
      strategy = MirroredStrategy::Create(devices, strategy_options);
  }
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
