// Built in a workspace of its own against @distrt: a mirrored strategy over
// three CPU replicas applies the all-reduced gradient of every replica to
// a variable, and the program checks the result. Exits 0 and prints "ok"
// when the library behaves.

#include <cstdio>
#include <string>

#include "runtime/cluster/cluster_resolver.h"
#include "runtime/cluster/simple_cluster_resolver.h"
#include "runtime/distribute/distribution_context.h"
#include "runtime/distribute/mirrored_strategy.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/util/status_macros.h"

namespace {

absl::Status Run() {
  using namespace distrt;
  const SimpleClusterResolver local(ClusterSpec(), std::nullopt);
  ASSIGN_OR_RETURN(TaskRole role, local.task_role());
  LocalDevicesOptions device_options;
  device_options.num_cpu_devices = 3;
  device_options.use_gpus = false;
  ASSIGN_OR_RETURN(LocalDevices devices, CreateLocalDevices(device_options));
  StrategyOptions options;
  options.is_chief = role.is_chief;
  ASSIGN_OR_RETURN(std::unique_ptr<MirroredStrategy> strategy,
                   MirroredStrategy::Create(devices.pointers(), options));
  ASSIGN_OR_RETURN(Strategy::Scope scope, strategy->scope());

  VariableOptions variable;
  variable.spec.name = "w";
  variable.spec.shape = {2};
  variable.spec.optimizer.learning_rate = 1.0f;  // SGD: w -= grad
  variable.aggregation = VariableAggregation::kSum;
  ASSIGN_OR_RETURN(DistributedVariable * w, strategy->CreateVariable(variable));
  RETURN_IF_ERROR(strategy->Run([&](ReplicaContext& context) -> absl::Status {
    const float id = static_cast<float>(context.replica_id_in_sync_group());
    ASSIGN_OR_RETURN(Tensor grad, Tensor::FromFloats({id, 1.0f}, {2}));
    RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, grad));
    return context.ApplyGradient(*w, grad.flat<float>(),
                                 GradientAggregation::kAlreadyAggregated);
  }));
  ASSIGN_OR_RETURN(Tensor value, strategy->ReadVar(*w));
  const auto v = value.flat<float>();
  std::printf("%s; w = [%g, %g]\n", strategy->Describe().c_str(), v[0], v[1]);
  // Replicas 0, 1, 2: the summed gradient is [3, 3], applied once per copy.
  if (v[0] != -3.0f || v[1] != -3.0f || &GetStrategy() != strategy.get()) {
    return absl::InternalError("wrong result");
  }
  return absl::OkStatus();
}

}  // namespace

int main() {
  const absl::Status status = Run();
  if (!status.ok()) {
    std::fprintf(stderr, "mirrored_sum: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
