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
// Implementations:
// - ReductionToOneDevice: everything is summed on one device, then copied
//   back. Simple; the reduce device does all the work.
// - HierarchicalCopyAllReduce: devices are split into groups (TF's DGX-1
//   layout of two groups of four); each group's first replica sums its
//   group, replica 0 sums the group sums, and the leaders copy the result
//   back to their groups. Group sums run in parallel.
// - CpuAllReduce ("cpu_all_reduce"): for CPU replicas, the chunked
//   reduce-scatter + all-gather of runtime/collective/cpu_all_reduce.h:
//   every replica's thread reduces its own chunk, no whole-buffer copies.
//   The automatic choice for CPU devices.
// - NcclAllReduce ("nccl", runtime/distribute/nccl_all_reduce.h): NCCL
//   across the local GPUs. The automatic choice when every device is a GPU.
//
// Every replica's tensor must be float32 with the same shape; otherwise
// INVALID_ARGUMENT, for every replica. Tensors live on their replica's
// device: CPU replicas reduce in host memory, GPU replicas with their
// device's math on its stream (copying a peer's value over first).

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
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

// Each replica's outcome of one all-reduce, for algorithms where one
// replica's failure (a sum on a GPU that ran out of memory) would otherwise
// hand the others a wrong result that they report as fine. Replica r writes
// slot r before the all-reduce's last barrier; every replica reads all
// slots after it. A slot is written again only in the next all-reduce,
// after its first barrier, which every reader reaches after reading.
class ReplicaOutcomes {
 public:
  void Set(int replica, absl::Status status);
  // The first failure among replicas [0, num_replicas), or OK.
  absl::Status First(int num_replicas) const;

 private:
  mutable absl::Mutex mu_;
  std::vector<absl::Status> statuses_ ABSL_GUARDED_BY(mu_);
};

class ReductionToOneDevice : public CrossDeviceOps {
 public:
  std::string name() const override { return "reduction_to_one_device"; }
  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override;

 private:
  ReplicaOutcomes outcomes_;
};

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

class CpuChunkedAllReduce : public CrossDeviceOps {
 public:
  std::string name() const override { return "cpu_all_reduce"; }
  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override;
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
