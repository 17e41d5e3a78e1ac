#include "runtime/gpu/gpu_device.h"

#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/gpu/cuda_math.h"
#include "runtime/gpu/cuda_status.h"
#include "runtime/util/status_macros.h"

namespace distrt::gpu {
namespace {

// Two halves of 4 MiB: large enough that a copy's fixed cost is small next
// to its bytes (PCIe moves 4 MiB in ~0.2 ms), small enough to pin cheaply.
constexpr size_t kStagingBytes = size_t{8} << 20;
constexpr size_t kStagingHalf = kStagingBytes / 2;

DeviceName GpuDeviceName(const DeviceName& task, int id) {
  DeviceName name = task;
  name.type = "GPU";
  name.id = id;
  return name;
}

// Runs on GPU `ordinal` for its lifetime, then gives the calling thread
// back the GPU it had: allocations may come from any thread (a peer's copy,
// a tensor freed elsewhere), which must not find its current GPU changed.
class OnGpu {
 public:
  explicit OnGpu(int ordinal) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    ok_ = cudaSetDevice(ordinal) == cudaSuccess;
  }
  ~OnGpu() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  bool ok() const { return ok_; }

 private:
  int previous_ = -1;
  bool ok_ = false;
};

// cudaMalloc / cudaFree on one GPU.
class CudaRawMemory final : public RawMemory {
 public:
  explicit CudaRawMemory(int ordinal) : ordinal_(ordinal) {}
  void* Allocate(size_t bytes) override {
    OnGpu on(ordinal_);
    void* ptr = nullptr;
    const cudaError_t result =
        on.ok() ? cudaMalloc(&ptr, bytes) : cudaErrorInvalidDevice;
    if (result != cudaSuccess) {
      // The caller only learns "out of memory"; any other cause (a lost
      // device, a crashed kernel's sticky error) is said here, on each failed
      // call, so that the RESOURCE_EXHAUSTED that follows is not taken
      // at its word.
      if (result != cudaErrorMemoryAllocation) {
        const absl::Status status =
            CudaStatus(result, "cudaMalloc", __FILE__, __LINE__);
        std::fprintf(stderr, "CUDA device %d, %zu bytes: %s\n", ordinal_, bytes,
                     std::string(status.message()).c_str());
      }
      // Out of memory is not sticky; clear it so later calls do not see it.
      // A sticky error shows again at the next checked call.
      (void)cudaGetLastError();
      return nullptr;
    }
    return ptr;
  }
  void Free(void* ptr) override {
    OnGpu on(ordinal_);
    (void)cudaFree(ptr);
  }

 private:
  const int ordinal_;
};

}  // namespace

// The device's memory: cached blocks that only the device can read; the host
// reaches them through the device's staged copies.
class GpuMemory final : public CachingAllocator {
 public:
  explicit GpuMemory(GpuDevice* device)
      : CachingAllocator(
            absl::StrCat("GPU:", device->id(), " (CUDA device ",
                         device->cuda_ordinal(), ")"),
            std::make_unique<CudaRawMemory>(device->cuda_ordinal())),
        device_(device) {}

  GpuDevice* device() const { return device_; }

  bool host_accessible() const override { return false; }
  absl::Status CopyToHost(const void* from, void* to, size_t bytes) override {
    return device_->CopyToHost(from, to, bytes);
  }
  absl::Status CopyFromHost(const void* from, void* to, size_t bytes) override {
    return device_->CopyFromHost(from, to, bytes);
  }
  absl::Status CopyWithin(const void* from, void* to, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    RETURN_IF_ERROR(device_->Activate());
    DISTRT_RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(
        to, from, bytes, cudaMemcpyDeviceToDevice, device_->stream()));
    return absl::OkStatus();
  }
  absl::Status SetZero(void* to, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    RETURN_IF_ERROR(device_->Activate());
    DISTRT_RETURN_IF_CUDA_ERROR(
        cudaMemsetAsync(to, 0, bytes, device_->stream()));
    return absl::OkStatus();
  }

 private:
  GpuDevice* const device_;
};

GpuDevice* GpuDeviceOfAllocator(Allocator* allocator) {
  auto* memory = dynamic_cast<GpuMemory*>(allocator);
  return memory == nullptr ? nullptr : memory->device();
}

GpuDevice::GpuDevice(const DeviceName& task, int id, int cuda_ordinal)
    : Device(GpuDeviceName(task, id)), cuda_ordinal_(cuda_ordinal) {}

absl::StatusOr<std::unique_ptr<GpuDevice>> GpuDevice::Create(
    const DeviceName& task, int id, int cuda_ordinal) {
  std::unique_ptr<GpuDevice> device(new GpuDevice(task, id, cuda_ordinal));
  if (absl::Status s = device->Init(); !s.ok()) {
    return absl::Status(
        s.code(),
        absl::StrCat("setting up ", device->name().ToString(), " (CUDA device ",
                     cuda_ordinal, "): ", s.message()));
  }
  return device;
}

absl::Status GpuDevice::Activate() const {
  DISTRT_RETURN_IF_CUDA_ERROR(cudaSetDevice(cuda_ordinal_));
  return absl::OkStatus();
}

absl::Status GpuDevice::Init() {
  RETURN_IF_ERROR(Activate());
  DISTRT_RETURN_IF_CUDA_ERROR(
      cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  cublasHandle_t cublas = nullptr;
  DISTRT_RETURN_IF_CUBLAS_ERROR(cublasCreate(&cublas));
  cublas_ = cublas;
  DISTRT_RETURN_IF_CUBLAS_ERROR(cublasSetStream(cublas, stream_));
  DISTRT_RETURN_IF_CUDA_ERROR(
      cudaHostAlloc(&staging_, kStagingBytes, cudaHostAllocPortable));
  for (cudaEvent_t& event : staging_done_) {
    DISTRT_RETURN_IF_CUDA_ERROR(
        cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }
  memory_ = std::make_unique<GpuMemory>(this);
  math_ = std::make_unique<CudaMath>(stream_, cublas);
  return absl::OkStatus();
}

GpuDevice::~GpuDevice() {
  // Nothing may still run on the stream when its memory goes back.
  (void)cudaSetDevice(cuda_ordinal_);
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  math_.reset();
  memory_.reset();
  if (cublas_ != nullptr) {
    (void)cublasDestroy(static_cast<cublasHandle_t>(cublas_));
  }
  for (cudaEvent_t event : staging_done_) {
    if (event != nullptr) (void)cudaEventDestroy(event);
  }
  if (staging_ != nullptr) (void)cudaFreeHost(staging_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

Allocator* GpuDevice::allocator() { return memory_.get(); }

CachingAllocatorStats GpuDevice::memory_stats() const {
  return memory_->stats();
}

absl::Status GpuDevice::Synchronize() {
  RETURN_IF_ERROR(Activate());
  DISTRT_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status GpuDevice::CopyToHost(const void* from, void* to, size_t bytes) {
  return StagedCopy(from, to, bytes, /*to_device=*/false);
}

absl::Status GpuDevice::CopyFromHost(const void* from, void* to, size_t bytes) {
  return StagedCopy(from, to, bytes, /*to_device=*/true);
}

absl::Status GpuDevice::StagedCopy(const void* from, void* to, size_t bytes,
                                   bool to_device) {
  if (bytes == 0) return absl::OkStatus();
  RETURN_IF_ERROR(Activate());
  absl::MutexLock lock(&staging_mutex_);
  const char* source = static_cast<const char*>(from);
  char* destination = static_cast<char*>(to);
  char* staging = static_cast<char*>(staging_);
  const size_t chunks = (bytes + kStagingHalf - 1) / kStagingHalf;
  auto chunk_bytes = [&](size_t chunk) {
    return std::min(kStagingHalf, bytes - chunk * kStagingHalf);
  };
  auto half = [&](size_t chunk) { return staging + chunk % 2 * kStagingHalf; };
  if (to_device) {
    // Host -> staging half -> device, the next half filling while the
    // previous one is on its way.
    for (size_t c = 0; c < chunks; ++c) {
      DISTRT_RETURN_IF_CUDA_ERROR(cudaEventSynchronize(staging_done_[c % 2]));
      std::memcpy(half(c), source + c * kStagingHalf, chunk_bytes(c));
      DISTRT_RETURN_IF_CUDA_ERROR(
          cudaMemcpyAsync(destination + c * kStagingHalf, half(c),
                          chunk_bytes(c), cudaMemcpyHostToDevice, stream_));
      DISTRT_RETURN_IF_CUDA_ERROR(
          cudaEventRecord(staging_done_[c % 2], stream_));
    }
  } else {
    // Device -> staging half, then out to the host while the next chunk
    // comes in.
    for (size_t c = 0; c <= chunks; ++c) {
      if (c < chunks) {
        DISTRT_RETURN_IF_CUDA_ERROR(
            cudaMemcpyAsync(half(c), source + c * kStagingHalf, chunk_bytes(c),
                            cudaMemcpyDeviceToHost, stream_));
        DISTRT_RETURN_IF_CUDA_ERROR(
            cudaEventRecord(staging_done_[c % 2], stream_));
      }
      if (c == 0) continue;
      const size_t done = c - 1;
      DISTRT_RETURN_IF_CUDA_ERROR(
          cudaEventSynchronize(staging_done_[done % 2]));
      std::memcpy(destination + done * kStagingHalf, half(done),
                  chunk_bytes(done));
    }
  }
  for (cudaEvent_t event : staging_done_) {
    DISTRT_RETURN_IF_CUDA_ERROR(cudaEventSynchronize(event));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> GpuDevice::CopyFrom(const Tensor& source) {
  if (source.is_null()) return Tensor();
  absl::StatusOr<Tensor> copy =
      Tensor::Create(source.dtype(), source.shape(), allocator());
  if (!copy.ok() || source.bytes() == 0) return copy;
  Allocator* from = source.allocator();
  if (from->host_accessible()) {
    RETURN_IF_ERROR(
        CopyFromHost(source.raw_data(), copy->raw_data(), source.bytes()));
    return copy;
  }
  GpuDevice* other = GpuDeviceOfAllocator(from);
  if (other == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat("copying a tensor from ", from->name(), " memory to ",
                     name().ToString(), " is not supported"));
  }
  if (other == this) {
    RETURN_IF_ERROR(memory_->CopyWithin(source.raw_data(), copy->raw_data(),
                                        source.bytes()));
    return copy;
  }
  // The source is complete once its stream has run; the copy is complete
  // before the source may be freed and its block reused on the other GPU.
  RETURN_IF_ERROR(other->Synchronize());
  RETURN_IF_ERROR(Activate());
  DISTRT_RETURN_IF_CUDA_ERROR(
      cudaMemcpyPeerAsync(copy->raw_data(), cuda_ordinal_, source.raw_data(),
                          other->cuda_ordinal(), source.bytes(), stream_));
  RETURN_IF_ERROR(Synchronize());
  return copy;
}

}  // namespace distrt::gpu
