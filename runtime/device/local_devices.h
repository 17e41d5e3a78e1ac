#ifndef DISTRT_RUNTIME_DEVICE_LOCAL_DEVICES_H_
#define DISTRT_RUNTIME_DEVICE_LOCAL_DEVICES_H_

// The devices of this process that replicas run on. GPUs when there are
// usable ones (the GPU issue), otherwise N logical CPU devices, with a
// message saying which and why, for the start-up log.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/device/device.h"

namespace distrt {

struct LocalDevicesOptions {
  // The job / replica / task of this process, for device names; empty in
  // local mode.
  DeviceName task;
  // How many CPU devices when replicas run on CPUs (TF's logical CPU
  // devices): one replica each.
  int num_cpu_devices = 1;
  // Look for GPUs first.
  bool use_gpus = true;
};

struct LocalDevices {
  std::vector<std::unique_ptr<Device>> devices;
  // One line for the log, e.g. "no usable GPU (CUDA driver not found); 4
  // logical CPU devices".
  std::string description;

  // The devices, unowned, in order: what strategies take.
  std::vector<Device*> pointers() const {
    std::vector<Device*> result;
    for (const auto& device : devices) result.push_back(device.get());
    return result;
  }
};

// INVALID_ARGUMENT when num_cpu_devices is not in 1..256.
absl::StatusOr<LocalDevices> CreateLocalDevices(
    const LocalDevicesOptions& options);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DEVICE_LOCAL_DEVICES_H_
