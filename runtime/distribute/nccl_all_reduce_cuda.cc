// NcclAllReduce for binaries built with --config=cuda.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/distribute/hierarchical_copy_all_reduce.h"
#include "runtime/distribute/nccl_all_reduce.h"
#include "runtime/gpu/cuda_status.h"
#include "runtime/gpu/gpu_device.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

// The ncclUniqueId that rank 0 made, sent to every worker over the group
// they formed at the rendezvous, with a word saying whether rank 0 made one
// (so that nobody waits in ncclCommInitRank for a rank 0 that failed).
absl::StatusOr<ncclUniqueId> ShareUniqueId(CrossWorkerCollective& workers) {
  ncclUniqueId id{};
  constexpr size_t kWords =
      (sizeof(id) + sizeof(int64_t) - 1) / sizeof(int64_t);
  std::vector<int64_t> words(1 + kWords, 0);
  absl::Status made;
  if (workers.rank() == 0) {
    made = gpu::NcclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId", __FILE__,
                           __LINE__);
    words[0] = made.ok() ? 1 : 0;
    std::memcpy(&words[1], &id, sizeof(id));
  }
  RETURN_IF_ERROR(workers.Broadcast(absl::MakeSpan(words), 0));
  RETURN_IF_ERROR(made);
  if (words[0] != 1) {
    return absl::UnavailableError(
        "worker 0 could not make the NCCL id of the workers' communicator");
  }
  std::memcpy(&id, &words[1], sizeof(id));
  return id;
}

class NcclAllReduce final : public CrossDeviceOps {
 public:
  // Without `workers`, over the local GPUs (ncclCommInitAll); with them,
  // over every GPU of every worker, rank rank * n + r for local GPU r.
  // `host` does what NCCL does not: values in host memory (an AssignAdd's
  // delta) and cross-replica Reduce.
  NcclAllReduce(std::vector<gpu::GpuDevice*> gpus,
                CrossWorkerCollective* workers,
                std::unique_ptr<CrossDeviceOps> host, absl::Duration timeout)
      : gpus_(std::move(gpus)),
        workers_(workers),
        host_(std::move(host)),
        timeout_(timeout) {}
  ~NcclAllReduce() override {
    for (ncclComm_t comm : comms_) (void)ncclCommDestroy(comm);
    for (size_t r = 0; r < done_.size(); ++r) {
      if (gpus_[r]->Activate().ok()) (void)cudaEventDestroy(done_[r]);
    }
  }

  std::string name() const override {
    return workers_ == nullptr ? "nccl" : "nccl_multi_worker";
  }

  absl::StatusOr<Tensor> Reduce(ReduceOp op,
                                absl::Span<const Tensor* const> per_replica,
                                Device* destination) override {
    return host_->Reduce(op, per_replica, destination);
  }
  absl::StatusOr<std::vector<Tensor>> BatchReduce(
      ReduceOp op, absl::Span<const std::vector<const Tensor*>> values,
      Device* destination) override {
    return host_->BatchReduce(op, values, destination);
  }

  absl::Status AllReduce(ReplicaGroup& group, int replica, ReduceOp op,
                         Tensor& value) override {
    // Every replica of one all-reduce passes the same kind of memory.
    if (!value.is_null() && value.allocator()->host_accessible()) {
      return host_->AllReduce(group, replica, op, value);
    }
    group.Put(replica, std::shared_ptr<void>(&value, [](void*) {}));
    RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
    // Replica 0 checks and queues for everyone; the others wait for it, so
    // nothing they queue afterwards can run before the reduction.
    absl::Status status;
    if (replica == 0) {
      status = workers_ == nullptr ? QueueAllReduce(group, op)
                                   : AcrossWorkers(group, op);
    }
    RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
    if (replica != 0) {
      absl::MutexLock lock(&mutex_);
      status = last_status_;
    } else {
      absl::MutexLock lock(&mutex_);
      last_status_ = status;
    }
    // Nobody may start the next all-reduce (and overwrite the status)
    // before everyone has read this one's.
    RETURN_IF_ERROR(group.barrier().Wait("all-reduce"));
    return status;
  }

 private:
  // The all-reduce over every worker's GPUs, waited for within the
  // timeout; any failure is final (see the header).
  absl::Status AcrossWorkers(ReplicaGroup& group, ReduceOp op) {
    RETURN_IF_ERROR(failed_);
    absl::Status status = QueueAllReduce(group, op);
    if (status.ok()) status = WaitForAllReduce();
    if (!status.ok()) {
      failed_ = status;
      AbortCommunicators();
    }
    return status;
  }

  void AbortCommunicators() {
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) (void)ncclCommAbort(comm);
    }
    comms_.clear();
  }

  absl::Status DeadlineExceeded(absl::string_view what) const {
    return absl::DeadlineExceededError(absl::StrCat(
        what, " did not finish within ", absl::FormatDuration(timeout_),
        " (the collective timeout): a worker is lost, stopped, or out of "
        "step; the NCCL communicator is aborted"));
  }

  // Until no communicator is still setting up or queueing (non-blocking
  // communicators report ncclInProgress meanwhile), or an error.
  absl::Status WaitForCommunicators(absl::Time deadline,
                                    absl::string_view what) {
    for (;;) {
      bool pending = false;
      for (ncclComm_t comm : comms_) {
        ncclResult_t state = ncclSuccess;
        DISTRT_RETURN_IF_NCCL_ERROR(ncclCommGetAsyncError(comm, &state));
        if (state == ncclInProgress) {
          pending = true;
        } else if (state != ncclSuccess) {
          return gpu::NcclStatus(state, "ncclCommGetAsyncError", __FILE__,
                                 __LINE__);
        }
      }
      if (!pending) return absl::OkStatus();
      if (absl::Now() > deadline) return DeadlineExceeded(what);
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

  // Until every GPU has finished the queued all-reduce.
  absl::Status WaitForAllReduce() {
    const absl::Time deadline = absl::Now() + timeout_;
    RETURN_IF_ERROR(WaitForCommunicators(deadline,
                                         "queueing an NCCL "
                                         "all-reduce"));
    if (done_.empty()) {
      done_.resize(gpus_.size());
      for (size_t r = 0; r < gpus_.size(); ++r) {
        RETURN_IF_ERROR(gpus_[r]->Activate());
        DISTRT_RETURN_IF_CUDA_ERROR(
            cudaEventCreateWithFlags(&done_[r], cudaEventDisableTiming));
      }
    }
    for (size_t r = 0; r < gpus_.size(); ++r) {
      RETURN_IF_ERROR(gpus_[r]->Activate());
      DISTRT_RETURN_IF_CUDA_ERROR(
          cudaEventRecord(done_[r], gpus_[r]->stream()));
    }
    for (size_t r = 0; r < gpus_.size(); ++r) {
      for (;;) {
        const cudaError_t state = cudaEventQuery(done_[r]);
        if (state == cudaSuccess) break;
        if (state != cudaErrorNotReady) {
          return gpu::CudaStatus(state, "cudaEventQuery", __FILE__, __LINE__);
        }
        ncclResult_t nccl = ncclSuccess;
        (void)ncclCommGetAsyncError(comms_[r], &nccl);
        if (nccl != ncclSuccess && nccl != ncclInProgress) {
          return gpu::NcclStatus(nccl, "ncclCommGetAsyncError", __FILE__,
                                 __LINE__);
        }
        if (absl::Now() > deadline) {
          return DeadlineExceeded("an NCCL all-reduce across workers");
        }
        absl::SleepFor(absl::Microseconds(100));
      }
    }
    return absl::OkStatus();
  }

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
      // Made on first use (every worker reaches it at the same step); NCCL
      // set-up changes the calling thread's GPU, which is given back after.
      int current = -1;
      if (cudaGetDevice(&current) != cudaSuccess) current = -1;
      absl::Status made = MakeCommunicators(n);
      if (current >= 0) (void)cudaSetDevice(current);
      if (!made.ok()) {
        comms_.clear();
        return made;
      }
    }
    const ncclRedOp_t nccl_op = op == ReduceOp::kMean ? ncclAvg : ncclSum;
    // One thread queues for every GPU: each communicator knows its GPU, so
    // no cudaSetDevice is needed inside the group.
    DISTRT_RETURN_IF_NCCL_ERROR(ncclGroupStart());
    absl::Status queued;
    for (int r = 0; r < n && queued.ok(); ++r) {
      Tensor& t = *group.Get<Tensor>(r);
      const ncclResult_t result =
          ncclAllReduce(t.raw_data(), t.raw_data(), t.num_elements(),
                        ncclFloat32, nccl_op, comms_[r], gpus_[r]->stream());
      queued =
          result == ncclInProgress
              ? absl::OkStatus()
              : gpu::NcclStatus(result, "ncclAllReduce", __FILE__, __LINE__);
    }
    // The group must be closed whatever happened inside it. Non-blocking
    // communicators (across workers) may still be queueing: in progress.
    const ncclResult_t group_end = ncclGroupEnd();
    absl::Status ended =
        group_end == ncclInProgress
            ? absl::OkStatus()
            : gpu::NcclStatus(group_end, "ncclGroupEnd", __FILE__, __LINE__);
    if (queued.ok() && ended.ok()) return absl::OkStatus();
    // Some GPUs may have been given their part and would wait for the
    // others for ever: abort the communicators, which ends those kernels,
    // and make new ones at the next all-reduce.
    for (ncclComm_t comm : comms_) (void)ncclCommAbort(comm);
    comms_.clear();
    return queued.ok() ? ended : queued;
  }

  absl::Status MakeCommunicators(int n) {
    comms_.assign(n, nullptr);
    if (workers_ == nullptr) {
      std::vector<int> ordinals;
      for (gpu::GpuDevice* gpu : gpus_) ordinals.push_back(gpu->cuda_ordinal());
      return gpu::NcclStatus(ncclCommInitAll(comms_.data(), n, ordinals.data()),
                             "ncclCommInitAll", __FILE__, __LINE__);
    }
    ASSIGN_OR_RETURN(ncclUniqueId id, ShareUniqueId(*workers_));
    // Every GPU usable before the group: leaving it half-way would leave
    // the other workers waiting for ranks that never come.
    for (gpu::GpuDevice* gpu : gpus_) {
      RETURN_IF_ERROR(gpu->Activate());
    }
    const absl::Time deadline = absl::Now() + timeout_;
    const int world = workers_->size() * n;
    // Non-blocking: set-up is polled, so that a worker that never joins
    // ends in DEADLINE_EXCEEDED instead of a hang.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    DISTRT_RETURN_IF_NCCL_ERROR(ncclGroupStart());
    absl::Status status;
    for (int r = 0; r < n && status.ok(); ++r) {
      (void)cudaSetDevice(gpus_[r]->cuda_ordinal());
      const ncclResult_t result = ncclCommInitRankConfig(
          &comms_[r], world, id, workers_->rank() * n + r, &config);
      if (result != ncclInProgress) {
        status = gpu::NcclStatus(result, "ncclCommInitRankConfig", __FILE__,
                                 __LINE__);
      }
    }
    const ncclResult_t group_end = ncclGroupEnd();
    if (status.ok() && group_end != ncclInProgress) {
      status = gpu::NcclStatus(group_end, "ncclGroupEnd", __FILE__, __LINE__);
    }
    if (status.ok()) {
      status = WaitForCommunicators(
          deadline, "setting up the NCCL communicator across workers");
    }
    if (!status.ok()) AbortCommunicators();
    return status;
  }

  const std::vector<gpu::GpuDevice*> gpus_;
  CrossWorkerCollective* const workers_;
  const std::unique_ptr<CrossDeviceOps> host_;
  const absl::Duration timeout_;
  // Across workers: the first failure, returned by every later all-reduce.
  absl::Status failed_;
  std::vector<cudaEvent_t> done_;  // per GPU, across workers
  // Used by replica 0's thread only, between barriers.
  std::vector<ncclComm_t> comms_;
  absl::Mutex mutex_;
  absl::Status last_status_ ABSL_GUARDED_BY(mutex_);
};

// The GPUs of `devices`, or INVALID_ARGUMENT naming one that is not a GPU
// or a GPU listed twice.
absl::StatusOr<std::vector<gpu::GpuDevice*>> GpusOf(
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
  return gpus;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateNcclAllReduce(
    absl::Span<Device* const> devices) {
  ASSIGN_OR_RETURN(std::vector<gpu::GpuDevice*> gpus, GpusOf(devices));
  return std::make_unique<NcclAllReduce>(
      std::move(gpus), /*workers=*/nullptr,
      std::make_unique<HierarchicalCopyAllReduce>(), absl::InfiniteDuration());
}

absl::StatusOr<std::unique_ptr<CrossDeviceOps>> CreateMultiWorkerNcclAllReduce(
    absl::Span<Device* const> devices, CrossWorkerCollective* workers,
    std::unique_ptr<CrossDeviceOps> host, absl::Duration timeout) {
  ASSIGN_OR_RETURN(std::vector<gpu::GpuDevice*> gpus, GpusOf(devices));
  return std::make_unique<NcclAllReduce>(std::move(gpus), workers,
                                         std::move(host), timeout);
}

}  // namespace distrt
