#ifndef DISTRT_RUNTIME_DISTRIBUTE_CPU_CHUNKED_ALL_REDUCE_H_
#define DISTRT_RUNTIME_DISTRIBUTE_CPU_CHUNKED_ALL_REDUCE_H_

// CpuChunkedAllReduce ("cpu_all_reduce"): for CPU replicas, the chunked
// reduce-scatter + all-gather of runtime/collective/cpu_all_reduce.h: every
// replica's thread reduces its own chunk, with no whole-buffer copies. TF
// has no counterpart (its CPU replicas reduce on one device).

#include <string>

#include "runtime/distribute/cross_device_ops.h"

namespace distrt {

class CpuChunkedAllReduce : public CrossDeviceOps {
 public:
  std::string name() const override { return "cpu_all_reduce"; }
  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_CPU_CHUNKED_ALL_REDUCE_H_
