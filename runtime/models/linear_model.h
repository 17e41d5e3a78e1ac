#ifndef DISTRT_RUNTIME_MODELS_LINEAR_MODEL_H_
#define DISTRT_RUNTIME_MODELS_LINEAR_MODEL_H_

// LinearModel ("linear"): least-squares linear regression on dense features.
// prediction = x . weights + bias; loss = (prediction - label)^2 per example.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/input/batch.h"
#include "runtime/models/model.h"
#include "runtime/models/model_variables.h"

namespace distrt {

class LinearModel final : public Model {
 public:
  // Variables "linear/weights" [num_features, 1] and "linear/bias" [1], both
  // dense and starting at zero. num_features >= 1 (CreateModel checks).
  LinearModel(int64_t num_features, const ModelVariableOptions& options);

  std::string name() const override { return "linear"; }
  const std::vector<ModelVariable>& variables() const override {
    return variables_;
  }
  ModelOutput output() const override { return ModelOutput::kRegression; }
  int outputs_per_example() const override { return 1; }

  // No sparse variables: one empty list per variable. INVALID_ARGUMENT when
  // the batch lacks the model's num_features dense features.
  absl::Status SparseIds(const Batch& batch,
                         std::vector<std::vector<int64_t>>* ids) const override;
  // INVALID_ARGUMENT also for a label that is not finite.
  absl::Status ComputeOn(Device& device, const Batch& batch,
                         absl::Span<const VariableSlice> values,
                         bool with_gradients,
                         const DenseGradientBuffer* dense_gradients,
                         ModelStepResult* result) const override;

 private:
  const int64_t num_features_;
  std::vector<ModelVariable> variables_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_LINEAR_MODEL_H_
