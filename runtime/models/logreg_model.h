#ifndef DISTRT_RUNTIME_MODELS_LOGREG_MODEL_H_
#define DISTRT_RUNTIME_MODELS_LOGREG_MODEL_H_

// LogRegModel ("logreg"): logistic regression on sparse features, the
// classic large-scale click-through baseline. logit = sum over the example's
// features of value * weights[id] + bias; loss = binary cross-entropy of the
// label (0 or 1); prediction = sigmoid(logit).
//
// The weights are row-sparse: a step reads and updates only the rows of the
// ids its batch uses, so num_features can be far larger than a batch.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/input/batch.h"
#include "runtime/models/model.h"
#include "runtime/models/model_variables.h"

namespace distrt {

class LogRegModel final : public Model {
 public:
  // Variables "logreg/weights" [num_features, 1] (row-sparse, partitioned by
  // options.partition) and "logreg/bias" [1] (dense), both starting at zero.
  // num_features >= 1 (CreateModel checks).
  LogRegModel(int64_t num_features, const ModelVariableOptions& options);

  std::string name() const override { return "logreg"; }
  const std::vector<ModelVariable>& variables() const override {
    return variables_;
  }
  ModelOutput output() const override { return ModelOutput::kBinary; }
  int outputs_per_example() const override { return 1; }

  // The weights' ids: the batch's distinct feature ids, sorted.
  // INVALID_ARGUMENT naming the example for an id outside [0, num_features).
  absl::Status SparseIds(const Batch& batch,
                         std::vector<std::vector<int64_t>>* ids) const override;
  // INVALID_ARGUMENT also naming the example for a label not 0 or 1, and for
  // weights lacking an id of the batch. The weights' gradient has the ids of
  // the weights given.
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

#endif  // DISTRT_RUNTIME_MODELS_LOGREG_MODEL_H_
