#ifndef DISTRT_RUNTIME_DEVICE_COPY_INTO_H_
#define DISTRT_RUNTIME_DEVICE_COPY_INTO_H_

// CopyInto: overwrites a tensor that lives on `device` with the bytes of
// another of the same size, wherever that one lives: a memcpy when both are
// in host memory, a copy within the device's memory when both are there,
// else the source is first brought to `device` (a peer copy between GPUs,
// or through the host).

#include "absl/status/status.h"
#include "runtime/device/device.h"
#include "runtime/tensor/tensor.h"

namespace distrt {

absl::Status CopyInto(Device& device, const Tensor& from, Tensor& to);

}  // namespace distrt

#endif  // DISTRT_RUNTIME_DEVICE_COPY_INTO_H_
