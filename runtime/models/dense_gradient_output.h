#ifndef DISTRT_RUNTIME_MODELS_DENSE_GRADIENT_OUTPUT_H_
#define DISTRT_RUNTIME_MODELS_DENSE_GRADIENT_OUTPUT_H_

// DenseGradientOutput: where a model's ComputeOn writes a dense variable's
// gradient. Into the caller's DenseGradientBuffer when there is one (device
// memory, all-reduced there), else into a scratch array that Finish
// downloads into result->gradients[i].dense.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/model.h"

namespace distrt {

class DenseGradientOutput {
 public:
  // `gradients`: the result's, already sized one per variable.
  DenseGradientOutput(DeviceArrays& arrays, const DenseGradientBuffer* buffer,
                      std::vector<VariableSlice>* gradients)
      : arrays_(arrays), buffer_(buffer), gradients_(gradients) {}

  // Device memory for `size` floats of variable `variable`'s gradient.
  absl::StatusOr<float*> For(int variable, int64_t size);
  // Downloads what did not go to the buffer; waits for the device.
  absl::Status Finish();

 private:
  struct Pending {
    int variable;
    const float* data;
  };
  DeviceArrays& arrays_;
  const DenseGradientBuffer* const buffer_;
  std::vector<VariableSlice>* const gradients_;
  std::vector<Pending> pending_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_DENSE_GRADIENT_OUTPUT_H_
