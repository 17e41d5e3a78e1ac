#ifndef DISTRT_RUNTIME_DEVICE_CPU_DEVICE_H_
#define DISTRT_RUNTIME_DEVICE_CPU_DEVICE_H_

// CpuDevice: host memory and the calling thread. Several CPU devices in one
// process are "logical" devices (TensorFlow's virtual CPU devices): they
// share the host's memory and cores, and let a machine without GPUs run N
// replicas, so every strategy is testable anywhere.

#include <memory>

#include "runtime/device/device.h"

namespace distrt {

class CpuDevice final : public Device {
 public:
  // `task` gives the job / replica / task parts of the name; the device is
  // /device:CPU:<id> of it.
  CpuDevice(const DeviceName& task, int id);

  Allocator* allocator() override { return CpuAllocator(); }
  DeviceMath& math() override;
  absl::StatusOr<Tensor> CopyFrom(const Tensor& source) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }
};

// A CPU device for computing on the host outside any strategy (a model's
// own Compute), named /device:CPU:0.
Device& HostDevice();

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DEVICE_CPU_DEVICE_H_
