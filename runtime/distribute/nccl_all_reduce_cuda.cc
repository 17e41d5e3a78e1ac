// NcclAllReduce for binaries built with --config=cuda.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "runtime/distribute/nccl_all_reduce.h"
#include "runtime/gpu/cuda_status.h"
#include "runtime/gpu/gpu_device.h"

namespace distrt {
namespace {

class NcclAllReduce final : public CrossDeviceOps {
 public:
  explicit NcclAllReduce(std::vector<gpu::GpuDevice*> gpus)
      : gpus_(std::move(gpus)) {}
  ~NcclAllReduce() override {
    for (ncclComm_t comm : comms_) (void)ncclCommDestroy(comm);
  }

  std::string name() const override { return "nccl"; }

  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override {
    // A value in host memory (an AssignAdd's delta) is summed on the host;
    // every replica of one all-reduce passes the same kind.
    if (!value.is_null() && value.allocator()->host_accessible()) {
      return on_host_.AllReduce(group, replica, op, value);
    }
    group.Put(replica, std::shared_ptr<void>(&value, [](void*) {}));
    if (absl::Status s = group.barrier().Wait("all-reduce"); !s.ok()) return s;
    // Replica 0 checks and queues for everyone; the others wait for it, so
    // nothing they queue afterwards can run before the reduction.
    absl::Status status;
    if (replica == 0) status = QueueAllReduce(group, op);
    if (absl::Status s = group.barrier().Wait("all-reduce"); !s.ok()) return s;
    if (replica != 0) {
      absl::MutexLock lock(&mutex_);
      status = last_status_;
    } else {
      absl::MutexLock lock(&mutex_);
      last_status_ = status;
    }
    // Nobody may start the next all-reduce (and overwrite the status)
    // before everyone has read this one's.
    if (absl::Status s = group.barrier().Wait("all-reduce"); !s.ok()) return s;
    return status;
  }

 private:
  absl::Status QueueAllReduce(ReplicaGroup& group, ReduceOp op) {
    const int n = group.num_replicas();
    if (n != static_cast<int>(gpus_.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("nccl all-reduce made for ", gpus_.size(),
                       " GPUs was called by ", n, " replicas"));
    }
    const Tensor& first = *group.Get<Tensor>(0);
    for (int r = 0; r < n; ++r) {
      const Tensor& t = *group.Get<Tensor>(r);
      if (t.is_null() || t.dtype() != DType::kFloat32 ||
          t.shape() != first.shape()) {
        return absl::InvalidArgumentError(
            absl::StrCat("all-reduce: replica ", r, " has ", DescribeTensor(t),
                         ", replica 0 has ", DescribeTensor(first),
                         " (all must be float32 of one shape)"));
      }
      if (gpu::GpuDeviceOfAllocator(t.allocator()) != gpus_[r]) {
        return absl::InvalidArgumentError(
            absl::StrCat("nccl all-reduce: replica ", r,
                         "'s tensor is not in the memory "
                         "of ",
                         gpus_[r]->name().ToString()));
      }
    }
    if (first.num_elements() == 0) return absl::OkStatus();
    if (comms_.empty()) {
      // ncclCommInitAll sets the calling thread's GPU; give it back after.
      int current = -1;
      if (cudaGetDevice(&current) != cudaSuccess) current = -1;
      std::vector<int> ordinals;
      for (gpu::GpuDevice* gpu : gpus_) ordinals.push_back(gpu->cuda_ordinal());
      comms_.resize(n);
      const ncclResult_t made =
          ncclCommInitAll(comms_.data(), n, ordinals.data());
      if (current >= 0) (void)cudaSetDevice(current);
      if (made != ncclSuccess) {
        comms_.clear();
        return gpu::NcclStatus(made, "ncclCommInitAll", __FILE__, __LINE__);
      }
    }
    const ncclRedOp_t nccl_op = op == ReduceOp::kMean ? ncclAvg : ncclSum;
    // One thread queues for every GPU: each communicator knows its GPU, so
    // no cudaSetDevice is needed inside the group.
    DISTRT_RETURN_IF_NCCL_ERROR(ncclGroupStart());
    absl::Status queued;
    for (int r = 0; r < n && queued.ok(); ++r) {
      Tensor& t = *group.Get<Tensor>(r);
      queued = gpu::NcclStatus(
          ncclAllReduce(t.raw_data(), t.raw_data(), t.num_elements(),
                        ncclFloat32, nccl_op, comms_[r], gpus_[r]->stream()),
          "ncclAllReduce", __FILE__, __LINE__);
    }
    // The group must be closed whatever happened inside it.
    absl::Status ended =
        gpu::NcclStatus(ncclGroupEnd(), "ncclGroupEnd", __FILE__, __LINE__);
    if (queued.ok() && ended.ok()) return absl::OkStatus();
    // Some GPUs may have been given their part and would wait for the
    // others for ever: abort the communicators, which ends those kernels,
    // and make new ones at the next all-reduce.
    for (ncclComm_t comm : comms_) (void)ncclCommAbort(comm);
    comms_.clear();
    return queued.ok() ? ended : queued;
  }

  const std::vector<gpu::GpuDevice*> gpus_;
  HierarchicalCopyAllReduce on_host_;
  // Used by replica 0's thread only, between barriers.
  std::vector<ncclComm_t> comms_;
  absl::Mutex mutex_;
  absl::Status last_status_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateNcclAllReduce(
    absl::Span<Device* const> devices) {
  std::vector<gpu::GpuDevice*> gpus;
  for (Device* device : devices) {
    auto* gpu = dynamic_cast<gpu::GpuDevice*>(device);
    if (gpu == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("cross-device ops \"nccl\" needs GPU devices; ",
                       device->name().ToString(), " is not one"));
    }
    for (gpu::GpuDevice* other : gpus) {
      if (other->cuda_ordinal() == gpu->cuda_ordinal()) {
        return absl::InvalidArgumentError(
            absl::StrCat("cross-device ops \"nccl\": CUDA device ",
                         gpu->cuda_ordinal(), " is listed twice"));
      }
    }
    gpus.push_back(gpu);
  }
  return std::make_unique<NcclAllReduce>(std::move(gpus));
}

}  // namespace distrt
