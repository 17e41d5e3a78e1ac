#ifndef DISTRT_RUNTIME_DISTRIBUTE_ONE_DEVICE_STRATEGY_H_
#define DISTRT_RUNTIME_DISTRIBUTE_ONE_DEVICE_STRATEGY_H_

// OneDeviceStrategy: one replica on one device, variables on that device;
// the strategy in use when none is chosen (DefaultStrategy).

#include <memory>

#include "runtime/distribute/strategy.h"

namespace distrt {

class OneDeviceStrategy : public Strategy {
 public:
  // `device` must outlive the strategy.
  static absl::StatusOr<std::unique_ptr<OneDeviceStrategy>> Create(
      Device* device, StrategyOptions options = {});

  std::string name() const override { return "OneDeviceStrategy"; }

 protected:
  absl::StatusOr<std::unique_ptr<DistributedVariable>> MakeSyncOnWriteVariable(
      const VariableOptions& options,
      const DistributedVariable* colocate_with) override;

 private:
  using Strategy::Strategy;
};

// A OneDeviceStrategy on this process's first CPU device, shared by every
// caller that did not choose a strategy.
Strategy& DefaultStrategy();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_ONE_DEVICE_STRATEGY_H_
