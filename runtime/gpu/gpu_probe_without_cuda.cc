// ProbeGpus for binaries built without --config=cuda.
#include "runtime/gpu/gpu_probe.h"

namespace distrt::gpu {

GpuProbeResult ProbeGpus() {
  GpuProbeResult result;
  result.unavailable_reason =
      "this binary was built without CUDA support (build with "
      "`bazel build --config=cuda` to use GPUs)";
  return result;
}

}  // namespace distrt::gpu
