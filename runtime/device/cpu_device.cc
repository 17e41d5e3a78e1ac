#include "runtime/device/cpu_device.h"

#include "runtime/kernels/cpu_math.h"
#include "runtime/util/status_macros.h"

namespace distrt {
namespace {

DeviceName CpuDeviceName(const DeviceName& task, int id) {
  DeviceName name = task;
  name.type = "CPU";
  name.id = id;
  return name;
}

}  // namespace

CpuDevice::CpuDevice(const DeviceName& task, int id)
    : Device(CpuDeviceName(task, id)) {}

absl::StatusOr<Tensor> CpuDevice::CopyFrom(const Tensor& source) {
  if (source.is_null()) return Tensor();
  absl::StatusOr<Tensor> copy =
      Tensor::Create(source.dtype(), source.shape(), allocator());
  if (!copy.ok() || source.bytes() == 0) return copy;
  // Device memory (a GPU's) is read back by the allocator that owns it.
  RETURN_IF_ERROR(source.allocator()->CopyToHost(
      source.raw_data(), copy->raw_data(), source.bytes()));
  return copy;
}

DeviceMath& CpuDevice::math() { return *HostMath(); }

Device& HostDevice() {
  static CpuDevice* const device = new CpuDevice(DeviceName(), 0);
  return *device;
}

}  // namespace distrt
