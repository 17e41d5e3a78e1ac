#include "runtime/models/model.h"

#include "absl/strings/str_cat.h"
#include "runtime/device/cpu_device.h"

namespace distrt {

absl::Status Model::Compute(const Batch& batch,
                            absl::Span<const VariableSlice> values,
                            bool with_gradients,
                            ModelStepResult* result) const {
  return ComputeOn(HostDevice(), batch, values, with_gradients,
                   /*dense_gradients=*/nullptr, result);
}

absl::Status MoveDenseGradientsTo(Device& device,
                                  const DenseGradientBuffer& buffer,
                                  absl::Span<const ModelVariable> variables,
                                  std::vector<VariableSlice>* gradients) {
  if (gradients->size() != variables.size() ||
      buffer.offsets.size() < variables.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("MoveDenseGradientsTo: ", gradients->size(),
                     " gradients and ", buffer.offsets.size(),
                     " buffer offsets for ", variables.size(), " variables"));
  }
  for (size_t i = 0; i < variables.size(); ++i) {
    if (variables[i].kind != ModelVariable::Kind::kDense) continue;
    std::vector<float>& grad = (*gradients)[i].dense;
    const int64_t elements =
        NumRows(variables[i].spec) * RowWidth(variables[i].spec);
    if (static_cast<int64_t>(grad.size()) != elements) {
      // The buffer holds exactly `elements` floats for it.
      return absl::InvalidArgumentError(
          absl::StrCat("the gradient of \"", variables[i].name(), "\" has ",
                       grad.size(), " values, the variable ", elements));
    }
    if (absl::Status s = device.allocator()->CopyFromHost(
            grad.data(), buffer.base + buffer.offsets[i],
            grad.size() * sizeof(float));
        !s.ok()) {
      return s;
    }
    grad.clear();
  }
  return absl::OkStatus();
}

int64_t ModelVariable::row_width() const {
  return kind == Kind::kHashEmbedding ? hash_spec.dim : RowWidth(spec);
}

}  // namespace distrt
