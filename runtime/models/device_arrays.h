#ifndef DISTRT_RUNTIME_MODELS_DEVICE_ARRAYS_H_
#define DISTRT_RUNTIME_MODELS_DEVICE_ARRAYS_H_

// DeviceArrays: the arrays of one Model::ComputeOn call on a device. Host
// inputs (the batch, the variables' values) go up, scratch arrays
// (activations, logits, gradients) are made there, results come back down.
// On a device whose memory the host can read (CPUs) uploads are the host
// arrays themselves and downloads of them are free, so the CPU path copies
// nothing it did not copy before. Everything made lives as long as this
// object; on GPUs it comes from the device's caching allocator.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/device/device.h"
#include "runtime/tensor/tensor.h"

namespace distrt {

class DeviceArrays {
 public:
  explicit DeviceArrays(Device& device) : device_(device) {}

  Device& device() { return device_; }
  DeviceMath& math() { return device_.math(); }

  // `values` in device memory (the array itself when the host can read the
  // device's memory).
  absl::StatusOr<const float*> Upload(absl::Span<const float> values);
  absl::StatusOr<const int64_t*> Upload(absl::Span<const int64_t> values);
  absl::StatusOr<const int32_t*> Upload(absl::Span<const int32_t> values);

  // `values`, which the caller made for this call, in device memory: on the
  // host the vector itself, kept as long as this object.
  absl::StatusOr<const int32_t*> UploadOwned(std::vector<int32_t> values);

  // `n` floats in device memory, uninitialised or zero.
  absl::StatusOr<float*> Floats(int64_t n);
  absl::StatusOr<float*> Zeros(int64_t n);

  // The sum, in double, of `n` device floats (per-example losses); waits
  // for the device.
  absl::StatusOr<double> SumOnHost(const float* from, int64_t n);

  // Device floats at `from` into `to` (nothing to do when they are the same
  // host memory); waits for the device.
  absl::Status Download(const float* from, absl::Span<float> to);

 private:
  bool host_memory() const { return device_.allocator()->host_accessible(); }
  absl::StatusOr<void*> UploadBytes(const void* data, DType dtype,
                                    int64_t count);

  Device& device_;
  std::vector<Tensor> arrays_;
  std::vector<std::vector<int32_t>> owned_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_DEVICE_ARRAYS_H_
