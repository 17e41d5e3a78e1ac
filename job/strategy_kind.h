#ifndef DISTRT_JOB_STRATEGY_KIND_H_
#define DISTRT_JOB_STRATEGY_KIND_H_

// StrategyKind: which tf.distribute strategy MakeStrategy builds, by the
// names the worker's --strategy flag takes, and which one a cluster asks for
// (ChooseStrategyKind; ResolveTask in job/resolved_task.h decides it
// once per task).

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/cluster/tf_config.h"

namespace distrt {

enum class StrategyKind {
  // Parameter servers when the cluster has ps tasks; else multi-worker
  // mirrored when it has several training tasks; else mirrored.
  kAuto,
  kOneDevice,
  kMirrored,
  kCentralStorage,
  kParameterServer,
  kMultiWorkerMirrored,
};

// "auto", "one_device", "mirrored", "central_storage", "parameter_server",
// "multi_worker_mirrored".
absl::string_view StrategyKindName(StrategyKind kind);
// INVALID_ARGUMENT listing the known names for another.
absl::StatusOr<StrategyKind> ParseStrategyKind(absl::string_view name);

// The strategy kind `requested` means for `config` (kAuto: parameter
// servers when there are ps tasks, multi-worker mirrored with several
// training tasks, else mirrored), or INVALID_ARGUMENT saying why the
// cluster cannot run it: the task is not a chief or worker (ps tasks run
// ps_server, the evaluator evaluates); anything but parameter servers
// when there are ps tasks (they would wait forever); a one-process
// strategy with several training tasks; parameter servers without ps tasks for
// several training tasks (alone, it trains locally, as TF's).
absl::StatusOr<StrategyKind> ChooseStrategyKind(const TfConfig& config,
                                                StrategyKind requested);

}  // namespace distrt

#endif  // DISTRT_JOB_STRATEGY_KIND_H_
