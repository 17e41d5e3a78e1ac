#include "runtime/device/copy_into.h"

#include <cstring>

#include "runtime/util/status_macros.h"

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
  ASSIGN_OR_RETURN(Tensor near, device.CopyFrom(from));
  return to.allocator()->CopyWithin(near.raw_data(), to.raw_data(), to.bytes());
}

}  // namespace distrt
