#include "runtime/distribute/parameter_server_strategy.h"

#include "runtime/distribute/ps_variable.h"

namespace distrt {

absl::StatusOr<std::unique_ptr<ParameterServerStrategy>>
ParameterServerStrategy::Create(std::vector<Device*> devices, PsClient* client,
                                StrategyOptions options,
                                absl::Duration wait_for_servers) {
  if (client == nullptr) {
    return absl::InvalidArgumentError(
        "ParameterServerStrategy needs a client of the ps tasks");
  }
  absl::StatusOr<std::unique_ptr<CrossDeviceOps>> ops =
      CrossDeviceOpsFor(devices, options);
  if (!ops.ok()) return ops.status();
  return std::unique_ptr<ParameterServerStrategy>(new ParameterServerStrategy(
      std::move(devices), *std::move(ops), std::move(options), client,
      wait_for_servers));
}

absl::Status ParameterServerStrategy::Initialize() {
  return client_->WaitForServers(wait_for_servers_);
}

absl::StatusOr<std::unique_ptr<DistributedVariable>>
ParameterServerStrategy::MakeSyncOnWriteVariable(
    const VariableOptions& options, const DistributedVariable* colocate_with) {
  absl::StatusOr<VariablePlacement> placement =
      colocate_with != nullptr
          ? client_->CreateVariableColocated(options.spec,
                                             colocate_with->name())
          : client_->CreateVariable(options.spec, options.partition);
  if (!placement.ok()) return placement.status();
  return std::unique_ptr<DistributedVariable>(
      new PsVariable(options, client_, *std::move(placement)));
}

absl::StatusOr<std::unique_ptr<DistributedHashTable>>
ParameterServerStrategy::MakeHashTable(const HashEmbeddingSpec& spec) {
  if (absl::Status s = client_->CreateHashTable(spec); !s.ok()) return s;
  return std::unique_ptr<DistributedHashTable>(new PsHashTable(spec, client_));
}

}  // namespace distrt
