#include "runtime/device/copy_into.h"

#include <cstring>

namespace distrt {

absl::Status CopyInto(Device& device, const Tensor& from, Tensor& to) {
  if (to.bytes() == 0) return absl::OkStatus();
  if (from.allocator()->host_accessible() &&
      to.allocator()->host_accessible()) {
    std::memcpy(to.raw_data(), from.raw_data(), to.bytes());
    return absl::OkStatus();
  }
  if (from.allocator() == to.allocator()) {
    return to.allocator()->CopyWithin(from.raw_data(), to.raw_data(),
                                      to.bytes());
  }
  absl::StatusOr<Tensor> near = device.CopyFrom(from);
  if (!near.ok()) return near.status();
  return to.allocator()->CopyWithin(near->raw_data(), to.raw_data(),
                                    to.bytes());
}

}  // namespace distrt
