#ifndef DISTRT_RUNTIME_LOCAL_DEVICES_LOCAL_DEVICES_H_
#define DISTRT_RUNTIME_LOCAL_DEVICES_LOCAL_DEVICES_H_

// The devices of this process that replicas run on: the usable CUDA GPUs,
// otherwise N logical CPU devices, with a message saying which and why (e.g.
// "no usable GPU (CUDA driver not found)"), for the start-up log.
//
// GPUs are numbered as CUDA numbers them, that is after CUDA_VISIBLE_DEVICES
// (which CUDA applies itself): with CUDA_VISIBLE_DEVICES=2,3, GPU 0 is the
// machine's third.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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
  // GPUs were asked for explicitly: none being usable is an error, not a
  // fallback to CPUs.
  bool require_gpus = false;
  // With use_gpus, only these GPUs (CUDA ordinals); empty: every one.
  std::vector<int> gpu_ids;
};

// What a --devices flag asks for:
//   "auto"       every usable GPU, else CPU devices (saying why);
//   "cpu"        CPU devices;
//   "gpu"        every GPU, an error when there is none;
//   "gpu:0,2"    those GPUs, an error when one is missing.
// INVALID_ARGUMENT naming the text otherwise. Sets the fields of `options`
// other than task and num_cpu_devices.
absl::Status ParseDeviceSelection(absl::string_view text,
                                  LocalDevicesOptions* options);

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

// INVALID_ARGUMENT when num_cpu_devices is not in 1..256 or a GPU id is
// repeated; with require_gpus, FAILED_PRECONDITION saying why when there is
// no usable GPU or NOT_FOUND naming a requested GPU that is not there; the
// CUDA error when a GPU cannot be set up.
absl::StatusOr<LocalDevices> CreateLocalDevices(
    const LocalDevicesOptions& options);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_LOCAL_DEVICES_LOCAL_DEVICES_H_
