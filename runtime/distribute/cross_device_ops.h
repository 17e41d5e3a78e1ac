#ifndef DISTRT_RUNTIME_DISTRIBUTE_CROSS_DEVICE_OPS_H_
#define DISTRT_RUNTIME_DISTRIBUTE_CROSS_DEVICE_OPS_H_

// CrossDeviceOps: how a strategy combines the replicas' values across the
// devices of one process (tf.distribute.CrossDeviceOps). Two ways in:
//
// - Cross-replica context (Strategy::Reduce, BatchReduce, Broadcast): one
//   thread holds every replica's tensor and wants their reduction on one
//   device, or one tensor copied to every device.
// - Replica context (ReplicaContext::AllReduce): every replica calls from
//   its own thread with its own tensor, and on return each holds the
//   reduction. This is the per-step gradient all-reduce.
//
// Implementations, each in its own header:
// - ReductionToOneDevice (reduction_to_one_device.h);
// - HierarchicalCopyAllReduce (hierarchical_copy_all_reduce.h);
// - CpuChunkedAllReduce ("cpu_all_reduce", cpu_chunked_all_reduce.h), the
//   automatic choice for CPU devices;
// - NcclAllReduce ("nccl", nccl_all_reduce.h): NCCL across the local GPUs,
//   the automatic choice when every device is a GPU.
// A program may bring its own (StrategyOptions::cross_device_ops_object).
//
// Every replica's tensor must be float32 with the same shape; otherwise
// INVALID_ARGUMENT, for every replica. Tensors live on their replica's
// device: CPU replicas reduce in host memory, GPU replicas with their
// device's math on its stream (copying a peer's value over first).

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/collective/reduce_op.h"
#include "runtime/device/device.h"
#include "runtime/distribute/replica_group.h"
#include "runtime/tensor/tensor.h"

namespace distrt {

class CrossDeviceOps {
 public:
  virtual ~CrossDeviceOps() = default;

  // "reduction_to_one_device", "hierarchical_copy", "cpu_all_reduce",
  // "nccl".
  virtual std::string name() const = 0;

  // The reduction of `per_replica` (one tensor per replica) on
  // `destination`.
  virtual absl::StatusOr<Tensor> Reduce(
      ReduceOp op, absl::Span<const Tensor* const> per_replica,
      Device* destination);
  // Reduce for several values at once: values[v] holds value v's tensor per
  // replica.
  virtual absl::StatusOr<std::vector<Tensor>> BatchReduce(
      ReduceOp op, absl::Span<const std::vector<const Tensor*>> values,
      Device* destination);
  // A copy of `value` on each device.
  virtual absl::StatusOr<std::vector<Tensor>> Broadcast(
      const Tensor& value, absl::Span<Device* const> devices);

  // Called by every replica of `group` from its own thread with its own
  // `value`; on return every replica's value holds the reduction.
  virtual absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                                 Tensor& value) = 0;
};

// The cross-device ops for `devices` when the user names none: the chunked
// CPU all-reduce when every device is a CPU, NCCL when every device is a
// GPU, else hierarchical copy.
std::unique_ptr<CrossDeviceOps> ChooseCrossDeviceOps(
    absl::Span<Device* const> devices);

// By name: "auto" (ChooseCrossDeviceOps), or one of the names above.
// INVALID_ARGUMENT listing the known names otherwise.
absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateCrossDeviceOps(
    absl::string_view name, absl::Span<Device* const> devices);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DISTRIBUTE_CROSS_DEVICE_OPS_H_
