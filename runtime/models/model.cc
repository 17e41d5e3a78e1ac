#include "runtime/models/model.h"

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
  for (size_t i = 0; i < variables.size() && i < gradients->size(); ++i) {
    if (variables[i].kind != ModelVariable::Kind::kDense) continue;
    std::vector<float>& grad = (*gradients)[i].dense;
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
