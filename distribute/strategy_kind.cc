#include "distribute/strategy_kind.h"

#include "absl/strings/str_cat.h"

namespace distrt {

absl::string_view StrategyKindName(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::kAuto:
      return "auto";
    case StrategyKind::kOneDevice:
      return "one_device";
    case StrategyKind::kMirrored:
      return "mirrored";
    case StrategyKind::kCentralStorage:
      return "central_storage";
    case StrategyKind::kParameterServer:
      return "parameter_server";
    case StrategyKind::kMultiWorkerMirrored:
      return "multi_worker_mirrored";
  }
  return "?";
}

absl::StatusOr<StrategyKind> ParseStrategyKind(absl::string_view name) {
  for (StrategyKind kind :
       {StrategyKind::kAuto, StrategyKind::kOneDevice, StrategyKind::kMirrored,
        StrategyKind::kCentralStorage, StrategyKind::kParameterServer,
        StrategyKind::kMultiWorkerMirrored}) {
    if (name == StrategyKindName(kind)) return kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown strategy \"", name,
                   "\"; known: auto, one_device, mirrored, central_storage, "
                   "parameter_server, multi_worker_mirrored"));
}

}  // namespace distrt
