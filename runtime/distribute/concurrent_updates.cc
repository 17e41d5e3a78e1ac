#include "runtime/distribute/concurrent_updates.h"

#include <thread>

#include "runtime/distribute/test_variable_options.h"
#include "runtime/util/status_macros.h"

namespace distrt {

absl::StatusOr<std::vector<float>> AddWhilePushing(Strategy& adder,
                                                   Strategy& pusher, int adds,
                                                   int pushes) {
  VariableOptions options = SumVariable("shared", {10, 2});
  options.partition = PartitionPolicy::FixedShards(2);
  ASSIGN_OR_RETURN(DistributedVariable * added, adder.CreateVariable(options));
  ASSIGN_OR_RETURN(DistributedVariable * pushed,
                   pusher.CreateVariable(options));
  std::vector<float> threes(20, 3.0f);
  ASSIGN_OR_RETURN(Tensor three, Tensor::FromFloats(threes, {10, 2}));
  ASSIGN_OR_RETURN(Tensor one,
                   Tensor::FromFloats(std::vector<float>(20, 1.0f), {10, 2}));
  const std::vector<float> gradient(20, 100.0f);

  absl::Status adding, pushing;
  std::thread add_thread([&] {
    for (int i = 0; i < adds && adding.ok(); ++i) {
      adding = adder.AssignAdd(*added, three);
      if (adding.ok()) adding = adder.AssignSub(*added, one);
    }
  });
  for (int i = 0; i < pushes && pushing.ok(); ++i) {
    pushing = pusher.ApplyGradient(*pushed, gradient);
  }
  add_thread.join();
  RETURN_IF_ERROR(adding);
  RETURN_IF_ERROR(pushing);
  ASSIGN_OR_RETURN(Tensor value, adder.ReadVar(*added));
  auto flat = value.flat<float>();
  return std::vector<float>(flat.begin(), flat.end());
}

}  // namespace distrt
