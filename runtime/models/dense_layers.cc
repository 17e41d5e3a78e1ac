#include "runtime/models/dense_layers.h"

#include "absl/strings/str_cat.h"

namespace distrt {
namespace {

using ConstMatrixMap = Eigen::Map<const RowMajorMatrix>;
using ConstRowVectorMap = Eigen::Map<const Eigen::RowVectorXf>;
using MatrixMap = Eigen::Map<RowMajorMatrix>;
using RowVectorMap = Eigen::Map<Eigen::RowVectorXf>;

}  // namespace

std::vector<ModelVariable> DenseLayers::Variables(
    const std::string& prefix, absl::Span<const std::string> layer_names,
    const VariableOptions& options) const {
  std::vector<ModelVariable> variables;
  for (int l = 0; l < num_layers(); ++l) {
    const std::string layer = absl::StrCat(prefix, "/", layer_names[l]);
    variables.push_back(DenseVariable(
        absl::StrCat(layer, "/kernel"), {widths_[l], widths_[l + 1]},
        GlorotUniformInitializer(widths_[l], widths_[l + 1]), options));
    variables.push_back(DenseVariable(absl::StrCat(layer, "/bias"),
                                      {widths_[l + 1]}, ZerosInitializer(),
                                      options));
  }
  return variables;
}

void DenseLayers::Forward(absl::Span<const VariableSlice> params,
                          RowMajorMatrix input,
                          std::vector<RowMajorMatrix>* activations) const {
  activations->resize(num_layers() + 1);
  (*activations)[0] = std::move(input);
  for (int l = 0; l < num_layers(); ++l) {
    const ConstMatrixMap kernel(params[2 * l].dense.data(), widths_[l],
                                widths_[l + 1]);
    const ConstRowVectorMap bias(params[2 * l + 1].dense.data(),
                                 widths_[l + 1]);
    RowMajorMatrix& out = (*activations)[l + 1];
    out.noalias() = (*activations)[l] * kernel;
    out.rowwise() += bias;
    if (l + 1 < num_layers()) out = out.cwiseMax(0.0f);
  }
}

void DenseLayers::Backward(absl::Span<const VariableSlice> params,
                           const std::vector<RowMajorMatrix>& activations,
                           RowMajorMatrix d_output,
                           absl::Span<VariableSlice> grads,
                           RowMajorMatrix* d_input) const {
  // `delta` is d loss / d (layer l's pre-activation output).
  RowMajorMatrix delta = std::move(d_output);
  for (int l = num_layers() - 1; l >= 0; --l) {
    const RowMajorMatrix& in = activations[l];
    grads[2 * l].dense.resize(widths_[l] * widths_[l + 1]);
    grads[2 * l + 1].dense.resize(widths_[l + 1]);
    MatrixMap d_kernel(grads[2 * l].dense.data(), widths_[l], widths_[l + 1]);
    RowVectorMap d_bias(grads[2 * l + 1].dense.data(), widths_[l + 1]);
    // An empty batch gives zero-depth products and sums: zeros.
    d_kernel.noalias() = in.transpose() * delta;
    d_bias = delta.colwise().sum();
    if (l == 0 && d_input == nullptr) break;
    const ConstMatrixMap kernel(params[2 * l].dense.data(), widths_[l],
                                widths_[l + 1]);
    RowMajorMatrix d_in = delta * kernel.transpose();
    if (l == 0) {
      *d_input = std::move(d_in);
      break;
    }
    // Through the ReLU that made `in`: it passed exactly the positive parts.
    delta = d_in.cwiseProduct((in.array() > 0.0f).cast<float>().matrix());
  }
}

}  // namespace distrt
