#ifndef DISTRT_RUNTIME_MODELS_DENSE_LAYERS_H_
#define DISTRT_RUNTIME_MODELS_DENSE_LAYERS_H_

// DenseLayers: a stack of fully connected layers with a ReLU after each but
// the last, the forward and backward passes of the MLP and of the deep part
// of wide & deep. It holds only the layer widths; the kernels and biases
// come with each call, so one object serves concurrent callers.

#include <Eigen/Dense>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "runtime/models/model.h"
#include "runtime/models/model_variables.h"

namespace distrt {

// Examples as rows; row-major like Batch::dense and the kernels.
using RowMajorMatrix =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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
      const VariableOptions& options) const;

  // `params`: the dense slices of Variables(), in that order, sizes already
  // checked. Sets activations->at(0) to `input` (examples by widths[0]) and
  // activations->at(l + 1) to layer l's output, ReLU'd but for the last.
  void Forward(absl::Span<const VariableSlice> params, RowMajorMatrix input,
               std::vector<RowMajorMatrix>* activations) const;

  // Given the activations of Forward and d_output (d loss / d last
  // activation), sets the layers' gradients (grads[2 l].dense and
  // grads[2 l + 1].dense, resized) and, when d_input is not null,
  // d loss / d input.
  void Backward(absl::Span<const VariableSlice> params,
                const std::vector<RowMajorMatrix>& activations,
                RowMajorMatrix d_output, absl::Span<VariableSlice> grads,
                RowMajorMatrix* d_input) const;

 private:
  std::vector<int64_t> widths_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_DENSE_LAYERS_H_
