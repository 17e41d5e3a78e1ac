// Built in a workspace of its own against @distrt, with the transport: the
// strategy comes from TF_CONFIG through MakeStrategy (parameter servers over
// gRPC, multi-worker mirrored over Gloo, or mirrored alone). Every replica of
// every worker all-reduces [its global replica id, 1] and applies the sum
// once with SGD (learning rate 1), so after one step
//   w = -[R (R - 1) / 2, R]   (R = num_replicas_in_sync).
// Exits 0 and prints "ok" when the library behaves; build_and_run.sh runs it
// alone, with a ps_server, and as two multi-worker tasks.

#include <cstdio>
#include <string>

#include "job/make_strategy.h"
#include "runtime/cluster/cluster_resolver.h"
#include "runtime/cluster/tf_config_cluster_resolver.h"
#include "runtime/distribute/distribution_context.h"
#include "runtime/local_devices/local_devices.h"
#include "runtime/util/status_macros.h"

namespace {

absl::Status Run() {
  using namespace distrt;
  LocalDevicesOptions device_options;
  device_options.num_cpu_devices = 2;
  device_options.use_gpus = false;
  ASSIGN_OR_RETURN(LocalDevices devices, CreateLocalDevices(device_options));
  const TFConfigClusterResolver resolver;
  MakeStrategyOptions options;
  options.wait_for_servers = absl::Seconds(60);
  options.workers.join_timeout = absl::Seconds(60);
  ASSIGN_OR_RETURN(ResolvedStrategy resolved,
                   MakeStrategy(resolver, devices.pointers(), options));
  Strategy& strategy = *resolved.strategy;
  ASSIGN_OR_RETURN(Strategy::Scope scope, strategy.scope());

  VariableOptions variable;
  variable.spec.name = "w";
  variable.spec.shape = {2};
  variable.spec.optimizer.learning_rate = 1.0f;  // SGD: w -= grad
  variable.aggregation = VariableAggregation::kSum;
  ASSIGN_OR_RETURN(DistributedVariable * w, strategy.CreateVariable(variable));
  RETURN_IF_ERROR(strategy.Run([&](ReplicaContext& context) -> absl::Status {
    const float id = static_cast<float>(context.replica_id_in_sync_group());
    ASSIGN_OR_RETURN(Tensor grad, Tensor::FromFloats({id, 1.0f}, {2}));
    RETURN_IF_ERROR(context.AllReduce(ReduceOp::kSum, grad));
    return context.ApplyGradient(*w, grad.flat<float>(),
                                 GradientAggregation::kAlreadyAggregated);
  }));
  ASSIGN_OR_RETURN(Tensor value, strategy.ReadVar(*w));
  const auto v = value.flat<float>();
  const float r = static_cast<float>(strategy.num_replicas_in_sync());
  std::printf("%s; worker %d of %d; w = [%g, %g]\n",
              strategy.Describe().c_str(), strategy.worker_rank(),
              strategy.input_context().num_input_pipelines, v[0], v[1]);
  if (v[0] != -r * (r - 1) / 2 || v[1] != -r) {
    return absl::InternalError("wrong result");
  }
  return strategy.Finalize();
}

}  // namespace

int main() {
  const absl::Status status = Run();
  if (!status.ok()) {
    std::fprintf(stderr, "cluster_sum: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
