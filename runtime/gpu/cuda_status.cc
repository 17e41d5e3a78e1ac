#include "runtime/gpu/cuda_status.h"

#include "absl/strings/str_cat.h"

namespace distrt::gpu {
namespace {

absl::Status Failed(absl::StatusCode code, const char* call, const char* file,
                    int line, absl::string_view what) {
  return absl::Status(
      code, absl::StrCat(call, " failed at ", file, ":", line, ": ", what));
}

}  // namespace

absl::Status CudaStatus(cudaError_t result, const char* call, const char* file,
                        int line) {
  if (result == cudaSuccess) return absl::OkStatus();
  const absl::StatusCode code =
      result == cudaErrorMemoryAllocation ? absl::StatusCode::kResourceExhausted
      : (result == cudaErrorNoDevice || result == cudaErrorInsufficientDriver)
          ? absl::StatusCode::kUnavailable
          : absl::StatusCode::kInternal;
  return Failed(code, call, file, line,
                absl::StrCat(cudaGetErrorString(result), " (",
                             cudaGetErrorName(result), ")"));
}

absl::Status CublasStatus(cublasStatus_t result, const char* call,
                          const char* file, int line) {
  if (result == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return Failed(absl::StatusCode::kInternal, call, file, line,
                absl::StrCat(cublasGetStatusString(result), " (",
                             cublasGetStatusName(result), ")"));
}

absl::Status NcclStatus(ncclResult_t result, const char* call, const char* file,
                        int line) {
  if (result == ncclSuccess) return absl::OkStatus();
  return Failed(absl::StatusCode::kInternal, call, file, line,
                absl::StrCat(ncclGetErrorString(result), " (",
                             ncclGetLastError(nullptr), ")"));
}

}  // namespace distrt::gpu
