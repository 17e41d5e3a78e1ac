#include "runtime/distribute/distribution_context.h"

#include "runtime/distribute/one_device_strategy.h"

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

ReplicaContext* GetReplicaContext() { return CurrentReplicaContext(); }

bool InCrossReplicaContext() {
  return CurrentReplicaContext() == nullptr &&
         CurrentScopedStrategy() != nullptr;
}

void ExperimentalSetStrategy(Strategy* strategy) {
  SetThreadStrategy(strategy);
}

}  // namespace distrt
