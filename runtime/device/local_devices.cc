#include "runtime/device/local_devices.h"

#include "absl/strings/str_cat.h"
#include "runtime/device/cpu_device.h"
#include "runtime/gpu/gpu_probe.h"

namespace distrt {

absl::StatusOr<LocalDevices> CreateLocalDevices(
    const LocalDevicesOptions& options) {
  constexpr int kMaxCpuDevices = 256;
  if (options.num_cpu_devices < 1 || options.num_cpu_devices > kMaxCpuDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of CPU devices must be in 1..", kMaxCpuDevices,
                     ", not ", options.num_cpu_devices));
  }
  std::string why_cpu = "GPUs not requested";
  if (options.use_gpus) {
    gpu::GpuProbeResult probe = gpu::ProbeGpus();
    why_cpu =
        probe.gpus.empty()
            ? absl::StrCat("no usable GPU (", probe.unavailable_reason, ")")
            : absl::StrCat(probe.gpus.size(),
                           " GPU(s) found, but GPU devices are not "
                           "implemented yet");
  }
  LocalDevices local;
  for (int id = 0; id < options.num_cpu_devices; ++id) {
    local.devices.push_back(std::make_unique<CpuDevice>(options.task, id));
  }
  local.description = absl::StrCat(
      why_cpu, "; ", options.num_cpu_devices,
      options.num_cpu_devices == 1 ? " CPU device" : " logical CPU devices");
  return local;
}

}  // namespace distrt
