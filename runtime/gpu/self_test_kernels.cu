#include "runtime/gpu/self_test_kernels.h"

namespace distrt::gpu {
namespace {

__global__ void FillPatternKernel(float* data, int64_t n, float scale) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += stride) {
    data[i] = scale * static_cast<float>((i % 7) + 1);
  }
}

}  // namespace

cudaError_t LaunchFillPattern(float* data, int64_t n, float scale,
                              cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t wanted_blocks = (n + kThreads - 1) / kThreads;
  const int blocks =
      static_cast<int>(wanted_blocks < 4096 ? wanted_blocks : 4096);
  FillPatternKernel<<<blocks, kThreads, 0, stream>>>(data, n, scale);
  return cudaGetLastError();
}

}  // namespace distrt::gpu
