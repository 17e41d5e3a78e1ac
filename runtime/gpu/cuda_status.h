#ifndef DISTRT_RUNTIME_GPU_CUDA_STATUS_H_
#define DISTRT_RUNTIME_GPU_CUDA_STATUS_H_

// Turns the result of a CUDA runtime, cuBLAS or NCCL call into an
// absl::Status that names the call, its error and where it was made:
//
//   DISTRT_RETURN_IF_CUDA_ERROR(cudaMalloc(&ptr, bytes));
//   -> INTERNAL: cudaMalloc(&ptr, bytes) failed at runtime/gpu/x.cc:12:
//      out of memory (cudaErrorMemoryAllocation)
//
// Only for code built with --config=cuda.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "absl/status/status.h"

namespace distrt::gpu {

absl::Status CudaStatus(cudaError_t result, const char* call, const char* file,
                        int line);
absl::Status CublasStatus(cublasStatus_t result, const char* call,
                          const char* file, int line);
absl::Status NcclStatus(ncclResult_t result, const char* call, const char* file,
                        int line);

}  // namespace distrt::gpu

#define DISTRT_RETURN_IF_GPU_ERROR_(to_status, expr)                 \
  do {                                                               \
    ::absl::Status distrt_gpu_status_ =                              \
        ::distrt::gpu::to_status((expr), #expr, __FILE__, __LINE__); \
    if (!distrt_gpu_status_.ok()) return distrt_gpu_status_;         \
  } while (false)

#define DISTRT_RETURN_IF_CUDA_ERROR(expr) \
  DISTRT_RETURN_IF_GPU_ERROR_(CudaStatus, expr)
#define DISTRT_RETURN_IF_CUBLAS_ERROR(expr) \
  DISTRT_RETURN_IF_GPU_ERROR_(CublasStatus, expr)
#define DISTRT_RETURN_IF_NCCL_ERROR(expr) \
  DISTRT_RETURN_IF_GPU_ERROR_(NcclStatus, expr)

#endif  // DISTRT_RUNTIME_GPU_CUDA_STATUS_H_
