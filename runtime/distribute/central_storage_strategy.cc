#include "runtime/distribute/central_storage_strategy.h"

#include "runtime/distribute/local_variable.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<CentralStorageStrategy>>
CentralStorageStrategy::Create(std::vector<Device*> devices,
                               StrategyOptions options) {
  ASSIGN_OR_RETURN(std::unique_ptr<CrossDeviceOps> ops,
                   CrossDeviceOpsFor(devices, options));
  return std::unique_ptr<CentralStorageStrategy>(new CentralStorageStrategy(
      std::move(devices), std::move(ops), std::move(options)));
}

absl::StatusOr<std::unique_ptr<DistributedVariable>>
CentralStorageStrategy::MakeSyncOnWriteVariable(const VariableOptions& options,
                                                const DistributedVariable*) {
  // A null device is host memory; every replica reads copy 0.
  ASSIGN_OR_RETURN(
      std::unique_ptr<LocalVariable> variable,
      LocalVariable::Create(options, {nullptr},
                            std::vector<int>(num_local_replicas(), 0),
                            "on the host (central storage)"));
  return std::unique_ptr<DistributedVariable>(std::move(variable));
}

}  // namespace distrt
