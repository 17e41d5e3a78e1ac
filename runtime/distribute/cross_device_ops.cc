#include "runtime/distribute/cross_device_ops.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "runtime/device/copy_into.h"
#include "runtime/distribute/cpu_chunked_all_reduce.h"
#include "runtime/distribute/hierarchical_copy_all_reduce.h"
#include "runtime/distribute/nccl_all_reduce.h"
#include "runtime/distribute/reduction_to_one_device.h"
#include "runtime/distribute/replica_outcomes.h"
#include "runtime/tensor/host_floats.h"
#include "runtime/tensor/shape.h"
#include "runtime/util/status_macros.h"

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

bool OnHost(const Tensor& tensor) {
  return tensor.allocator()->host_accessible();
}

float* Floats(Tensor& tensor) { return static_cast<float*>(tensor.raw_data()); }
const float* Floats(const Tensor& tensor) {
  return static_cast<const float*>(tensor.raw_data());
}

// `tensor`, or a copy of it on `device` when it lives elsewhere (a GPU
// reading another GPU's value); `local` holds the copy.
absl::StatusOr<const Tensor*> OnDevice(Device* device, const Tensor& tensor,
                                       const Tensor& near, Tensor* local) {
  if (tensor.allocator() == near.allocator()) return &tensor;
  ASSIGN_OR_RETURN(Tensor copy, device->CopyFrom(tensor));
  *local = std::move(copy);
  return local;
}

// to[i] += from[i] for n floats in host memory. Raw pointers:
// Span::operator[] is bound-checked in Debian's hardened Abseil, which would
// keep the loop from being vectorised.
void AddFloats(float* to, const float* from, int64_t n) {
  for (int64_t i = 0; i < n; ++i) to[i] += from[i];
}

// sum += value, on sum's device (`device`).
absl::Status AddInto(Device* device, Tensor& sum, const Tensor& value) {
  if (OnHost(sum) && OnHost(value)) {
    AddFloats(sum.flat<float>().data(), value.flat<float>().data(),
              sum.num_elements());
    return absl::OkStatus();
  }
  Tensor local;
  ASSIGN_OR_RETURN(const Tensor* near, OnDevice(device, value, sum, &local));
  return device->math().Axpy(sum.num_elements(), 1.0f, Floats(*near),
                             Floats(sum));
}

absl::Status Scale(Device* device, Tensor& values, float factor) {
  if (OnHost(values)) {
    for (float& v : values.flat<float>()) v *= factor;
    return absl::OkStatus();
  }
  return device->math().Scale(values.num_elements(), factor, Floats(values));
}

// The replicas' values of one in-replica all-reduce: every replica puts its
// own in its slot, then everyone meets and checks the same things, so all
// return the same error.
absl::Status ExchangeValues(ReplicaGroup& group, int replica, Tensor& value,
                            std::vector<Tensor*>* values) {
  // The group does not own the tensor: the slot only points at it.
  group.Put(replica, std::shared_ptr<void>(&value, [](void*) {}));
  RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
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

void ReplicaOutcomes::Set(int replica, absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (static_cast<int>(statuses_.size()) <= replica) {
    statuses_.resize(replica + 1);
  }
  statuses_[replica] = std::move(status);
}

absl::Status ReplicaOutcomes::First(int num_replicas) const {
  absl::MutexLock lock(&mu_);
  for (int r = 0; r < num_replicas && r < static_cast<int>(statuses_.size());
       ++r) {
    if (!statuses_[r].ok()) return statuses_[r];
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> CrossDeviceOps::Reduce(
    ReduceOp op, absl::Span<const Tensor* const> per_replica,
    Device* destination) {
  RETURN_IF_ERROR(CheckSameShape("reduce", per_replica));
  // Summed on the host; values in device memory are read back first.
  absl::StatusOr<Tensor> sum =
      Tensor::Zeros(DType::kFloat32, per_replica[0]->shape(), CpuAllocator());
  RETURN_IF_ERROR(sum.status());
  for (const Tensor* value : per_replica) {
    ASSIGN_OR_RETURN(HostFloats host, HostFloats::Read(*value));
    // CheckSameShape made the counts equal.
    AddFloats(sum->flat<float>().data(), host.values().data(),
              sum->num_elements());
  }
  if (op == ReduceOp::kMean) {
    for (float& v : sum->flat<float>()) v *= 1.0f / per_replica.size();
  }
  if (IsCpu(destination)) return sum;
  return destination->CopyFrom(*sum);
}

absl::StatusOr<std::vector<Tensor>> CrossDeviceOps::BatchReduce(
    ReduceOp op, absl::Span<const std::vector<const Tensor*>> values,
    Device* destination) {
  std::vector<Tensor> reduced;
  for (const std::vector<const Tensor*>& per_replica : values) {
    ASSIGN_OR_RETURN(Tensor one, Reduce(op, per_replica, destination));
    reduced.push_back(std::move(one));
  }
  return reduced;
}

absl::StatusOr<std::vector<Tensor>> CrossDeviceOps::Broadcast(
    const Tensor& value, absl::Span<Device* const> devices) {
  std::vector<Tensor> copies;
  for (Device* device : devices) {
    ASSIGN_OR_RETURN(Tensor copy, device->CopyFrom(value));
    copies.push_back(std::move(copy));
  }
  return copies;
}

absl::Status ReductionToOneDevice::AllReduce(ReplicaGroup& group, int replica,
                                             ReduceOp op, Tensor& value) {
  std::vector<Tensor*> values;
  RETURN_IF_ERROR(ExchangeValues(group, replica, value, &values));
  const int n = group.num_replicas();
  Device* device = group.device(replica);
  // A replica that fails still meets the others at every barrier, and all
  // return an error.
  absl::Status status;
  // Replica 0's device is the one device everything is reduced on.
  if (replica == 0) {
    for (int r = 1; r < n && status.ok(); ++r) {
      status = AddInto(device, value, *values[r]);
    }
    if (status.ok() && op == ReduceOp::kMean) {
      status = Scale(device, value, 1.0f / n);
    }
  }
  RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
  if (replica != 0) status.Update(CopyInto(*device, *values[0], value));
  outcomes_.Set(replica, status);
  // Replica 0's buffer stays untouched until everyone copied it.
  RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
  return outcomes_.First(n);
}

absl::Status HierarchicalCopyAllReduce::AllReduce(ReplicaGroup& group,
                                                  int replica, ReduceOp op,
                                                  Tensor& value) {
  std::vector<Tensor*> values;
  RETURN_IF_ERROR(ExchangeValues(group, replica, value, &values));
  const int n = group.num_replicas();
  const int leader = replica / group_size_ * group_size_;
  const int group_end = std::min(leader + group_size_, n);
  Device* device = group.device(replica);
  // A replica that fails still meets the others at every barrier.
  absl::Status status;
  // 1. Each group's leader sums its group (the groups in parallel).
  if (replica == leader) {
    for (int r = leader + 1; r < group_end && status.ok(); ++r) {
      status = AddInto(device, value, *values[r]);
    }
  }
  RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
  // 2. Replica 0 (leader of group 0) sums the group sums.
  if (replica == 0) {
    for (int r = group_size_; r < n && status.ok(); r += group_size_) {
      status = AddInto(device, value, *values[r]);
    }
    if (status.ok() && op == ReduceOp::kMean) {
      status = Scale(device, value, 1.0f / n);
    }
  }
  RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
  // 3. The other leaders fetch the result, then their groups from them.
  if (replica == leader && replica != 0) {
    status.Update(CopyInto(*device, *values[0], value));
  }
  RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
  if (replica != leader) {
    status.Update(CopyInto(*device, *values[leader], value));
  }
  outcomes_.Set(replica, status);
  RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
  return outcomes_.First(n);
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
  // All GPUs: NCCL. A mix of kinds cannot use it.
  absl::StatusOr<std::unique_ptr<CrossDeviceOps>> nccl =
      CreateNcclAllReduce(devices);
  if (nccl.ok()) return *std::move(nccl);
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
  if (name == "nccl") return CreateNcclAllReduce(devices);
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
      "cpu_all_reduce, nccl"));
}

}  // namespace distrt
