#include "runtime/distribute/mirrored_strategy.h"

#include "absl/strings/str_cat.h"
#include "runtime/distribute/local_variable.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<MirroredStrategy>> MirroredStrategy::Create(
    std::vector<Device*> devices, StrategyOptions options) {
  ASSIGN_OR_RETURN(std::unique_ptr<CrossDeviceOps> ops,
                   CrossDeviceOpsFor(devices, options));
  return std::unique_ptr<MirroredStrategy>(new MirroredStrategy(
      std::move(devices), std::move(ops), std::move(options)));
}

absl::StatusOr<std::unique_ptr<DistributedVariable>>
MirroredStrategy::MakeSyncOnWriteVariable(const VariableOptions& options,
                                          const DistributedVariable*) {
  std::vector<int> copy_of_replica;
  for (int r = 0; r < num_local_replicas(); ++r) copy_of_replica.push_back(r);
  ASSIGN_OR_RETURN(
      std::unique_ptr<LocalVariable> variable,
      LocalVariable::Create(options, devices(), std::move(copy_of_replica),
                            absl::StrCat("mirrored on ", DescribeDevices())));
  return std::unique_ptr<DistributedVariable>(std::move(variable));
}

}  // namespace distrt
