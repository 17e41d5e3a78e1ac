#include "runtime/device/cpu_device.h"

#include <cstring>

#include "absl/strings/str_cat.h"

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
  if (source.allocator() != CpuAllocator()) {
    // Only host memory exists until the GPU issue adds device memory, which
    // will copy to the host itself.
    return absl::UnimplementedError(
        absl::StrCat("copying a tensor from ", source.allocator()->name(),
                     " memory to ", name().ToString(), " is not supported"));
  }
  absl::StatusOr<Tensor> copy =
      Tensor::Create(source.dtype(), source.shape(), allocator());
  if (copy.ok() && source.bytes() > 0) {
    std::memcpy(copy->raw_data(), source.raw_data(), source.bytes());
  }
  return copy;
}

}  // namespace distrt
