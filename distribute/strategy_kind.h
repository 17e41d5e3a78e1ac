#ifndef DISTRT_DISTRIBUTE_STRATEGY_KIND_H_
#define DISTRT_DISTRIBUTE_STRATEGY_KIND_H_

// StrategyKind: which tf.distribute strategy MakeStrategy builds, by the
// names the worker's --strategy flag takes.

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

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

}  // namespace distrt

#endif  // DISTRT_DISTRIBUTE_STRATEGY_KIND_H_
