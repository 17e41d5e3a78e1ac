#ifndef DISTRT_RUNTIME_DISTRIBUTE_REDUCTION_TO_ONE_DEVICE_H_
#define DISTRT_RUNTIME_DISTRIBUTE_REDUCTION_TO_ONE_DEVICE_H_

// ReductionToOneDevice (tf.distribute.ReductionToOneDevice): everything is
// summed on one device, then copied back. Simple; the reduce device does
// all the work.

#include <string>

#include "runtime/distribute/cross_device_ops.h"
#include "runtime/distribute/replica_outcomes.h"

namespace distrt {

class ReductionToOneDevice : public CrossDeviceOps {
 public:
  std::string name() const override { return "reduction_to_one_device"; }
  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override;

 private:
  ReplicaOutcomes outcomes_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_REDUCTION_TO_ONE_DEVICE_H_
