// CreateGpuDevices for binaries built with --config=cuda.
#include "runtime/gpu/gpu_device.h"
#include "runtime/gpu/gpu_devices.h"
#include "runtime/util/status_macros.h"

namespace distrt::gpu {

absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const DeviceName& task, absl::Span<const int> ordinals) {
  std::vector<std::unique_ptr<Device>> devices;
  for (size_t i = 0; i < ordinals.size(); ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<GpuDevice> device,
                     GpuDevice::Create(task, static_cast<int>(i), ordinals[i]));
    devices.push_back(std::move(device));
  }
  return devices;
}

}  // namespace distrt::gpu
