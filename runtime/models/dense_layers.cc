#include "runtime/models/dense_layers.h"

#include "absl/strings/str_cat.h"
#include "runtime/util/status_macros.h"

namespace distrt {
std::vector<ModelVariable> DenseLayers::Variables(
    const std::string& prefix, absl::Span<const std::string> layer_names,
    const ModelVariableOptions& options) const {
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

absl::StatusOr<std::vector<const float*>> DenseLayers::UploadParams(
    DeviceArrays& arrays, absl::Span<const VariableSlice> values) const {
  std::vector<const float*> params;
  for (int v = 0; v < 2 * num_layers(); ++v) {
    ASSIGN_OR_RETURN(const float* up, arrays.Upload(values[v].dense));
    params.push_back(up);
  }
  return params;
}

absl::Status DenseLayers::Forward(
    DeviceArrays& arrays, absl::Span<const float* const> params, int64_t n,
    const float* input, std::vector<const float*>* activations) const {
  DeviceMath& math = arrays.math();
  activations->assign(num_layers() + 1, nullptr);
  (*activations)[0] = input;
  for (int l = 0; l < num_layers(); ++l) {
    const int64_t in_width = widths_[l];
    const int64_t out_width = widths_[l + 1];
    ASSIGN_OR_RETURN(float* out, arrays.Floats(n * out_width));
    RETURN_IF_ERROR(math.Gemm(false, false, n, out_width, in_width, 1.0f,
                              (*activations)[l], params[2 * l], 0.0f, out));
    RETURN_IF_ERROR(math.AddBias(n, out_width, params[2 * l + 1], out));
    if (l + 1 < num_layers()) {
      RETURN_IF_ERROR(math.Relu(n * out_width, out));
    }
    (*activations)[l + 1] = out;
  }
  return absl::OkStatus();
}

absl::Status DenseLayers::Backward(
    DeviceArrays& arrays, absl::Span<const float* const> params, int64_t n,
    const std::vector<const float*>& activations, const float* d_output,
    DenseGradientOutput& gradients, int first_variable, float** d_input) const {
  DeviceMath& math = arrays.math();
  // `delta` is d loss / d (layer l's pre-activation output).
  const float* delta = d_output;
  for (int l = num_layers() - 1; l >= 0; --l) {
    const int64_t in_width = widths_[l];
    const int64_t out_width = widths_[l + 1];
    const float* in = activations[l];
    ASSIGN_OR_RETURN(float* d_kernel, gradients.For(first_variable + 2 * l,
                                                    in_width * out_width));
    ASSIGN_OR_RETURN(float* d_bias,
                     gradients.For(first_variable + 2 * l + 1, out_width));
    // An empty batch gives zero-depth products and sums: zeros.
    RETURN_IF_ERROR(math.Gemm(true, false, in_width, out_width, n, 1.0f, in,
                              delta, 0.0f, d_kernel));
    RETURN_IF_ERROR(math.ColumnSums(n, out_width, delta, d_bias));
    if (l == 0 && d_input == nullptr) break;
    ASSIGN_OR_RETURN(float* d_in, arrays.Floats(n * in_width));
    RETURN_IF_ERROR(math.Gemm(false, true, n, in_width, out_width, 1.0f, delta,
                              params[2 * l], 0.0f, d_in));
    if (l == 0) {
      *d_input = d_in;
      break;
    }
    // Through the ReLU that made `in`: it passed exactly the positive parts.
    RETURN_IF_ERROR(math.ReluGrad(n * in_width, in, d_in));
    delta = d_in;
  }
  return absl::OkStatus();
}

}  // namespace distrt
