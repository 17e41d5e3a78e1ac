#ifndef DISTRT_RUNTIME_MODELS_MLP_MODEL_H_
#define DISTRT_RUNTIME_MODELS_MLP_MODEL_H_

// MlpModel ("mlp"): a softmax classifier on dense features through fully
// connected hidden layers with ReLU. Labels are class ids 0..num_classes-1
// (as floats); loss = softmax cross-entropy; predictions = the class
// probabilities.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/input/batch.h"
#include "runtime/models/dense_layers.h"
#include "runtime/models/model.h"
#include "runtime/models/model_variables.h"

namespace distrt {

class MlpModel final : public Model {
 public:
  // Per hidden layer i, "mlp/dense_<i>/kernel" [in, hidden_units[i]] and
  // "mlp/dense_<i>/bias"; then "mlp/logits/kernel" [in, num_classes] and
  // "mlp/logits/bias". All dense; kernels Glorot-uniform, biases zero.
  // num_features >= 1, num_classes >= 2, hidden units >= 1 (CreateModel
  // checks).
  MlpModel(int64_t num_features, int num_classes,
           const std::vector<int>& hidden_units,
           const ModelVariableOptions& options);

  std::string name() const override { return "mlp"; }
  const std::vector<ModelVariable>& variables() const override {
    return variables_;
  }
  ModelOutput output() const override { return ModelOutput::kMulticlass; }
  int outputs_per_example() const override { return num_classes_; }

  // No sparse variables: one empty list per variable. INVALID_ARGUMENT when
  // the batch lacks the model's num_features dense features.
  absl::Status SparseIds(const Batch& batch,
                         std::vector<std::vector<int64_t>>* ids) const override;
  // INVALID_ARGUMENT also naming the example for a label that is not a class
  // id.
  absl::Status ComputeOn(Device& device, const Batch& batch,
                         absl::Span<const VariableSlice> values,
                         bool with_gradients,
                         const DenseGradientBuffer* dense_gradients,
                         ModelStepResult* result) const override;

 private:
  const int64_t num_features_;
  const int num_classes_;
  const DenseLayers layers_;
  std::vector<ModelVariable> variables_;
};

}  // namespace distrt

#endif  // DISTRT_RUNTIME_MODELS_MLP_MODEL_H_
