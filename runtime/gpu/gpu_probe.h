#ifndef DISTRT_RUNTIME_GPU_GPU_PROBE_H_
#define DISTRT_RUNTIME_GPU_GPU_PROBE_H_

// ProbeGpus: which CUDA GPUs this process can use, or why it can use none.
// Built without --config=cuda it always reports none, and says so; on a
// machine without a GPU or driver it reports the CUDA runtime's reason. The
// runtime uses the reason to say once why it falls back to CPU devices.

#include <cstdint>
#include <string>
#include <vector>

namespace distrt::gpu {

struct GpuInfo {
  int ordinal = 0;  // as CUDA numbers it (after CUDA_VISIBLE_DEVICES)
  std::string name;
  int64_t memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

struct GpuProbeResult {
  std::vector<GpuInfo> gpus;
  // Empty when `gpus` is not; otherwise one sentence for the user, e.g.
  // "CUDA driver not found (cudaGetDeviceCount: ...)".
  std::string unavailable_reason;
  // Library versions, e.g. "CUDA runtime 13.0, NCCL 2.27.7"; empty without
  // CUDA.
  std::string library_versions;
};

GpuProbeResult ProbeGpus();

}  // namespace distrt::gpu

#endif  // DISTRT_RUNTIME_GPU_GPU_PROBE_H_
