#ifndef DISTRT_RUNTIME_GPU_GPU_DEVICE_H_
#define DISTRT_RUNTIME_GPU_GPU_DEVICE_H_

// GpuDevice: one CUDA GPU as a Device (/device:GPU:<id>). It owns
//
// - one compute stream, on which every kernel, cuBLAS call, copy and NCCL
//   call touching the device's memory is queued, so their order is the
//   order of the calls and the caching allocator may reuse freed blocks;
// - a caching allocator of device memory (no cudaMalloc/cudaFree per step);
// - a cuBLAS handle bound to the stream, behind math() (CudaMath);
// - a pinned host staging buffer, through which host <-> device copies go
//   in chunks, two halves in flight at once: pageable host memory cannot be
//   copied asynchronously, and pinning every push/pull buffer would cost
//   more than the copy.
//
// Methods may be called from any thread; copies through the staging buffer
// are serialised. Built only with --config=cuda.

#include <cuda_runtime_api.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/device/device.h"
#include "runtime/gpu/caching_allocator.h"
#include "runtime/kernels/device_math.h"

namespace distrt::gpu {

class GpuMemory;

class GpuDevice final : public Device {
 public:
  // The GPU CUDA numbers `cuda_ordinal` (after CUDA_VISIBLE_DEVICES), named
  // /device:GPU:<id> of `task`. The error names the CUDA call that failed.
  static absl::StatusOr<std::unique_ptr<GpuDevice>> Create(
      const DeviceName& task, int id, int cuda_ordinal);
  ~GpuDevice() override;

  Allocator* allocator() override;
  DeviceMath& math() override { return *math_; }
  absl::StatusOr<Tensor> CopyFrom(const Tensor& source) override;
  absl::Status Synchronize() override;
  absl::Status MakeCurrent() override { return Activate(); }

  int cuda_ordinal() const { return cuda_ordinal_; }
  cudaStream_t stream() const { return stream_; }
  CachingAllocatorStats memory_stats() const;

  // Between host memory and this device's memory, through the staging
  // buffer; both return once the bytes are at `to`.
  absl::Status CopyToHost(const void* from, void* to, size_t bytes);
  absl::Status CopyFromHost(const void* from, void* to, size_t bytes);
  // Makes the calling thread use this GPU (cudaSetDevice).
  absl::Status Activate() const;

 private:
  GpuDevice(const DeviceName& task, int id, int cuda_ordinal);
  absl::Status Init();
  // Copies through the staging buffer in chunks; `to_device` says which way.
  absl::Status StagedCopy(const void* from, void* to, size_t bytes,
                          bool to_device);

  const int cuda_ordinal_;
  cudaStream_t stream_ = nullptr;
  void* cublas_ = nullptr;  // cublasHandle_t, kept out of this header
  std::unique_ptr<GpuMemory> memory_;
  std::unique_ptr<DeviceMath> math_;

  absl::Mutex staging_mutex_;
  void* staging_ = nullptr;  // pinned, kStagingBytes
  cudaEvent_t staging_done_[2] = {nullptr, nullptr};
};

// The GPU whose caching allocator `allocator` is, or nullptr for any other
// allocator (host memory).
GpuDevice* GpuDeviceOfAllocator(Allocator* allocator);

}  // namespace distrt::gpu

#endif  // DISTRT_RUNTIME_GPU_GPU_DEVICE_H_
