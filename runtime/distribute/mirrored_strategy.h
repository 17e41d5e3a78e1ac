#ifndef DISTRT_RUNTIME_DISTRIBUTE_MIRRORED_STRATEGY_H_
#define DISTRT_RUNTIME_DISTRIBUTE_MIRRORED_STRATEGY_H_

// MirroredStrategy: one replica per local device and a copy of every
// variable on every device. Each step the replicas' gradients are
// all-reduced and every replica applies the same update to its own copy, so
// the copies stay identical without being copied.

#include <memory>
#include <vector>

#include "runtime/distribute/strategy.h"

namespace distrt {

class MirroredStrategy : public Strategy {
 public:
  // `devices` (non-empty) must outlive the strategy.
  static absl::StatusOr<std::unique_ptr<MirroredStrategy>> Create(
      std::vector<Device*> devices, StrategyOptions options = {});

  std::string name() const override { return "MirroredStrategy"; }

 protected:
  using Strategy::Strategy;

  absl::StatusOr<std::unique_ptr<DistributedVariable>> MakeSyncOnWriteVariable(
      const VariableOptions& options,
      const DistributedVariable* colocate_with) override;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_MIRRORED_STRATEGY_H_
