#ifndef DISTRT_RUNTIME_MODELS_DENSE_LAYERS_H_
#define DISTRT_RUNTIME_MODELS_DENSE_LAYERS_H_

// DenseLayers: a stack of fully connected layers with a ReLU after each but
// the last, the forward and backward passes of the MLP and of the deep part
// of wide & deep, through a device's math (GEMMs by Eigen on CPUs, cuBLAS on
// GPUs). It holds only the layer widths; the kernels and biases come with
// each call, so one object serves concurrent callers.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "runtime/models/dense_gradient_output.h"
#include "runtime/models/device_arrays.h"
#include "runtime/models/model.h"
#include "runtime/models/model_variables.h"

namespace distrt {

class DenseLayers {
 public:
  // widths: the input width, then each layer's output width (at least one
  // layer); all >= 1. Layer l has kernel [widths[l], widths[l + 1]]
  // (row-major: input unit by output unit) and bias [widths[l + 1]].
  explicit DenseLayers(std::vector<int64_t> widths)
      : widths_(std::move(widths)) {}

  int num_layers() const { return static_cast<int>(widths_.size()) - 1; }

  // The layers' variables, kernel then bias per layer: "<prefix>/<name of
  // layer l>/kernel" and ".../bias", where layer_names has one name per
  // layer. Kernels start Glorot-uniform, biases at zero (seeds are left to
  // the model's SeedInitializers).
  std::vector<ModelVariable> Variables(
      const std::string& prefix, absl::Span<const std::string> layer_names,
      const ModelVariableOptions& options) const;

  // The layers' values (the dense slices of Variables(), in that order) in
  // device memory, for Forward and Backward.
  absl::StatusOr<std::vector<const float*>> UploadParams(
      DeviceArrays& arrays, absl::Span<const VariableSlice> values) const;

  // `params`: device pointers to the values of Variables(), in that order
  // (sizes already checked). `input`: n examples by widths[0] on the device.
  // Sets activations->at(0) to input and activations->at(l + 1) to layer
  // l's output (n by widths[l + 1]), ReLU'd but for the last.
  absl::Status Forward(DeviceArrays& arrays,
                       absl::Span<const float* const> params, int64_t n,
                       const float* input,
                       std::vector<const float*>* activations) const;

  // Given Forward's activations and d_output (d loss / d last activation, n
  // by the last width), writes the layers' gradients through
  // `gradients` as variables first_variable + 2 l (kernel) and + 2 l + 1
  // (bias) and, when d_input is not null, sets it to d loss / d input.
  absl::Status Backward(DeviceArrays& arrays,
                        absl::Span<const float* const> params, int64_t n,
                        const std::vector<const float*>& activations,
                        const float* d_output, DenseGradientOutput& gradients,
                        int first_variable, float** d_input) const;

 private:
  std::vector<int64_t> widths_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_DENSE_LAYERS_H_
