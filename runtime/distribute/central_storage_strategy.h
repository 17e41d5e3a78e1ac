#ifndef DISTRT_RUNTIME_DISTRIBUTE_CENTRAL_STORAGE_STRATEGY_H_
#define DISTRT_RUNTIME_DISTRIBUTE_CENTRAL_STORAGE_STRATEGY_H_

// CentralStorageStrategy: one replica per local device computing, and one
// copy of every variable on the host. Replicas read the host copy; the
// reduced gradient is applied to it once per step. Less memory than
// mirroring, at the price of every read crossing to the device.

#include <memory>
#include <vector>

#include "runtime/distribute/strategy.h"

namespace distrt {

class CentralStorageStrategy : public Strategy {
 public:
  // `devices` (non-empty) must outlive the strategy.
  static absl::StatusOr<std::unique_ptr<CentralStorageStrategy>> Create(
      std::vector<Device*> devices, StrategyOptions options = {});

  std::string name() const override { return "CentralStorageStrategy"; }

 protected:
  absl::StatusOr<std::unique_ptr<DistributedVariable>> MakeSyncOnWriteVariable(
      const VariableOptions& options,
      const DistributedVariable* colocate_with) override;

 private:
  using Strategy::Strategy;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_CENTRAL_STORAGE_STRATEGY_H_
