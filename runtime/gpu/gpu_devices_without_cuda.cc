// CreateGpuDevices for binaries built without --config=cuda.
#include "runtime/gpu/gpu_devices.h"

namespace distrt::gpu {

absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const DeviceName&, absl::Span<const int>) {
  return absl::UnavailableError(
      "this binary was built without CUDA support (build with "
      "--config=cuda to use GPUs)");
}

}  // namespace distrt::gpu
