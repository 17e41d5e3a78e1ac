#ifndef DISTRT_RUNTIME_DISTRIBUTE_HIERARCHICAL_COPY_ALL_REDUCE_H_
#define DISTRT_RUNTIME_DISTRIBUTE_HIERARCHICAL_COPY_ALL_REDUCE_H_

// HierarchicalCopyAllReduce (tf.distribute.HierarchicalCopyAllReduce):
// devices are split into groups (TF's DGX-1 layout of two groups of four);
// each group's first replica sums its group, replica 0 sums the group sums,
// and the leaders copy the result back to their groups. Group sums run in
// parallel.

#include <string>

#include "runtime/distribute/cross_device_ops.h"
#include "runtime/distribute/replica_outcomes.h"

namespace distrt {

class HierarchicalCopyAllReduce : public CrossDeviceOps {
 public:
  // Replicas [g * group_size, (g + 1) * group_size) form group g.
  explicit HierarchicalCopyAllReduce(int group_size = 4)
      : group_size_(group_size < 1 ? 1 : group_size) {}
  std::string name() const override { return "hierarchical_copy"; }
  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override;

 private:
  const int group_size_;
  ReplicaOutcomes outcomes_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_HIERARCHICAL_COPY_ALL_REDUCE_H_
