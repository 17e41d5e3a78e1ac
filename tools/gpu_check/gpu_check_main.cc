// gpu_check: is this machine's GPU stack usable for training?
//
// Lists the GPUs, then on each one fills a buffer with a kernel, reduces it
// with cuBLAS and compares with the host's answer, and finally all-reduces
// the buffers of all GPUs with NCCL and checks every element against the
// expected sum. Exit status: 0 all good, 1 a check failed, 2 no usable GPU.

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/gpu/cuda_status.h"
#include "runtime/gpu/gpu_probe.h"
#include "runtime/gpu/self_test_kernels.h"

namespace distrt::gpu {
namespace {

// Not a multiple of any block size, so that tails are exercised.
constexpr int64_t kElements = (int64_t{1} << 20) + 3;

struct GpuBuffer {
  int ordinal = 0;
  float* data = nullptr;
  cudaStream_t stream = nullptr;
};

absl::Status CheckOneGpu(GpuBuffer& buffer, float scale) {
  DISTRT_RETURN_IF_CUDA_ERROR(cudaSetDevice(buffer.ordinal));
  DISTRT_RETURN_IF_CUDA_ERROR(cudaStreamCreate(&buffer.stream));
  DISTRT_RETURN_IF_CUDA_ERROR(
      cudaMalloc(&buffer.data, kElements * sizeof(float)));
  DISTRT_RETURN_IF_CUDA_ERROR(
      LaunchFillPattern(buffer.data, kElements, scale, buffer.stream));

  cublasHandle_t handle;
  DISTRT_RETURN_IF_CUBLAS_ERROR(cublasCreate(&handle));
  std::unique_ptr<cublasContext, cublasStatus_t (*)(cublasHandle_t)> owner(
      handle, cublasDestroy);
  DISTRT_RETURN_IF_CUBLAS_ERROR(cublasSetStream(handle, buffer.stream));
  float device_sum = 0;
  DISTRT_RETURN_IF_CUBLAS_ERROR(
      cublasSasum(handle, kElements, buffer.data, 1, &device_sum));
  double host_sum = 0;
  for (int64_t i = 0; i < kElements; ++i) host_sum += PatternValue(i, scale);
  if (std::fabs(device_sum - host_sum) > 1e-4 * host_sum) {
    return absl::InternalError(absl::StrCat("GPU ", buffer.ordinal,
                                            ": cuBLAS sum ", device_sum,
                                            ", expected ", host_sum));
  }
  return absl::OkStatus();
}

// Buffer r holds (r + 1) * pattern; after the all-reduce every buffer holds
// n(n+1)/2 * pattern.
absl::Status CheckNcclAllReduce(std::vector<GpuBuffer>& buffers) {
  const int n = static_cast<int>(buffers.size());
  std::vector<int> ordinals;
  for (const GpuBuffer& b : buffers) ordinals.push_back(b.ordinal);
  std::vector<ncclComm_t> comms(n);
  DISTRT_RETURN_IF_NCCL_ERROR(
      ncclCommInitAll(comms.data(), n, ordinals.data()));
  absl::Status status = [&]() -> absl::Status {
    DISTRT_RETURN_IF_NCCL_ERROR(ncclGroupStart());
    for (int r = 0; r < n; ++r) {
      DISTRT_RETURN_IF_NCCL_ERROR(
          ncclAllReduce(buffers[r].data, buffers[r].data, kElements, ncclFloat,
                        ncclSum, comms[r], buffers[r].stream));
    }
    DISTRT_RETURN_IF_NCCL_ERROR(ncclGroupEnd());
    const float factor = n * (n + 1) / 2.0f;
    std::vector<float> host(kElements);
    for (const GpuBuffer& b : buffers) {
      DISTRT_RETURN_IF_CUDA_ERROR(cudaSetDevice(b.ordinal));
      DISTRT_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(b.stream));
      DISTRT_RETURN_IF_CUDA_ERROR(cudaMemcpy(host.data(), b.data,
                                             kElements * sizeof(float),
                                             cudaMemcpyDeviceToHost));
      for (int64_t i = 0; i < kElements; ++i) {
        const float expected = PatternValue(i, factor);
        if (std::fabs(host[i] - expected) > 1e-5f * expected) {
          return absl::InternalError(
              absl::StrCat("NCCL all-reduce on GPU ", b.ordinal, ": element ",
                           i, " is ", host[i], ", expected ", expected));
        }
      }
    }
    return absl::OkStatus();
  }();
  for (ncclComm_t comm : comms) ncclCommDestroy(comm);
  return status;
}

int Main() {
  const GpuProbeResult probe = ProbeGpus();
  std::printf("gpu_check: %s\n", probe.library_versions.c_str());
  if (probe.gpus.empty()) {
    std::fprintf(stderr, "gpu_check: no usable GPU: %s\n",
                 probe.unavailable_reason.c_str());
    return 2;
  }
  std::vector<GpuBuffer> buffers;
  for (const GpuInfo& gpu : probe.gpus) {
    std::printf("gpu_check: GPU %d: %s, %.1f GiB, compute capability %d.%d\n",
                gpu.ordinal, gpu.name.c_str(), gpu.memory_bytes / 1073741824.0,
                gpu.compute_capability_major, gpu.compute_capability_minor);
    buffers.push_back(GpuBuffer{gpu.ordinal});
  }
  absl::Status status = absl::OkStatus();
  for (size_t r = 0; r < buffers.size() && status.ok(); ++r) {
    status = CheckOneGpu(buffers[r], static_cast<float>(r + 1));
  }
  if (status.ok()) std::printf("gpu_check: kernel and cuBLAS: ok\n");
  if (status.ok()) status = CheckNcclAllReduce(buffers);
  if (status.ok()) {
    std::printf("gpu_check: NCCL all-reduce over %zu GPU(s): ok\n",
                buffers.size());
  }
  for (GpuBuffer& b : buffers) {
    cudaSetDevice(b.ordinal);
    if (b.data != nullptr) cudaFree(b.data);
    if (b.stream != nullptr) cudaStreamDestroy(b.stream);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "gpu_check: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace distrt::gpu

int main() { return distrt::gpu::Main(); }
