#ifndef DISTRT_RUNTIME_DEVICE_DEVICE_H_
#define DISTRT_RUNTIME_DEVICE_DEVICE_H_

// Device: somewhere a replica's computation runs and its tensors live: CPUs
// (runtime/device/cpu_device.h) and CUDA GPUs (runtime/gpu/gpu_device.h,
// with a stream and device memory). Strategies hold a list of devices and
// run one replica on each; models compute through the device's math().

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device/device_name.h"
#include "runtime/kernels/device_math.h"
#include "runtime/tensor/allocator.h"
#include "runtime/tensor/tensor.h"

namespace distrt {

class Device {
 public:
  virtual ~Device() = default;

  // Fully specified, e.g. /job:worker/replica:0/task:1/device:CPU:2.
  const DeviceName& name() const { return name_; }
  std::string type() const { return *name_.type; }
  int id() const { return *name_.id; }

  // Where tensors on this device get their memory.
  virtual Allocator* allocator() = 0;
  // Arithmetic on tensors in this device's memory.
  virtual DeviceMath& math() = 0;
  // A copy of `source` (on any device) in this device's memory.
  virtual absl::StatusOr<Tensor> CopyFrom(const Tensor& source) = 0;
  // Makes the calling thread compute on this device: cudaSetDevice for a
  // GPU (CUDA remembers one current device per thread), nothing for CPUs.
  // A strategy calls it on each replica's thread before the replica runs.
  virtual absl::Status MakeCurrent() { return absl::OkStatus(); }
  // Returns when every operation queued on the device so far has finished
  // (nothing to wait for on CPUs, which run synchronously; a GPU's stream).
  // A failed kernel on a GPU shows up here at the latest.
  virtual absl::Status Synchronize() = 0;

 protected:
  explicit Device(DeviceName name) : name_(std::move(name)) {}

 private:
  const DeviceName name_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DEVICE_DEVICE_H_
