#ifndef DISTRT_RUNTIME_GPU_SELF_TEST_KERNELS_H_
#define DISTRT_RUNTIME_GPU_SELF_TEST_KERNELS_H_

// Kernels used by tools/gpu_check to see that a GPU computes what the host
// expects. Plain C++ interface so that callers need not be compiled by nvcc.

#include <cuda_runtime_api.h>

#include <cstdint>

namespace distrt::gpu {

// data[i] = scale * ((i % 7) + 1), on `stream`.
cudaError_t LaunchFillPattern(float* data, int64_t n, float scale,
                              cudaStream_t stream);

// The value LaunchFillPattern writes at `i`, computed on the host.
inline float PatternValue(int64_t i, float scale) {
  return scale * static_cast<float>((i % 7) + 1);
}

}  // namespace distrt::gpu

#endif  // DISTRT_RUNTIME_GPU_SELF_TEST_KERNELS_H_
