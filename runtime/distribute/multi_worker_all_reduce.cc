#include "runtime/distribute/multi_worker_all_reduce.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/device/copy_into.h"
#include "runtime/tensor/host_floats.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// What replica 0 hands the other local replicas after the cross-worker
// step: where the result is, and whether it worked.
struct CrossWorkerResult {
  const Tensor* value = nullptr;
  absl::Status status;
};

}  // namespace

MultiWorkerAllReduce::MultiWorkerAllReduce(
    std::unique_ptr<CrossDeviceOps> local, CrossWorkerCollective* workers,
    int replicas_per_worker, int64_t bucket_bytes)
    : local_(std::move(local)),
      workers_(workers),
      replicas_per_worker_(std::max(1, replicas_per_worker)),
      bucket_elements_(std::max<int64_t>(
          1, bucket_bytes / static_cast<int64_t>(sizeof(float)))) {}

std::string MultiWorkerAllReduce::name() const {
  return absl::StrCat(local_->name(), " then across ", workers_->size(),
                      " workers");
}

int MultiWorkerAllReduce::total_replicas() const {
  return replicas_per_worker_ * workers_->size();
}

absl::Status MultiWorkerAllReduce::SumOverWorkers(absl::Span<float> values) {
  for (size_t start = 0; start < values.size();
       start += static_cast<size_t>(bucket_elements_)) {
    const size_t length =
        std::min(values.size() - start, static_cast<size_t>(bucket_elements_));
    if (absl::Status s = workers_->AllReduceSum(values.subspan(start, length));
        !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("all-reduce across workers: ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status MultiWorkerAllReduce::OverWorkers(ReduceOp op, Tensor& value) {
  // Gloo reduces host memory: a GPU's value goes through the host.
  ASSIGN_OR_RETURN(HostFloats host, HostFloats::Edit(value));
  absl::Span<float> values = host.mutable_values();
  RETURN_IF_ERROR(SumOverWorkers(values));
  if (op == ReduceOp::kMean) {
    const float scale = 1.0f / static_cast<float>(total_replicas());
    for (float& v : values) v *= scale;
  }
  return host.Commit();
}

absl::Status MultiWorkerAllReduce::AllReduce(ReplicaGroup& group, int replica,
                                             ReduceOp op, Tensor& value) {
  RETURN_IF_ERROR(local_->AllReduce(group, replica, ReduceOp::kSum, value));
  // Every local replica now holds the local sum; replica 0 takes it across.
  // Its slot is free: the local all-reduce has met for the last time.
  if (replica == 0) {
    auto result = std::make_shared<CrossWorkerResult>();
    result->value = &value;
    result->status = OverWorkers(op, value);
    group.Put(0, std::move(result));
  }
  RETURN_IF_ERROR(group.barrier().Wait("all-reduce across workers"));
  const CrossWorkerResult& result = *group.Get<CrossWorkerResult>(0);
  absl::Status status = result.status;
  if (replica != 0 && status.ok()) {
    status = CopyInto(*group.device(replica), *result.value, value);
  }
  // Replica 0 must not change its value (nor its slot) while others copy.
  if (absl::Status s = group.barrier().Wait("all-reduce across workers");
      !s.ok() && status.ok()) {
    return s;
  }
  return status;
}

absl::StatusOr<Tensor> MultiWorkerAllReduce::Reduce(
    ReduceOp op, absl::Span<const Tensor* const> per_replica,
    Device* destination) {
  absl::StatusOr<Tensor> sum =
      local_->Reduce(ReduceOp::kSum, per_replica, destination);
  RETURN_IF_ERROR(sum.status());
  RETURN_IF_ERROR(OverWorkers(op, *sum));
  return sum;
}

}  // namespace distrt
