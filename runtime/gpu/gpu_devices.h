#ifndef DISTRT_RUNTIME_GPU_GPU_DEVICES_H_
#define DISTRT_RUNTIME_GPU_GPU_DEVICES_H_

// CreateGpuDevices: GpuDevices for CUDA GPUs, behind an interface that
// needs no CUDA, so that the device list can offer GPUs in both builds.
// Without --config=cuda it fails with UNAVAILABLE, saying so.

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/device/device.h"

namespace distrt::gpu {

// One device per CUDA ordinal, named /device:GPU:<i> for the i-th of
// `ordinals`.
absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const DeviceName& task, absl::Span<const int> ordinals);

}  // namespace distrt::gpu

#endif  // DISTRT_RUNTIME_GPU_GPU_DEVICES_H_
