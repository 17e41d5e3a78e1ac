#include "runtime/distribute/distribution_context.h"

#include "runtime/distribute/one_device_strategy.h"
#include "runtime/distribute/replica_group.h"

namespace distrt {

Strategy& GetStrategy() {
  if (ReplicaContext* context = CurrentReplicaContext(); context != nullptr) {
    return context->strategy();
  }
  if (Strategy* scoped = CurrentScopedStrategy(); scoped != nullptr) {
    return *scoped;
  }
  return DefaultStrategy();
}

bool HasStrategy() { return &GetStrategy() != &DefaultStrategy(); }

ReplicaContext& DefaultReplicaContext() {
  // A group of its own, of one replica on the default strategy's device:
  // the strategy's group belongs to its Run, which other threads may be
  // in.
  struct DefaultReplica {
    explicit DefaultReplica(Strategy& strategy)
        : group({strategy.devices()[0]}, StrategyOptions().collective_timeout),
          context(&strategy, &group, &strategy.cross_device_ops(),
                  /*replica=*/0) {}
    ReplicaGroup group;
    ReplicaContext context;
  };
  thread_local DefaultReplica replica(DefaultStrategy());
  return replica.context;
}

ReplicaContext* GetReplicaContext() {
  if (ReplicaContext* context = CurrentReplicaContext(); context != nullptr) {
    return context;
  }
  if (InCrossReplicaContext()) return nullptr;
  return &DefaultReplicaContext();
}

bool InCrossReplicaContext() {
  return CurrentReplicaContext() == nullptr &&
         (CurrentScopedStrategy() != nullptr || InCrossReplicaSection());
}

void ExperimentalSetStrategy(Strategy* strategy) {
  SetThreadStrategy(strategy);
}

absl::StatusOr<DistributedVariable*> CreateVariable(
    const VariableOptions& options) {
  return GetStrategy().CreateVariable(options);
}

absl::StatusOr<DistributedHashTable*> CreateHashTable(
    const HashEmbeddingSpec& spec) {
  return GetStrategy().CreateHashTable(spec);
}

ReduceOp GetLossReduction(LossReduction reduction) {
  return reduction == LossReduction::kSum ? ReduceOp::kSum : ReduceOp::kMean;
}

}  // namespace distrt
