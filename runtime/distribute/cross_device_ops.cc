#include "runtime/distribute/cross_device_ops.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "runtime/tensor/shape.h"

namespace distrt {
namespace {

bool IsCpu(const Device* device) { return device->type() == "CPU"; }

// OK when every tensor is float32 with the shape of the first.
absl::Status CheckSameShape(absl::string_view what,
                            absl::Span<const Tensor* const> tensors) {
  if (tensors.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": no values"));
  }
  for (size_t r = 0; r < tensors.size(); ++r) {
    if (tensors[r]->is_null() || tensors[r]->dtype() != DType::kFloat32 ||
        tensors[r]->shape() != tensors[0]->shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": replica ", r, " has ", DescribeTensor(*tensors[r]),
          ", replica 0 has ", DescribeTensor(*tensors[0]),
          " (all must be float32 of one shape)"));
    }
  }
  return absl::OkStatus();
}

void AddInto(absl::Span<float> sum, absl::Span<const float> value) {
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += value[i];
}

void Scale(absl::Span<float> values, float factor) {
  for (float& v : values) v *= factor;
}

void CopyInto(absl::Span<float> to, absl::Span<const float> from) {
  std::copy(from.begin(), from.end(), to.begin());
}

// The replicas' values of one in-replica all-reduce: every replica puts its
// own in its slot, then everyone meets and checks the same things, so all
// return the same error.
absl::Status ExchangeValues(ReplicaGroup& group, int replica, Tensor& value,
                            std::vector<Tensor*>* values) {
  // The group does not own the tensor: the slot only points at it.
  group.Put(replica, std::shared_ptr<void>(&value, [](void*) {}));
  if (absl::Status s = group.barrier().Wait("all-reduce"); !s.ok()) return s;
  values->clear();
  for (int r = 0; r < group.num_replicas(); ++r) {
    values->push_back(group.Get<Tensor>(r));
  }
  std::vector<const Tensor*> view(values->begin(), values->end());
  if (absl::Status s = CheckSameShape("all-reduce", view); !s.ok()) {
    // Nobody may leave while others still read the slots.
    absl::Status barrier = group.barrier().Wait("all-reduce");
    return barrier.ok() ? s : barrier;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tensor> CrossDeviceOps::Reduce(
    ReduceOp op, absl::Span<const Tensor* const> per_replica,
    Device* destination) {
  if (absl::Status s = CheckSameShape("reduce", per_replica); !s.ok()) {
    return s;
  }
  Allocator* allocator =
      IsCpu(destination) ? destination->allocator() : CpuAllocator();
  absl::StatusOr<Tensor> sum =
      Tensor::Zeros(DType::kFloat32, per_replica[0]->shape(), allocator);
  if (!sum.ok()) return sum.status();
  for (const Tensor* value : per_replica) {
    AddInto(sum->flat<float>(), value->flat<float>());
  }
  if (op == ReduceOp::kMean) {
    Scale(sum->flat<float>(), 1.0f / per_replica.size());
  }
  if (IsCpu(destination)) return sum;
  return destination->CopyFrom(*sum);
}

absl::StatusOr<std::vector<Tensor>> CrossDeviceOps::BatchReduce(
    ReduceOp op, absl::Span<const std::vector<const Tensor*>> values,
    Device* destination) {
  std::vector<Tensor> reduced;
  for (const std::vector<const Tensor*>& per_replica : values) {
    absl::StatusOr<Tensor> one = Reduce(op, per_replica, destination);
    if (!one.ok()) return one.status();
    reduced.push_back(*std::move(one));
  }
  return reduced;
}

absl::StatusOr<std::vector<Tensor>> CrossDeviceOps::Broadcast(
    const Tensor& value, absl::Span<Device* const> devices) {
  std::vector<Tensor> copies;
  for (Device* device : devices) {
    absl::StatusOr<Tensor> copy = device->CopyFrom(value);
    if (!copy.ok()) return copy.status();
    copies.push_back(*std::move(copy));
  }
  return copies;
}

absl::Status ReductionToOneDevice::AllReduce(ReplicaGroup& group, int replica,
                                             ReduceOp op, Tensor& value) {
  std::vector<Tensor*> values;
  if (absl::Status s = ExchangeValues(group, replica, value, &values);
      !s.ok()) {
    return s;
  }
  const int n = group.num_replicas();
  // Replica 0's device is the one device everything is reduced on.
  if (replica == 0) {
    for (int r = 1; r < n; ++r) {
      AddInto(value.flat<float>(), values[r]->flat<float>());
    }
    if (op == ReduceOp::kMean) Scale(value.flat<float>(), 1.0f / n);
  }
  if (absl::Status s = group.barrier().Wait("all-reduce"); !s.ok()) return s;
  if (replica != 0) CopyInto(value.flat<float>(), values[0]->flat<float>());
  // Replica 0's buffer stays untouched until everyone copied it.
  return group.barrier().Wait("all-reduce");
}

absl::Status HierarchicalCopyAllReduce::AllReduce(ReplicaGroup& group,
                                                  int replica, ReduceOp op,
                                                  Tensor& value) {
  std::vector<Tensor*> values;
  if (absl::Status s = ExchangeValues(group, replica, value, &values);
      !s.ok()) {
    return s;
  }
  const int n = group.num_replicas();
  const int leader = replica / group_size_ * group_size_;
  const int group_end = std::min(leader + group_size_, n);
  // 1. Each group's leader sums its group (the groups in parallel).
  if (replica == leader) {
    for (int r = leader + 1; r < group_end; ++r) {
      AddInto(value.flat<float>(), values[r]->flat<float>());
    }
  }
  if (absl::Status s = group.barrier().Wait("all-reduce"); !s.ok()) return s;
  // 2. Replica 0 (leader of group 0) sums the group sums.
  if (replica == 0) {
    for (int r = group_size_; r < n; r += group_size_) {
      AddInto(value.flat<float>(), values[r]->flat<float>());
    }
    if (op == ReduceOp::kMean) Scale(value.flat<float>(), 1.0f / n);
  }
  if (absl::Status s = group.barrier().Wait("all-reduce"); !s.ok()) return s;
  // 3. The other leaders fetch the result, then their groups from them.
  if (replica == leader && replica != 0) {
    CopyInto(value.flat<float>(), values[0]->flat<float>());
  }
  if (absl::Status s = group.barrier().Wait("all-reduce"); !s.ok()) return s;
  if (replica != leader) {
    CopyInto(value.flat<float>(), values[leader]->flat<float>());
  }
  return group.barrier().Wait("all-reduce");
}

absl::Status CpuChunkedAllReduce::AllReduce(ReplicaGroup& group, int replica,
                                            ReduceOp op, Tensor& value) {
  if (value.is_null() || value.dtype() != DType::kFloat32) {
    // Still meet the others, who would otherwise wait for this replica.
    std::vector<float> none;
    (void)group.cpu_all_reduce().AllReduce(replica, absl::MakeSpan(none), op);
    return absl::InvalidArgumentError(
        absl::StrCat("all-reduce: replica ", replica, " has ",
                     DescribeTensor(value), ", not float32"));
  }
  // The chunked algorithm checks that sizes agree; shapes of equal size are
  // the caller's business.
  return group.cpu_all_reduce().AllReduce(replica, value.flat<float>(), op);
}

std::unique_ptr<CrossDeviceOps> ChooseCrossDeviceOps(
    absl::Span<Device* const> devices) {
  bool all_cpu = true;
  for (const Device* device : devices) all_cpu = all_cpu && IsCpu(device);
  if (all_cpu) return std::make_unique<CpuChunkedAllReduce>();
  return std::make_unique<HierarchicalCopyAllReduce>();
}

absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateCrossDeviceOps(
    absl::string_view name, absl::Span<Device* const> devices) {
  if (name == "auto" || name.empty()) return ChooseCrossDeviceOps(devices);
  if (name == "reduction_to_one_device") {
    return std::make_unique<ReductionToOneDevice>();
  }
  if (name == "hierarchical_copy") {
    return std::make_unique<HierarchicalCopyAllReduce>();
  }
  if (name == "cpu_all_reduce") {
    for (const Device* device : devices) {
      if (!IsCpu(device)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cross-device ops \"cpu_all_reduce\" needs CPU devices; ",
            device->name().ToString(), " is not one"));
      }
    }
    return std::make_unique<CpuChunkedAllReduce>();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown cross-device ops \"", name,
      "\"; known: auto, reduction_to_one_device, hierarchical_copy, "
      "cpu_all_reduce"));
}

}  // namespace distrt
