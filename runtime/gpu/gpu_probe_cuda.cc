// ProbeGpus for binaries built with --config=cuda.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "absl/strings/str_cat.h"
#include "runtime/gpu/gpu_probe.h"

namespace distrt::gpu {
namespace {

std::string VersionString(int version, int major_divisor, int minor_divisor) {
  return absl::StrCat(version / major_divisor, ".",
                      (version % major_divisor) / minor_divisor);
}

std::string LibraryVersions() {
  int runtime = 0, nccl = 0;
  std::string out;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) {
    absl::StrAppend(&out, "CUDA runtime ", VersionString(runtime, 1000, 10));
  }
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
    absl::StrAppend(&out, out.empty() ? "" : ", ", "NCCL ", nccl / 10000, ".",
                    (nccl % 10000) / 100, ".", nccl % 100);
  }
  return out;
}

}  // namespace

GpuProbeResult ProbeGpus() {
  GpuProbeResult result;
  result.library_versions = LibraryVersions();
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorInsufficientDriver) {
    result.unavailable_reason = absl::StrCat(
        "CUDA driver not found, or older than this CUDA runtime "
        "(cudaGetDeviceCount: ",
        cudaGetErrorString(error), ")");
    return result;
  }
  if (error == cudaErrorNoDevice || (error == cudaSuccess && count == 0)) {
    result.unavailable_reason =
        "no CUDA GPU is visible (check the driver and CUDA_VISIBLE_DEVICES)";
    return result;
  }
  if (error != cudaSuccess) {
    result.unavailable_reason = absl::StrCat(
        "CUDA is not usable (cudaGetDeviceCount: ", cudaGetErrorString(error),
        ")");
    return result;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp props;
    if (cudaGetDeviceProperties(&props, ordinal) != cudaSuccess) continue;
    result.gpus.push_back(GpuInfo{ordinal, props.name,
                                  static_cast<int64_t>(props.totalGlobalMem),
                                  props.major, props.minor});
  }
  if (result.gpus.empty()) {
    result.unavailable_reason = "no CUDA GPU could be queried";
  }
  return result;
}

}  // namespace distrt::gpu
