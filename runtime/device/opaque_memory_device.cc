#include "runtime/device/opaque_memory_device.h"

#include <cstdlib>
#include <cstring>

#include "runtime/kernels/cpu_math.h"

namespace distrt {
namespace {

DeviceName OpaqueName(int id) {
  DeviceName name;
  name.type = "OPAQUE";
  name.id = id;
  return name;
}

}  // namespace

OpaqueMemoryDevice::OpaqueMemoryDevice(int id) : Device(OpaqueName(id)) {}

DeviceMath& OpaqueMemoryDevice::math() { return *HostMath(); }

void* OpaqueMemoryDevice::Memory::Allocate(size_t bytes) {
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded);
  if (ptr != nullptr) in_use += bytes;
  return ptr;
}

void OpaqueMemoryDevice::Memory::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  std::free(ptr);
  in_use -= bytes;
}

absl::Status OpaqueMemoryDevice::Memory::CopyToHost(const void* from, void* to,
                                                    size_t bytes) {
  to_host += bytes;
  return Allocator::CopyToHost(from, to, bytes);
}

absl::Status OpaqueMemoryDevice::Memory::CopyFromHost(const void* from,
                                                      void* to, size_t bytes) {
  from_host += bytes;
  return Allocator::CopyFromHost(from, to, bytes);
}

absl::StatusOr<Tensor> OpaqueMemoryDevice::CopyFrom(const Tensor& source) {
  if (source.is_null()) return Tensor();
  absl::StatusOr<Tensor> copy =
      Tensor::Create(source.dtype(), source.shape(), allocator());
  if (!copy.ok() || source.bytes() == 0) return copy;
  // Host memory comes up; any other memory (another opaque device's, as a
  // peer copy) goes through the host.
  if (source.allocator()->host_accessible()) {
    if (absl::Status s = memory_.CopyFromHost(source.raw_data(),
                                              copy->raw_data(), source.bytes());
        !s.ok()) {
      return s;
    }
    return copy;
  }
  std::string staged(source.bytes(), '\0');
  if (absl::Status s = source.allocator()->CopyToHost(
          source.raw_data(), staged.data(), source.bytes());
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          memory_.CopyFromHost(staged.data(), copy->raw_data(), source.bytes());
      !s.ok()) {
    return s;
  }
  return copy;
}

}  // namespace distrt
