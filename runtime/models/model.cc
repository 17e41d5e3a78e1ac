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

int64_t ModelVariable::row_width() const {
  return kind == Kind::kHashEmbedding ? hash_spec.dim : RowWidth(spec);
}

}  // namespace distrt
